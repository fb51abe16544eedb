// Package registry is the one explicit list of provider adapters. It drives
// `picker providers`, `picker refresh --provider`, the daemon's jobs, the config's
// [providers.*] sections (package config decodes each into the descriptor's Config) and
// the test that config.example.toml documents every option. Adding an adapter means
// adding it here, and nowhere else (for an SDK adapter, also to cmd/picker-fetch's
// list). Only cmd/picker and config import it.
//
// aws and gcp are listed through their light packages (awsconf, gcpconf: config,
// options, checks) and fetch in the picker-fetch program (providers/fetchproc), so the
// picker binary links no cloud SDK and no command pays for its initialisation.
package registry

import (
	"slices"

	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/aws/awsconf"
	"github.com/pickergpu/picker/providers/azure"
	"github.com/pickergpu/picker/providers/cudo"
	"github.com/pickergpu/picker/providers/digitalocean"
	"github.com/pickergpu/picker/providers/fetchproc"
	"github.com/pickergpu/picker/providers/fluidstack"
	"github.com/pickergpu/picker/providers/gcp/gcpconf"
	"github.com/pickergpu/picker/providers/hyperstack"
	"github.com/pickergpu/picker/providers/lambda"
	"github.com/pickergpu/picker/providers/oracle"
	"github.com/pickergpu/picker/providers/primeintellect"
	"github.com/pickergpu/picker/providers/runpod"
	"github.com/pickergpu/picker/providers/shadeform"
	"github.com/pickergpu/picker/providers/static"
	"github.com/pickergpu/picker/providers/tensordock"
	"github.com/pickergpu/picker/providers/vast"
	"github.com/pickergpu/picker/providers/verda"
)

// All returns every adapter's descriptor, in the order `picker providers` lists them.
func All() []providers.Descriptor {
	return []providers.Descriptor{
		awsconf.Descriptor(fetchproc.Constructor(awsconf.Name, awsconf.Config.Validate)),
		gcpconf.Descriptor(fetchproc.Constructor(gcpconf.Name, gcpconf.Config.Validate)),
		azure.Descriptor,
		lambda.Descriptor,
		runpod.Descriptor,
		vast.Descriptor,
		oracle.Descriptor,
		tensordock.Descriptor,
		verda.Descriptor,
		hyperstack.Descriptor,
		digitalocean.Descriptor,
		cudo.Descriptor,
		fluidstack.Descriptor,
		shadeform.Descriptor,
		primeintellect.Descriptor,
		static.Descriptor,
	}
}

// Lookup finds a descriptor by name.
func Lookup(name string) (providers.Descriptor, bool) {
	i := slices.IndexFunc(All(), func(d providers.Descriptor) bool { return d.Name == name })
	if i < 0 {
		return providers.Descriptor{}, false
	}
	return All()[i], true
}

// Names lists the adapter names.
func Names() []string {
	var out []string
	for _, d := range All() {
		out = append(out, d.Name)
	}
	return out
}

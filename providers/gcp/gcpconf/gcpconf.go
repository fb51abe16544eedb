// Package gcpconf is the light half of the gcp adapter: its [providers.gcp] config
// section, options, checks and registry metadata, without the Google Cloud client
// libraries (whose compute protobuf registry alone cost every picker command ~5 ms of
// package initialisation, issue 17). The picker binary links only this (its registry
// entry runs the fetch in picker-fetch, see providers/fetchproc); package gcp, the SDK
// adapter that picker-fetch links, imports it.
package gcpconf

import (
	"strings"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// Name is the provider name used in offers and config.
const Name = "gcp"

// DefaultAPIKeyEnv names the environment variable holding the Cloud Billing API key
// when api_key_env is not set.
const DefaultAPIKeyEnv = "PICKER_GCP_API_KEY"

// Config is the [providers.gcp] section.
type Config struct {
	providers.Common
	// Project is the project whose machine and accelerator type lists are read.
	Project string `toml:"project"`
	// APIKeyEnv names the environment variable that holds a Cloud Billing API key.
	APIKeyEnv string `toml:"api_key_env"`
}

// Validate reports a section the adapter cannot use, as an Invalid error naming the key
// as its Param (so picker points at the key's line in the config), before any process
// is started or call made: no project, an endpoint that is not an http(s) URL.
func (c Config) Validate() error {
	if strings.TrimSpace(c.Project) == "" {
		return pricing.ParamErrorf(pricing.Invalid, "project", "gcp: project is required (the project whose machine types are listed)")
	}
	if c.Endpoint != "" && !strings.HasPrefix(c.Endpoint, "http://") && !strings.HasPrefix(c.Endpoint, "https://") {
		return pricing.ParamErrorf(pricing.Invalid, "endpoint", "gcp: endpoint %q: want an http:// or https:// URL", c.Endpoint)
	}
	return nil
}

// Descriptor presents the adapter with newProvider as its constructor: the registry's
// runs picker-fetch, picker-fetch's builds the SDK adapter.
func Descriptor(newProvider func(cfg any) (providers.Provider, error)) providers.Descriptor {
	return providers.Descriptor{
		Name:        Name,
		Description: "Google Compute Engine GPU machines (a2, a3, a4, g2, g4, n1 + T4/V100/P100/P4): prices composed from Cloud Billing Catalog SKUs",
		Options: []providers.Option{
			{Key: "project", Help: "Google Cloud project used to list machine and accelerator types (required)"},
			{Key: "api_key_env", Help: "environment variable holding a Cloud Billing API key; when it is empty, Application Default Credentials are used", Default: DefaultAPIKeyEnv},
		},
		Needs:  providers.Needs{Kind: providers.NeedsAccount, Where: "Application Default Credentials, a project"},
		Config: Config{},
		New:    newProvider,
	}
}

package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pickergpu/picker/buildinfo"
	"github.com/pickergpu/picker/providers/fetchproc"
	"github.com/pickergpu/picker/providers/registry"
)

// TestAdaptersMatchRegistry: each SDK adapter picker-fetch runs is listed in picker's
// registry under its name, with the same Config type (the request's JSON decodes into
// what picker encoded), description and options, and builds the SDK provider itself,
// never another picker-fetch run.
func TestAdaptersMatchRegistry(t *testing.T) {
	for _, d := range adapters {
		r, ok := registry.Lookup(d.Name)
		if !ok {
			t.Errorf("%s: not in picker's registry", d.Name)
			continue
		}
		if reflect.TypeOf(r.Config) != reflect.TypeOf(d.Config) || r.Description != d.Description || !reflect.DeepEqual(r.Options, d.Options) {
			t.Errorf("%s: registry has %T %q %v; picker-fetch %T %q %v", d.Name, r.Config, r.Description, r.Options, d.Config, d.Description, d.Options)
		}
		// A zero Config may be refused (gcp wants a project): then only the types count.
		if p, err := r.New(r.Config); err == nil {
			if _, isChild := p.(*fetchproc.Provider); !isChild {
				t.Errorf("%s: the registry's provider is %T; want picker-fetch's (*fetchproc.Provider)", d.Name, p)
			}
		}
		if p, err := d.New(d.Config); err == nil {
			if _, isChild := p.(*fetchproc.Provider); isChild {
				t.Errorf("%s: picker-fetch's adapter runs picker-fetch again", d.Name)
			}
		}
	}
}

// TestVersion: --version prints the stamped build's line; other arguments are the
// fetch's own.
func TestVersion(t *testing.T) {
	var b strings.Builder
	info := buildinfo.From("v1.2.3", "0123456789abcdef", "2026-12-01T10:00:00Z", nil)
	if !printVersion([]string{"--version"}, &b, info) {
		t.Fatal("--version not answered")
	}
	if got, want := b.String(), "picker-fetch v1.2.3 (0123456789ab, 2026-12-01T10:00:00Z) "+info.Go+"\n"; got != want {
		t.Errorf("--version = %q, want %q", got, want)
	}
	for _, args := range [][]string{nil, {"aws"}, {"--version", "aws"}} {
		if printVersion(args, &b, info) {
			t.Errorf("%q taken for --version", args)
		}
	}
}

package main

import (
	"reflect"
	"testing"

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

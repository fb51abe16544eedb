package gcp

import (
	"slices"
	"testing"

	"github.com/pickergpu/picker/providers/providertest"
)

// A fetch reports its three lists done in order, a page per answer the server gave for
// each, and the offers composed from them at the end.
func TestProgressListsAndPages(t *testing.T) {
	fake := newFakeGoogle(t)
	p := newTestProvider(t, fake.serve(t), nil)
	lists := []struct{ name, path string }{{listMachineTypes, machinesPath}, {listAcceleratorTypes, accelsPath}, {listSKUs, skusPath}}
	_, log := providertest.FetchProgress(t, p, "lists", len(lists))
	var want []string
	for _, l := range lists {
		want = append(want, l.name)
	}
	if done := log.DoneParts(); !slices.Equal(done, want) {
		t.Errorf("lists done %v; want %v", done, want)
	}
	pages := log.Pages()
	for _, l := range lists {
		if got, served := pages[l.name], fake.count(l.path); got != served {
			t.Errorf("%s: %d pages reported; the server answered %d", l.name, got, served)
		}
	}
}

package aws

import (
	"slices"
	"testing"

	"github.com/pickergpu/picker/providers/providertest"
)

// A fetch reports each region once as it completes and a page per GetProducts answer the
// fake server gave, with the offers found so far.
func TestProgressRegionsAndPages(t *testing.T) {
	fake := newFakeAWS(t)
	p := newTestProvider(t, fake.serve(t))
	_, log := providertest.FetchProgress(t, p, "regions", len(p.Regions()))
	done := log.DoneParts()
	slices.Sort(done)
	if !slices.Equal(done, p.Regions()) {
		t.Errorf("regions reported done %v; want each of %v once", done, p.Regions())
	}
	pages := log.Pages()
	for _, r := range p.Regions() {
		if got, want := pages[r], fake.count("GetProducts", r); got != want {
			t.Errorf("%s: %d pages reported; the server answered %d GetProducts calls", r, got, want)
		}
	}
}

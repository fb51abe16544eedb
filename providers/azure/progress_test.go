package azure

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pickergpu/picker/providers/providertest"
)

// A fetch reports each region once as it completes and a page per answer the server
// gave for it, with the offers found so far.
func TestProgressRegionsAndPages(t *testing.T) {
	for _, regions := range [][]string{{"eastus"}, {"westeurope", "eastus"}} {
		t.Run(strings.Join(regions, ","), func(t *testing.T) {
			rs := &retailServer{}
			srv := newServer(t, rs)
			p := newProvider(t, srv, srv.URL, regions, nil)
			_, log := providertest.FetchProgress(t, p, "regions", len(regions))
			done := log.DoneParts()
			slices.Sort(done)
			if !slices.Equal(done, p.Regions()) {
				t.Errorf("regions reported done %v; want each of %v once", done, p.Regions())
			}
			served := map[string]int{}
			rs.mu.Lock()
			for _, l := range rs.log {
				region, _, _ := strings.Cut(l, "/")
				served[region]++
			}
			rs.mu.Unlock()
			if pages := log.Pages(); !maps.Equal(pages, served) {
				t.Errorf("pages reported %v; the server answered %v", pages, served)
			}
		})
	}
}

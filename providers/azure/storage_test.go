package azure

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/providertest"
)

// TestFetchReadsManagedDisks: asked for market data, the fetch asks each region's Premium
// SSD managed-disk prices (one Retail Prices query per region, its own filter) and keeps
// the LRS tiers with Azure's tier sizes (P10 = 128 GiB at $19.71 a month), skipping ZRS
// and Standard SSD rows; a region with no tier is failed. Not asked, no storage query.
func TestFetchReadsManagedDisks(t *testing.T) {
	var storageQueries atomic.Int32
	retail := &retailServer{t: t}
	srv := providertest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := r.URL.Query().Get("$filter")
		if !strings.Contains(f, "serviceName eq 'Storage'") {
			retail.ServeHTTP(w, r)
			return
		}
		storageQueries.Add(1)
		for _, clause := range []string{"priceType eq 'Consumption'", "productName eq 'Premium SSD Managed Disks'"} {
			if !strings.Contains(f, clause) {
				t.Errorf("storage filter %q lacks %q", f, clause)
			}
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		name := "eastus_page3.json" // the empty last page
		if strings.Contains(f, "armRegionName eq 'eastus'") {
			name = "retail_prices_managed_disks.json"
		}
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}))
	p := newProvider(t, srv, srv.URL, []string{"westeurope", "eastus"}, nil)
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Market != nil || storageQueries.Load() != 0 {
		t.Fatalf("not asked: market %+v, %d storage queries", snap.Market, storageQueries.Load())
	}
	snap, err = p.Fetch(providers.WithMarketRead(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	m := snap.Market
	want := pricing.StoragePrice{Provider: Name, Region: "eastus", Product: "P10 LRS", SizeGiB: 128, USDPerMonth: 19.71,
		Source: "Azure Retail Prices (Premium SSD Managed Disks, per disk per month)", ObservedAt: clock}
	if m == nil || len(m.Storage) != 1 || m.Storage[0] != want {
		t.Fatalf("storage %+v; want only %+v", m, want)
	}
	if len(m.Regions) != 1 || m.Regions[0] != "eastus" || m.Failed["westeurope"] == nil || m.Requests != 2 || storageQueries.Load() != 2 {
		t.Errorf("regions %v failed %v requests %d (%d served); want eastus read, westeurope failed, 2", m.Regions, m.Failed, m.Requests, storageQueries.Load())
	}
}

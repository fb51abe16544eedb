package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// BenchmarkOffersCSV is /offers.csv's first page (10,000 rows) over a store of 100k
// current offers (5 providers x 20k), uncached: what every request costs while a
// provider rewrites prices (each write moves the data version, so the daemon's offer
// cache misses; issue 30 measured 6.8 s p50 under that load). price and per-gpu are
// orders SQLite seeks by index; region is sorted in Go.
func BenchmarkOffersCSV(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "picker.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	gpus := pricing.GPUs()
	counts := []float64{1, 2, 4, 8}
	for p := range 5 {
		provider := fmt.Sprintf("bench%d", p)
		offers := make([]pricing.Offer, 20_000)
		for i := range offers {
			g, c := gpus[i%len(gpus)], counts[(i/len(gpus))%len(counts)]
			purchase := pricing.OnDemand
			if i%5 < 2 {
				purchase = pricing.Spot
			}
			offers[i] = pricing.Offer{Provider: provider, Region: fmt.Sprintf("r%02d", (i/3)%25), InstanceType: fmt.Sprintf("type-%d", i),
				GPUModel: g.Model, GPUCount: c, GPUMemGiB: g.MemGB, VCPUs: 8 * c, RAMGiB: 64 * c, Purchase: purchase,
				PriceUSDHr: 0.1 + float64((i*7919+p)%100000)/1000*c, Currency: "USD", Source: pricing.SourceAPI, ObservedAt: now}
		}
		if _, err := st.WriteSnapshot(ctx, provider, store.WriteInput{Offers: offers, Started: now, Finished: now}); err != nil {
			b.Fatal(err)
		}
	}
	h := Handler(&testBackend{st: st, now: now}, Options{Now: func() time.Time { return now }})
	for _, target := range []string{"/offers.csv", "/offers.csv?sort=per-gpu", "/offers.csv?sort=region"} {
		b.Run(target, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
				if rec.Code != http.StatusOK || rec.Header().Get("X-Total-Count") != "100000" {
					b.Fatalf("status %d, X-Total-Count %q: %.300s", rec.Code, rec.Header().Get("X-Total-Count"), rec.Body)
				}
			}
		})
	}
}

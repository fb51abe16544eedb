// Package providertest is the conformance suite every adapter's tests run (litestream's
// idea of one suite against every replica client): the Provider contract, checked the
// same way for all; and the fake-server kit their tests share (Serve, Sleeps,
// HTTPOptions, DoublingBackoff) instead of each copying its own httptest setup.
package providertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// Run checks the Provider contract, progress reports included (providers.Tracker). newProvider must return a provider pointed at a
// test server (never the network) that answers with a healthy, non-empty catalog; it
// is called once per check so servers may count requests.
func Run(t *testing.T, newProvider func(t *testing.T) providers.Provider) {
	t.Helper()
	t.Run("conformance/offers", func(t *testing.T) {
		snap, err := newProvider(t).Fetch(context.Background())
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		CheckSnapshot(t, snap)
	})
	t.Run("conformance/progress", func(t *testing.T) {
		ctx, log := RecordProgress(context.Background())
		if _, err := newProvider(t).Fetch(ctx); err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		log.Check(t)
	})
	t.Run("conformance/cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := make(chan error, 1)
		go func() {
			_, err := newProvider(t).Fetch(ctx)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("Fetch with a cancelled context returned no error")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Fetch with a cancelled context: %v; want it to wrap context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Fetch ignored a cancelled context for 10s")
		}
	})
}

// CheckSnapshot asserts what every successful snapshot must satisfy.
func CheckSnapshot(t *testing.T, snap *providers.Snapshot) {
	t.Helper()
	if snap == nil || len(snap.Offers) == 0 {
		t.Fatal("snapshot has no offers; an empty result must be an error")
	}
	seen := map[pricing.Key]bool{}
	for _, o := range snap.Offers {
		if err := o.Validate(); err != nil {
			t.Errorf("invalid offer: %v", err)
		}
		if o.Currency != "USD" {
			t.Errorf("offer %s: currency %q; want USD", o.Key(), o.Currency)
		}
		if o.Source != pricing.SourceAPI && o.Source != pricing.SourceFile {
			t.Errorf("offer %s: source %q; want api or file", o.Key(), o.Source)
		}
		if g, ok := pricing.LookupGPU(o.GPUModel); !ok {
			t.Errorf("offer %s: gpu model %q is not canonical", o.Key(), o.GPUModel)
		} else if o.GPUMemGiB > g.MemGB*1.1 || o.GPUMemGiB < g.MemGB*0.8 {
			// Memory is per whole GPU, fractional offers included (their slice holds
			// GPUCount × GPUMemGiB).
			t.Errorf("offer %s: %v GiB per GPU is implausible for %s (%v GiB)", o.Key(), o.GPUMemGiB, g.Model, g.MemGB)
		}
		if o.GPUCount > 16 || (o.GPUCount > 1 && o.GPUCount != float64(int(o.GPUCount))) {
			t.Errorf("offer %s: gpu count %v is implausible", o.Key(), o.GPUCount)
		}
		if o.ObservedAt.IsZero() {
			t.Errorf("offer %s: observed time is zero", o.Key())
		}
		if seen[o.Key()] {
			t.Errorf("duplicate offer %s", o.Key())
		}
		seen[o.Key()] = true
	}
}

package providertest

import (
	"context"
	"reflect"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// CheckDescriptor holds an adapter's descriptor to what the registry relies on: its
// name and what a refresh needs; New takes the adapter's Config (zero, by value and by
// pointer) and refuses another type; and badEndpoint, a Config whose endpoint is not an
// http(s) URL, is a config (Invalid) error.
func CheckDescriptor(t testing.TB, d providers.Descriptor, name string, needs providers.Needs, zero, badEndpoint any) {
	t.Helper()
	if d.Name != name || d.Needs != needs {
		t.Errorf("descriptor %q needs %+v; want %q needing %+v", d.Name, d.Needs, name, needs)
	}
	ptr := reflect.New(reflect.TypeOf(zero))
	ptr.Elem().Set(reflect.ValueOf(zero))
	for _, cfg := range []any{zero, ptr.Interface()} {
		if _, err := d.New(cfg); err != nil {
			t.Errorf("New(%T): %v", cfg, err)
		}
	}
	if _, err := d.New(struct{}{}); err == nil {
		t.Error("New(struct{}{}) succeeded; want a type error")
	}
	if _, err := d.New(badEndpoint); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("New with a bad endpoint: %v; want an invalid-config error", err)
	}
}

// BenchFetch times p's Fetch, each iteration one whole fetch (the adapters' refresh time
// against their fixtures), and reports what a fetch yields: offers and GPU models.
func BenchFetch(b *testing.B, p providers.Provider) {
	b.Helper()
	var snap *providers.Snapshot
	for b.Loop() {
		var err error
		if snap, err = p.Fetch(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	models := map[string]bool{}
	for _, o := range snap.Offers {
		models[o.GPUModel] = true
	}
	b.ReportMetric(float64(len(snap.Offers)), "offers")
	b.ReportMetric(float64(len(models)), "gpu-models")
}

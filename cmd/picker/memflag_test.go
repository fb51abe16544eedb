package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// Issue 26: `picker offers --gpu-model H100 --min-vram 80` found nothing (an H100 is 80
// GB, 79.19 GiB usable) and said only "no offers match". The floors take units, and an
// empty answer that the GB/GiB difference explains says so.
func TestOffersMemoryUnits(t *testing.T) {
	db := tempDB(t)
	count := func(args ...string) int {
		t.Helper()
		r := runCLI(t, db, false, append(append([]string{"offers", "-o", "json"}, args...), "--limit", "0")...)
		if r.code != 0 {
			t.Fatalf("offers %v: exit %d %s", args, r.code, r.stderr)
		}
		var offers []pricing.Offer
		if err := json.Unmarshal([]byte(r.stdout), &offers); err != nil {
			t.Fatal(err)
		}
		return len(offers)
	}
	h100 := count("--gpu-model", "H100")
	if h100 == 0 {
		t.Fatal("the snapshot has no H100 offer")
	}
	for _, tt := range []struct {
		floor string
		want  int
	}{
		{"80", 0}, {"80GiB", 0}, {"80 gib", 0}, // a bare number is usable GiB, as before
		{"79GiB", h100}, {"79", h100},
		{"80GB", h100}, {"80gb", h100}, {"81GB", 0},
	} {
		if got := count("--gpu-model", "H100", "--min-vram", tt.floor); got != tt.want {
			t.Errorf("--min-vram %s: %d H100 offers, want %d", tt.floor, got, tt.want)
		}
	}
	if got, eight := count("--gpu-model", "H100", "--min-total-vram", "640GB"), count("--gpu-model", "H100", "--min-total-vram", "600"); got != eight || got == 0 {
		t.Errorf("--min-total-vram 640GB: %d offers, want the 8-GPU ones (%d)", got, eight)
	}

	r := runCLI(t, db, false, "offers", "--gpu-model", "H100", "--min-vram", "80")
	want := " H100 offers have 79.2 GiB usable (80 GB class): use --min-vram 80GB"
	if r.code != 0 || !strings.Contains(r.stderr, "no offers match") || !strings.Contains(r.stderr, want) {
		t.Errorf("--min-vram 80: exit %d, stderr %q; want the hint %q", r.code, r.stderr, want)
	}
	if r := runCLI(t, db, false, "offers", "--gpu-model", "H100", "--min-vram", "200"); strings.Contains(r.stderr, "GB class") {
		t.Errorf("--min-vram 200 (no class helps): stderr %q gives a hint", r.stderr)
	}
	if r := runCLI(t, db, false, "offers", "--min-vram", "80G"); r.code != 2 || !strings.Contains(r.stderr, `--min-vram "80G": want usable GiB (80, 79.5GiB) or a datasheet class in GB (80GB)`) {
		t.Errorf("--min-vram 80G: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, db, false, "offers", "--min-vram", "-1GB"); r.code != 2 || !strings.Contains(r.stderr, "must not be negative") {
		t.Errorf("--min-vram -1GB: exit %d %q", r.code, r.stderr)
	}
}

type fixedOffers []pricing.Offer

func (f fixedOffers) Offers(_ context.Context, q store.Query) ([]pricing.Offer, error) {
	var out []pricing.Offer
	for _, o := range f {
		o = o.WithUsableMemory()
		per, total := store.ClassGB(o.GPUModel, o.GPUMemReportedGiB), store.ClassGB(o.GPUModel, o.GPUMemReportedGiB)*o.GPUCount
		if o.Fractional() {
			per = total
		}
		if (q.MinVRAMGB > 0 && per < q.MinVRAMGB) || (q.MinTotalVRAMGB > 0 && total < q.MinTotalVRAMGB) ||
			(q.MinVRAMGiB > 0 && o.MemPerDeviceGiB() < q.MinVRAMGiB) || (q.MinTotalVRAMGiB > 0 && o.TotalGPUMemGiB() < q.MinTotalVRAMGiB) {
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

func TestOffersMemoryUnitsHint(t *testing.T) {
	o := func(model string, count float64) pricing.Offer {
		return pricing.Offer{Provider: "p", InstanceType: model, GPUModel: model, GPUCount: count, GPUMemGiB: 80, PriceUSDHr: 1}
	}
	h100s := fixedOffers{o("H100", 1), o("H100", 2), o("H100", 8)}
	mixed := fixedOffers{o("H100", 1), o("H100", 2), o("A100-80GB", 1), o("H100", 8), o("L4", 0.5)}
	for _, tt := range []struct {
		name string
		st   fixedOffers
		q    store.Query
		want string
	}{
		{"one model", h100s, store.Query{MinVRAMGiB: 80}, "3 H100 offers have 79.2 GiB usable (80 GB class): use --min-vram 80GB"},
		{"two models", mixed, store.Query{MinVRAMGiB: 80},
			"4 offers have less usable GiB than their GB class (H100 79.2 GiB of 80 GB, A100-80GB 79.1 GiB of 80 GB): use --min-vram 80GB"},
		{"the whole instance", mixed, store.Query{MinTotalVRAMGiB: 640}, "1 8×H100 offer has 633.5 GiB usable (640 GB class): use --min-total-vram 640GB"},
		{"a slice has its share", mixed, store.Query{MinVRAMGiB: 12}, "1 0.5×L4 offer has 11 GiB usable (12 GB class): use --min-vram 12GB"},
		{"both floors", h100s, store.Query{MinVRAMGiB: 80, MinTotalVRAMGiB: 160},
			"2 H100 offers have 79.2 GiB usable (80 GB class): use --min-vram 80GB --min-total-vram 160GB"},
		{"no floor in GiB", mixed, store.Query{MinVRAMGB: 80}, ""},
		{"no class helps", mixed, store.Query{MinVRAMGiB: 100}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := memoryUnitsHint(context.Background(), tt.st, tt.q, 0); got != tt.want {
				t.Errorf("hint %q\nwant %q", got, tt.want)
			}
		})
	}
	if got := memoryUnitsHint(context.Background(), h100s, store.Query{MinVRAMGiB: 80}, 3); got != "" {
		t.Errorf("a non-empty answer got the hint %q", got)
	}
}

// Issue 26: the API binds the same params (80GB works there too) and gives the same
// hint, in a header beside the CLI's JSON body.
func TestOffersMemoryUnitsAPI(t *testing.T) {
	_, srv := newTestAPI(t)
	resp, err := http.Get(srv.URL + "/v1/offers?gpu-model=H100&min-vram=80")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := " H100 offers have 79.2 GiB usable (80 GB class): use --min-vram 80GB"
	if h := resp.Header.Get("X-Picker-Hint"); resp.StatusCode != 200 || !strings.Contains(h, want) {
		t.Errorf("/v1/offers?min-vram=80: %d, X-Picker-Hint %q; want %q", resp.StatusCode, h, want)
	}
	code, body := get(t, srv.URL+"/v1/offers?gpu-model=H100&min-vram=80GB")
	var offers []pricing.Offer
	if err := json.Unmarshal(body, &offers); err != nil || code != 200 || len(offers) == 0 {
		t.Errorf("/v1/offers?min-vram=80GB: %d, %d offers (%v)", code, len(offers), err)
	}
}

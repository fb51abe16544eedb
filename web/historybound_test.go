package web

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/store"
)

// floodBackend serves a GPU model's history of n intervals in one series, honouring
// HistoryQuery.Limit as the store does (the newest, oldest first), and records the
// limit it was asked for.
type floodBackend struct {
	*testBackend
	n     int
	asked int
}

func (b *floodBackend) History(ctx context.Context, q store.HistoryQuery) ([]store.PricePoint, error) {
	b.asked = q.Limit
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	first := 0
	if q.Limit > 0 && q.Limit < b.n {
		first = b.n - q.Limit
	}
	var out []store.PricePoint
	for i := first; i < b.n; i++ {
		from, to := start.Add(time.Duration(i)*time.Minute), start.Add(time.Duration(i+1)*time.Minute)
		pt := store.PricePoint{Provider: "flood", Region: "r1", InstanceType: "x", Purchase: "on-demand", GPUModel: "H100", GPUCount: 1,
			PriceUSDHr: 2 + float64(i%7)/100, ValidFrom: from, ValidTo: &to}
		if i == b.n-1 {
			pt.ValidTo = nil
		}
		out = append(out, pt)
	}
	return out, nil
}

// TestHistoryPageBounded: a GPU model's history page asks the store for at most
// maxHistoryIntervals (+1) intervals and says when older ones were left out (issue 30:
// 1.6M intervals took 16 s and 1.1 GiB per request).
func TestHistoryPageBounded(t *testing.T) {
	b := &floodBackend{testBackend: newTestBackend(t), n: 3 * maxHistoryIntervals}
	h := Handler(b, Options{Now: func() time.Time { return b.now }})
	body := get(t, h, "/history?gpu-model=H100").Body.String()
	if b.asked != maxHistoryIntervals+1 {
		t.Errorf("the page asked for %d intervals; want %d", b.asked, maxHistoryIntervals+1)
	}
	if !strings.Contains(body, "Only the newest 10000 stored price intervals are shown") {
		t.Error("the page does not say older intervals were left out")
	}
	b.n = 50
	if body := get(t, h, "/history?gpu-model=H100").Body.String(); strings.Contains(body, "Only the newest") {
		t.Error("a short history says it was cut")
	}
}

// TestCheapestOverMatchesScan: the sweep picks, at every time, the interval the
// definition picks (scan every interval current at t; cheapest per GPU, first on ties).
func TestCheapestOverMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for trial := range 200 {
		var sp []store.PricePoint
		for i := range 1 + r.IntN(30) {
			from := base.Add(time.Duration(i*10+r.IntN(10)) * time.Hour)
			pt := store.PricePoint{GPUCount: float64(1 + r.IntN(8)), PriceUSDHr: float64(1+r.IntN(5)) * 8, ValidFrom: from}
			if r.IntN(4) > 0 {
				to := from.Add(time.Duration(1+r.IntN(60)) * time.Hour)
				pt.ValidTo = &to
			}
			sp = append(sp, pt)
		}
		var times []int64
		for _, pt := range sp {
			times = append(times, pt.ValidFrom.Unix())
			if pt.ValidTo != nil {
				times = append(times, pt.ValidTo.Unix())
			}
		}
		sortUnique(&times)
		got := cheapestOver(sp, times)
		for k, tm := range times {
			want, best := -1, -1.0
			for i, pt := range sp {
				if pt.ValidFrom.Unix() > tm || pt.ValidTo != nil && pt.ValidTo.Unix() <= tm {
					continue
				}
				if per := pt.PriceUSDHr / pt.GPUCount; best < 0 || per < best {
					best, want = per, i
				}
			}
			if got[k] != want {
				t.Fatalf("trial %d, time %d: sweep picked %d, scan %d", trial, k, got[k], want)
			}
		}
	}
}

func sortUnique(ts *[]int64) {
	slices.Sort(*ts)
	*ts = slices.Compact(*ts)
}

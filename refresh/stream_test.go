package refresh

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/store"
)

// partStreamer makes parts × perPart offers of provider "s" on the fly, one region a
// part, so that the only copies alive are the ones the refresh keeps. failAfter > 0
// fails the stream after that many parts; onEmit runs before each part is emitted.
type partStreamer struct {
	parts, perPart int
	price          float64
	failAfter      int
	regions        []string // Snapshot.Regions; nil: every region
	onEmit         func(part int)
}

func (p *partStreamer) part(i int) []pricing.Offer {
	out := make([]pricing.Offer, p.perPart)
	for k := range out {
		out[k] = pricing.Offer{Provider: "s", Region: fmt.Sprintf("r%03d", i), InstanceType: fmt.Sprintf("g6.%dxlarge", k),
			GPUModel: "L4", GPUCount: 1, GPUMemGiB: 24, VCPUs: 4, RAMGiB: 16, Purchase: pricing.OnDemand,
			PriceUSDHr: p.price + float64(k)/100, Currency: "USD", Source: pricing.SourceAPI}
	}
	return out
}

func (p *partStreamer) Stream(ctx context.Context, emit func([]pricing.Offer) error) (*providers.Snapshot, error) {
	for i := range p.parts {
		if p.failAfter > 0 && i == p.failAfter {
			return nil, errors.New("s: region r" + fmt.Sprint(i) + ": connection reset")
		}
		if p.onEmit != nil {
			p.onEmit(i)
		}
		if err := emit(p.part(i)); err != nil {
			return nil, fmt.Errorf("s: %w", err)
		}
	}
	return &providers.Snapshot{Regions: p.regions}, nil
}

// Fetch is the same offers in one Snapshot (the Provider half of providers.Streamer).
func (p *partStreamer) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	var all []pricing.Offer
	snap, err := p.Stream(ctx, func(o []pricing.Offer) error { all = append(all, o...); return nil })
	if err != nil {
		return nil, err
	}
	snap.Offers = all
	return snap, nil
}

// fetchOnly hides a provider's Stream: Run takes the Fetch path.
type fetchOnly struct{ p providers.Provider }

func (f fetchOnly) Fetch(ctx context.Context) (*providers.Snapshot, error) { return f.p.Fetch(ctx) }

var fixed = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }

// TestRunStreamWritesWhatFetchWrites: the same provider refreshed through Stream and
// through Fetch leaves the same current offers and history, with the same result.
func TestRunStreamWritesWhatFetchWrites(t *testing.T) {
	ctx := context.Background()
	a, b := openStore(t), openStore(t)
	for i, price := range []float64{1, 1, 2} { // new, unchanged, changed
		src := &partStreamer{parts: 5, perPart: 7, price: price}
		at := func() time.Time { return fixed().Add(time.Duration(i) * time.Hour) }
		ra := Run(ctx, a, Job{Name: "s", Provider: src}, at)
		rb := Run(ctx, b, Job{Name: "s", Provider: fetchOnly{src}}, at)
		if ra.Err != nil || rb.Err != nil {
			t.Fatalf("refresh %d: %v / %v", i, ra.Err, rb.Err)
		}
		ra.Duration, rb.Duration = 0, 0
		if fmt.Sprint(ra) != fmt.Sprint(rb) {
			t.Errorf("refresh %d: stream %+v, fetch %+v", i, ra, rb)
		}
	}
	oa, err := a.Offers(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	ob, err := b.Offers(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(oa) != 35 || !slices.Equal(oa, ob) {
		t.Errorf("stream wrote %d offers, fetch %d; want the same 35", len(oa), len(ob))
	}
	ha, _ := a.History(ctx, store.HistoryQuery{Provider: "s", InstanceType: "g6.3xlarge"})
	hb, _ := b.History(ctx, store.HistoryQuery{Provider: "s", InstanceType: "g6.3xlarge"})
	if fmt.Sprint(ha) != fmt.Sprint(hb) || len(ha) == 0 {
		t.Errorf("history differs:\nstream %v\nfetch  %v", ha, hb)
	}
}

// TestRunStreamFailsMidway: a stream that fails after some parts writes none of them,
// keeps the last good prices and records the failed run.
func TestRunStreamFailsMidway(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	if r := Run(ctx, st, Job{Name: "s", Provider: &partStreamer{parts: 4, perPart: 3, price: 1}}, fixed); r.Err != nil {
		t.Fatal(r.Err)
	}
	before, err := st.Offers(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return fixed().Add(time.Hour) }
	r := Run(ctx, st, Job{Name: "s", Provider: &partStreamer{parts: 6, perPart: 3, price: 5, failAfter: 3}}, later)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "connection reset") {
		t.Fatalf("Run: %v; want the stream's error", r.Err)
	}
	after, err := st.Offers(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Errorf("a failed stream changed the offers: %d before, %d after", len(before), len(after))
	}
	ps, err := st.Providers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].ConsecutiveFailures != 1 || !strings.Contains(ps[0].LastError, "connection reset") || ps[0].Offers != 12 {
		t.Errorf("provider status %+v; want one recorded failure and the 12 last good offers", ps)
	}
	// A stream that emits nothing is "no prices", a failure too.
	r = Run(ctx, st, Job{Name: "s", Provider: &partStreamer{}}, later)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "no offers") {
		t.Errorf("empty stream: %v; want a no-offers failure", r.Err)
	}
}

// TestRunStreamClosesOnlyCoveredRegions: a stream whose snapshot covers some regions
// closes the missing offers there only.
func TestRunStreamClosesOnlyCoveredRegions(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	if r := Run(ctx, st, Job{Name: "s", Provider: &partStreamer{parts: 3, perPart: 4, price: 1}}, fixed); r.Err != nil {
		t.Fatal(r.Err)
	}
	// The second refresh lists r000 and r001 with 2 offers each; it covers only r000
	// (r001's listing was partial, r002 failed).
	src := &partStreamer{parts: 2, perPart: 2, price: 1, regions: []string{"r000"}}
	r := Run(ctx, st, Job{Name: "s", Provider: src}, func() time.Time { return fixed().Add(time.Hour) })
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.OffersClosed != 2 {
		t.Errorf("closed %d; want r000's 2 unlisted offers", r.OffersClosed)
	}
	got, err := st.Offers(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Errorf("%d current offers; want 12 - 2", len(got))
	}
}

// TestRunStreamHoldsNoWriteLock: while a stream is fetching, another provider's refresh
// writes to the same store without waiting (its wait bound is far shorter than the
// fetch), and the stream's own write lands after.
func TestRunStreamHoldsNoWriteLock(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	st.SetWriteWait(200 * time.Millisecond)
	var other Result
	src := &partStreamer{parts: 3, perPart: 2, price: 1, onEmit: func(i int) {
		if i == 1 {
			other = Run(ctx, st, Job{Name: "other", Provider: fetchFunc(func(context.Context) (*providers.Snapshot, error) {
				o := offers(2)
				for k := range o {
					o[k].Provider = "other"
				}
				return &providers.Snapshot{Offers: o}, nil
			})}, fixed)
		}
	}}
	if r := Run(ctx, st, Job{Name: "s", Provider: src}, fixed); r.Err != nil {
		t.Fatal(r.Err)
	}
	if other.Err != nil || other.OffersSeen != 2 {
		t.Fatalf("the write during the stream: %+v", other)
	}
	got, err := st.Offers(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 {
		t.Errorf("%d current offers; want 6 streamed + 2 written meanwhile", len(got))
	}
}

// TestRunStreamHeapBounded: streaming 60 parts of 300 offers, the live heap sampled at
// each part stays far below the offers' size (about 6 MB); the same provider through
// Fetch holds them all, which the same measurement sees.
func TestRunStreamHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap over 18k offers")
	}
	ctx := context.Background()
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var base, peak uint64
	src := &partStreamer{parts: 60, perPart: 300, price: 1, onEmit: func(int) { peak = max(peak, heap()) }}
	st := openStore(t)
	base = heap()
	if r := Run(ctx, st, Job{Name: "s", Provider: src}, fixed); r.Err != nil {
		t.Fatal(r.Err)
	}
	streamed := peak - min(base, peak)

	all, err := src.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := heap() - min(base, heap())
	runtime.KeepAlive(all)
	t.Logf("heap growth while streaming %d KiB; holding every offer %d KiB", streamed>>10, held>>10)
	if held < 2<<20 {
		t.Fatalf("holding 18k offers grew the heap by only %d KiB: the measurement cannot see them", held>>10)
	}
	if streamed > held/8 {
		t.Errorf("the heap grew by %d KiB while streaming; want under 1/8 of holding every offer (%d KiB)", streamed>>10, held>>10)
	}
}

// BenchmarkRunStream90k: a 90k-offer refresh (300 parts of 300) into a fresh store
// through Stream and through Fetch; peak-heap-MiB is the largest live heap a 2 ms
// sampler saw during the refresh (fetch and write together).
func BenchmarkRunStream90k(b *testing.B) {
	for _, tt := range []struct {
		name string
		wrap func(*partStreamer) providers.Provider
	}{
		{"stream", func(p *partStreamer) providers.Provider { return p }},
		{"fetch", func(p *partStreamer) providers.Provider { return fetchOnly{p} }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var peak atomic.Uint64
			for b.Loop() {
				b.StopTimer()
				st := openStore(b)
				runtime.GC()
				done := make(chan struct{})
				stopped := make(chan struct{})
				go func() {
					defer close(stopped)
					var ms runtime.MemStats
					for {
						runtime.ReadMemStats(&ms)
						if ms.HeapAlloc > peak.Load() {
							peak.Store(ms.HeapAlloc)
						}
						select {
						case <-done:
							return
						case <-time.After(2 * time.Millisecond):
						}
					}
				}()
				b.StartTimer()
				r := Run(context.Background(), st, Job{Name: "s", Provider: tt.wrap(&partStreamer{parts: 300, perPart: 300, price: 1})}, fixed)
				b.StopTimer()
				close(done)
				<-stopped
				if r.Err != nil || r.OffersSeen != 90_000 {
					b.Fatalf("%+v", r)
				}
				st.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		})
	}
}

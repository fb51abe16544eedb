package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// syntheticOffers makes n distinct offers of one provider spread over regions, GPU
// models and both purchase options, with prices that depend on the index so a
// sort has work to do.
func syntheticOffers(provider string, n int, observed time.Time) []pricing.Offer {
	gpus := pricing.GPUs()
	counts := []float64{0.5, 1, 2, 4, 8}
	out := make([]pricing.Offer, n)
	for i := range out {
		g := gpus[i%len(gpus)]
		c := counts[(i/len(gpus))%len(counts)]
		p := pricing.OnDemand
		if i%5 < 2 {
			p = pricing.Spot
		}
		out[i] = pricing.Offer{
			Provider: provider, Region: fmt.Sprintf("r%02d", (i/3)%25), InstanceType: fmt.Sprintf("type-%d", i),
			GPUModel: g.Model, GPUCount: c, GPUMemGiB: g.MemGB, VCPUs: 8 * c, RAMGiB: 64 * c,
			Purchase: p, PriceUSDHr: 0.1 + float64((i*7919)%100000)/1000*c, Currency: "USD", Source: pricing.SourceAPI,
			ObservedAt: observed,
		}
	}
	return out
}

var bigDB struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{bigDB.dir, marketDB.dir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// bigStore opens a database of 100k current offers (20 providers x 5k) and 1M price
// intervals (10 per offer, the last one open), built once per test binary. The bulk
// path inserts offers through one prepared statement in one transaction and makes
// the history inside SQLite with a recursive CTE, which takes seconds where 100
// WriteSnapshot calls would take minutes.
func bigStore(b *testing.B) *Store {
	ctx := context.Background()
	bigDB.once.Do(func() {
		bigDB.dir, bigDB.err = os.MkdirTemp("", "picker-bench-")
		if bigDB.err != nil {
			return
		}
		bigDB.path = filepath.Join(bigDB.dir, "big.db")
		start := time.Now()
		bigDB.err = buildBig(ctx, bigDB.path)
		b.Logf("built 100k offers / 1M intervals in %v", time.Since(start).Round(time.Millisecond))
	})
	if bigDB.err != nil {
		b.Fatal(bigDB.err)
	}
	s, err := Open(ctx, bigDB.path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func buildBig(ctx context.Context, path string) error {
	s, err := Open(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO offers (provider, region, zone, instance_type, purchase, gpu_model,
		gpu_count, gpu_mem_gib, vcpus, ram_gib, currency, source, price, last_seen) VALUES (?, ?, '', ?, ?, ?, ?, ?, ?, ?, 'USD', 'api', ?, ?)`)
	if err != nil {
		return err
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	last := base.Add(9 * 24 * time.Hour).Unix()
	for p := range 20 {
		for _, o := range syntheticOffers(fmt.Sprintf("p%02d", p), 5000, time.Time{}) {
			if _, err := ins.ExecContext(ctx, o.Provider, o.Region, o.InstanceType, string(o.Purchase), o.GPUModel,
				o.GPUCount, o.GPUMemGiB, o.VCPUs, o.RAMGiB, o.PriceUSDHr, last); err != nil {
				return err
			}
		}
	}
	ins.Close()
	// Ten daily intervals per offer; the tenth is open and carries the offer's price.
	if _, err := tx.ExecContext(ctx, `WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 9)
		INSERT INTO prices (offer_id, price, valid_from, valid_to)
		SELECT o.id, o.price * (1 + 0.01 * (9 - k.n)), ? + k.n * 86400, CASE WHEN k.n < 9 THEN ? + (k.n + 1) * 86400 END
		FROM offers o, k ORDER BY o.id, k.n`, base.Unix(), base.Unix()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO refresh_runs (provider, started, finished, status, offers_seen)
		SELECT DISTINCT provider, ?, ?, 'ok', 5000 FROM offers`, last, last); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, "ANALYZE")
	return err
}

// BenchmarkOffersQuery: current offers with the CONTRACT's filters over 100k offers
// and 1M history rows (issue 2's target: < 5 ms per query).
func BenchmarkOffersQuery(b *testing.B) {
	s := bigStore(b)
	ctx := context.Background()
	c, err := s.Counts(ctx)
	if err != nil || c.CurrentOffers != 100_000 || c.Prices != 1_000_000 {
		b.Fatalf("big store: %+v, %v", c, err)
	}
	queries := []struct {
		name string
		q    Query
	}{
		{"gpu+purchase+vram/top10", Query{GPUModels: []string{"H100"}, Purchase: pricing.OnDemand, MinVRAMGiB: 40, Limit: 10}},
		{"recommend-like/top10", Query{MinVRAMGiB: 80, ExcludeFractional: true, Purchase: pricing.OnDemand, MaxGPUs: 8, Limit: 10}},
		{"total-vram+max-price/per-gpu/top10", Query{MinTotalVRAMGiB: 160, MaxPriceUSDHr: 20, Sort: SortPricePerGPU, Limit: 10}},
		{"provider+region/per-gib/all", Query{Providers: []string{"p03"}, Regions: []string{"r07"}, Sort: SortPricePerGiB}},
		{"region+no-match/top10 (worst case)", Query{Regions: []string{"r01"}, MinTotalVRAMGiB: 100_000, Limit: 10}},
		{"gpu-models/all", Query{GPUModels: []string{"H100", "A100-80GB"}, Providers: []string{"p01", "p02"}, Purchase: pricing.Spot}},
	}
	for _, tt := range queries {
		b.Run(tt.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				offers, err := s.Offers(ctx, tt.q)
				if err != nil {
					b.Fatal(err)
				}
				n = len(offers)
			}
			if n == 0 && !strings.Contains(tt.name, "no-match") {
				b.Fatal("query matched nothing")
			}
			b.ReportMetric(float64(n), "offers")
		})
	}
}

// BenchmarkWriteSnapshot10k: one provider's 10k-offer refresh (target < 1 s), into an
// empty database (every offer new) and over the same snapshot with 1 % of prices
// changed (the daemon's steady state).
func BenchmarkWriteSnapshot10k(b *testing.B) {
	ctx := context.Background()
	offers := syntheticOffers("aws", 10_000, time.Time{})
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			s := openTest(b)
			b.StartTimer()
			if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("1pct-changed", func(b *testing.B) {
		s := openTest(b)
		if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers}); err != nil {
			b.Fatal(err)
		}
		next := append([]pricing.Offer(nil), offers...)
		round := 0
		for b.Loop() {
			round++
			for i := round % 100; i < len(next); i += 100 {
				next[i].PriceUSDHr *= 1.01
			}
			r, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: next})
			if err != nil {
				b.Fatal(err)
			}
			if r.Changed != 100 {
				b.Fatalf("changed %d, want 100", r.Changed)
			}
		}
	})
}

// TestRewriteSameSnapshotAddsNoPriceRows: the database grows with price changes, not
// with refreshes.
func TestRewriteSameSnapshotAddsNoPriceRows(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	offers := syntheticOffers("aws", 10_000, time.Time{})
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	before := counts(t, s)
	r, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Finished: at(1)})
	if err != nil {
		t.Fatal(err)
	}
	after := counts(t, s)
	equal(t, "price rows added", after.Prices-before.Prices, 0)
	equal(t, "prices changed", r.PricesChanged(), 0)
	equal(t, "unchanged", r.Unchanged, 10_000)
	equal(t, "runs added", after.Runs-before.Runs, 1)
}

// TestHistoryGrowsWithChangesNotRefreshes: 50 refreshes with 1 % of prices changing
// leave the database under 1.5x the size of one refresh (issue 7's bound), because
// unchanged prices write no rows.
func TestHistoryGrowsWithChangesNotRefreshes(t *testing.T) {
	if testing.Short() {
		t.Skip("50 refreshes")
	}
	ctx := context.Background()
	s := openTest(t)
	offers := syntheticOffers("aws", 2000, time.Time{})
	write := func(h int) {
		t.Helper()
		if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Finished: at(h)}); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		t.Helper()
		if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatal(err)
		}
		n, err := s.SizeBytes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	write(0)
	one := size()
	for r := 1; r <= 50; r++ {
		for i := r % 100; i < len(offers); i += 100 {
			offers[i].PriceUSDHr *= 1.01
		}
		write(r)
	}
	c := counts(t, s)
	equal(t, "price rows", c.Prices, int64(2000+50*20))
	if got := size(); float64(got) > 1.5*float64(one) {
		t.Errorf("after 50 refreshes: %d bytes, one refresh %d: ratio %.2f > 1.5", got, one, float64(got)/float64(one))
	} else {
		t.Logf("one refresh %d bytes, after 50: %d (%.2fx)", one, got, float64(got)/float64(one))
	}
}

var shapedDB struct {
	once sync.Once
	dir  string
	err  error
}

// shapedStore opens a database of 100k current offers over about 1,000 shapes (instance
// types repeat across 50 regions x 2 zones, as clouds' do), written through
// WriteSnapshot so the shapes table and its cheapest-offer copies are the refresh's own.
func shapedStore(b *testing.B) *Store {
	ctx := context.Background()
	shapedDB.once.Do(func() {
		if shapedDB.dir, shapedDB.err = os.MkdirTemp("", "picker-bench-shaped-"); shapedDB.err != nil {
			return
		}
		s, err := Open(ctx, filepath.Join(shapedDB.dir, "shaped.db"))
		if err != nil {
			shapedDB.err = err
			return
		}
		defer s.Close()
		gpus := pricing.GPUs()
		var offers []pricing.Offer
		for i := range 50_000 {
			t := i % 500
			g := gpus[t%len(gpus)]
			c := []float64{1, 2, 4, 8}[(t/len(gpus))%4]
			loc := i / 500
			for _, p := range []pricing.Purchase{pricing.OnDemand, pricing.Spot} {
				offers = append(offers, pricing.Offer{Provider: "aws", Region: fmt.Sprintf("r%02d", loc/2), Zone: fmt.Sprintf("z%d", loc%2),
					InstanceType: fmt.Sprintf("type-%d", t), GPUModel: g.Model, GPUCount: c, GPUMemGiB: g.MemGB, VCPUs: 8 * c, RAMGiB: float64(64 + t%3*64),
					Purchase: p, PriceUSDHr: 0.5 + float64((i*7919)%1000)/100*c, Currency: "USD", Source: pricing.SourceAPI})
			}
		}
		_, shapedDB.err = s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Finished: at(0)})
	})
	if shapedDB.err != nil {
		b.Fatal(shapedDB.err)
	}
	b.Cleanup(func() { os.RemoveAll(shapedDB.dir) })
	s, err := Open(ctx, filepath.Join(shapedDB.dir, "shaped.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkReadShapes: recommend's first read over 100k offers and 1,000 shapes, from the
// shapes rows' cheapest-offer copies (no offer filter) and through offers_current_shape
// (a region filter), against the full on-demand read recommend did before (Offers).
func BenchmarkReadShapes(b *testing.B) {
	s := shapedStore(b)
	ctx := context.Background()
	none := func([]pricing.Offer, [][]pricing.Offer, []bool) ([]ShapeNeed, error) { return nil, nil }
	for _, tt := range []struct {
		name string
		read func() ([]pricing.Offer, error)
	}{
		{"shapes/on-demand", func() ([]pricing.Offer, error) { return s.ReadShapes(ctx, Query{Purchase: pricing.OnDemand}, none) }},
		{"shapes/on-demand+region", func() ([]pricing.Offer, error) {
			return s.ReadShapes(ctx, Query{Purchase: pricing.OnDemand, Regions: []string{"r03", "r07"}}, none)
		}},
		{"full-scan/on-demand", func() ([]pricing.Offer, error) { return s.Offers(ctx, Query{Purchase: pricing.OnDemand}) }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				out, err := tt.read()
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.ReportMetric(float64(n), "offers")
		})
	}
}

// marketOffers is a marketplace of n offers: every offer its own host (instance type), so
// its own shape, over 88 fit-fact sets (GPU model, count and RAM size cycle together).
func marketOffers(n int) []pricing.Offer {
	gpus := pricing.GPUs()
	out := make([]pricing.Offer, n)
	for i := range out {
		g := gpus[(i*7)%len(gpus)]
		c := []float64{1, 1, 2, 4, 8}[(i/3)%5]
		out[i] = pricing.Offer{Provider: "vast", Region: fmt.Sprintf("loc-%02d", (i*13)%40), InstanceType: fmt.Sprintf("%gx_%s_m%d", c, g.Model, i),
			GPUModel: g.Model, GPUCount: c, GPUMemGiB: g.MemGB, VCPUs: float64(4 + i%29), RAMGiB: float64(int(64) << ((i / 11) % 4)),
			Purchase: []pricing.Purchase{pricing.OnDemand, pricing.Spot}[i%2], PriceUSDHr: 0.1 + float64((i*7919)%1000)/500*c,
			Currency: "USD", Source: pricing.SourceAPI}
	}
	return out
}

// BenchmarkWriteMarket30k: a 30k-offer marketplace refresh with 10 % of prices changed
// (issue 29's target: under 5 s), over a database that holds the marketplace already.
func BenchmarkWriteMarket30k(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	next := marketOffers(30_000)
	if _, err := s.WriteSnapshot(ctx, "vast", WriteInput{Offers: next}); err != nil {
		b.Fatal(err)
	}
	round := 0
	for b.Loop() {
		round++
		for i := round % 10; i < len(next); i += 10 {
			next[i].PriceUSDHr *= 1.01
		}
		r, err := s.WriteSnapshot(ctx, "vast", WriteInput{Offers: next})
		if err != nil {
			b.Fatal(err)
		}
		if r.Changed != 3000 {
			b.Fatalf("changed %d, want 3000", r.Changed)
		}
	}
}

var marketDB struct {
	once sync.Once
	dir  string
	err  error
}

// marketStore opens a database of a 100k-offer marketplace (marketOffers), built once
// per test binary (TestMain removes it).
func marketStore(b *testing.B) *Store {
	ctx := context.Background()
	marketDB.once.Do(func() {
		if marketDB.dir, marketDB.err = os.MkdirTemp("", "picker-bench-market-"); marketDB.err != nil {
			return
		}
		s, err := Open(ctx, filepath.Join(marketDB.dir, "market.db"))
		if err != nil {
			marketDB.err = err
			return
		}
		defer s.Close()
		_, marketDB.err = s.WriteSnapshot(ctx, "vast", WriteInput{Offers: marketOffers(100_000), Finished: at(0)})
	})
	if marketDB.err != nil {
		b.Fatal(marketDB.err)
	}
	s, err := Open(ctx, filepath.Join(marketDB.dir, "market.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkReadMarket: recommend's first read over a 100k-offer marketplace (every
// offer its own shape, marketOffers) by fit-fact set, and by shape as before the sets
// (the sets' rules made stale, so ReadShapes falls back), against the full on-demand read.
func BenchmarkReadMarket(b *testing.B) {
	ctx := context.Background()
	s := marketStore(b)
	none := func([]pricing.Offer, [][]pricing.Offer, []bool) ([]ShapeNeed, error) { return nil, nil }
	stale := func(on bool) {
		v := recommend.FactsVersion()
		if on {
			v = "stale"
		}
		if _, err := s.db.ExecContext(ctx, "UPDATE facts_meta SET version = ?", v); err != nil {
			b.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name  string
		stale bool
		read  func() ([]pricing.Offer, error)
	}{
		{"facts/on-demand", false, func() ([]pricing.Offer, error) { return s.ReadShapes(ctx, Query{Purchase: pricing.OnDemand}, none) }},
		{"shapes/on-demand", true, func() ([]pricing.Offer, error) { return s.ReadShapes(ctx, Query{Purchase: pricing.OnDemand}, none) }},
		{"full-scan/on-demand", false, func() ([]pricing.Offer, error) { return s.Offers(ctx, Query{Purchase: pricing.OnDemand}) }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			stale(tt.stale)
			defer stale(false)
			n := 0
			for b.Loop() {
				out, err := tt.read()
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.ReportMetric(float64(n), "offers")
		})
	}
}

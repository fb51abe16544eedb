package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

var t0 = time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)

func at(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }

func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "data", "picker.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mk(provider, region, typ string, purchase pricing.Purchase, price float64) pricing.Offer {
	return pricing.Offer{
		Provider: provider, Region: region, InstanceType: typ, Purchase: purchase, PriceUSDHr: price,
		GPUModel: "A100", GPUCount: 8, GPUMemGiB: 40, VCPUs: 96, RAMGiB: 1152, Currency: "USD", Source: pricing.SourceAPI,
	}
}

// observed sets every offer's ObservedAt, as an adapter does with its fetch time.
func observed(t time.Time, offers ...pricing.Offer) []pricing.Offer {
	out := slices.Clone(offers)
	for i := range out {
		out[i].ObservedAt = t
	}
	return out
}

func counts(t *testing.T, s *Store) Counts {
	t.Helper()
	c, err := s.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func current(t *testing.T, s *Store, q Query) map[string]float64 {
	t.Helper()
	offers, err := s.Offers(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, o := range offers {
		m[o.Key().String()] = o.PriceUSDHr
	}
	return m
}

func history(t *testing.T, s *Store, q HistoryQuery) []string {
	t.Helper()
	pts, err := s.History(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pts {
		to := "open"
		if p.ValidTo != nil {
			to = p.ValidTo.Sub(t0).String()
		}
		out = append(out, strings.Join([]string{p.Region, string(p.Purchase), ftoa(p.PriceUSDHr), p.ValidFrom.Sub(t0).String(), to}, " "))
	}
	return out
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func equal[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func TestIntervalLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	var (
		a = mk("aws", "us-east-1", "p4d.24xlarge", pricing.OnDemand, 10)
		b = mk("aws", "us-east-1", "g5.xlarge", pricing.OnDemand, 1)
		c = mk("aws", "us-west-2", "p4d.24xlarge", pricing.OnDemand, 11)
		d = mk("aws", "us-east-1", "p4d.24xlarge", pricing.Spot, 3)
	)
	write := func(h int, regions []string, offers ...pricing.Offer) WriteResult {
		t.Helper()
		r, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: observed(at(h), offers...), Regions: regions, Started: at(h), Finished: at(h)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// 1. First write: four new offers, four open intervals, one run.
	r := write(0, nil, a, b, c, d)
	equal(t, "new", r.New, 4)
	equal(t, "price rows", counts(t, s).Prices, 4)
	equal(t, "runs", counts(t, s).Runs, 1)

	// 2. Same prices again (with float noise): no price row, last_seen moves.
	noisy := a
	noisy.PriceUSDHr += 1e-9
	r = write(1, nil, noisy, b, c, d)
	equal(t, "unchanged", r.Unchanged, 4)
	equal(t, "prices changed", r.PricesChanged(), 0)
	equal(t, "price rows after rewrite", counts(t, s).Prices, 4)
	got, _ := s.Offers(ctx, Query{Providers: []string{"aws"}, Limit: 1})
	equal(t, "observed = last seen", got[0].ObservedAt, at(1))
	equal(t, "source", got[0].Source, pricing.SourceAPI)

	// 3. A's price changes: old interval closed, new opened at the same instant.
	a2 := a
	a2.PriceUSDHr = 12
	r = write(2, nil, a2, b, c, d)
	equal(t, "changed", r.Changed, 1)
	equal(t, "price rows after change", counts(t, s).Prices, 5)
	equal(t, "A history", strings.Join(history(t, s, HistoryQuery{Provider: "aws", InstanceType: "P4D.24xlarge", Region: "us-east-1", Purchase: pricing.OnDemand}), "|"),
		"us-east-1 on-demand 10 0s 2h0m0s|us-east-1 on-demand 12 2h0m0s open")

	// 4. B no longer listed: closed, not deleted.
	r = write(3, nil, a2, c, d)
	equal(t, "closed", r.Closed, 1)
	cur := current(t, s, Query{})
	if _, ok := cur[b.Key().String()]; ok {
		t.Errorf("closed offer B still current: %v", cur)
	}
	equal(t, "offers kept", counts(t, s).Offers, 4)
	equal(t, "current", counts(t, s).CurrentOffers, 3)
	equal(t, "B history closed", strings.Join(history(t, s, HistoryQuery{Provider: "aws", InstanceType: "g5.xlarge"}), "|"),
		"us-east-1 on-demand 1 0s 3h0m0s")

	// 5. B listed again at a new price: reopened.
	b2 := b
	b2.PriceUSDHr = 1.5
	r = write(4, nil, a2, b2, c, d)
	equal(t, "reopened", r.Reopened, 1)
	equal(t, "B history reopened", strings.Join(history(t, s, HistoryQuery{Provider: "aws", InstanceType: "g5.xlarge"}), "|"),
		"us-east-1 on-demand 1 0s 3h0m0s|us-east-1 on-demand 1.5 4h0m0s open")

	// 6. A refresh covering only us-east-1 that lacks D closes D but leaves
	// us-west-2's C current.
	r = write(5, []string{"us-east-1"}, a2, b2)
	equal(t, "region-scoped closed", r.Closed, 1)
	cur = current(t, s, Query{})
	equal(t, "C kept", cur[c.Key().String()], 11.0)
	if _, ok := cur[d.Key().String()]; ok {
		t.Errorf("D should be closed: %v", cur)
	}
	// An empty non-nil Regions closes nothing.
	r = write(6, []string{}, a2)
	equal(t, "empty regions closes nothing", r.Closed, 0)
	equal(t, "current after empty regions", counts(t, s).CurrentOffers, 3)

	// 7. A failing write (an invalid offer after a price change in the same batch)
	// rolls back: A keeps 12, no rows added, no run recorded.
	before := counts(t, s)
	a3 := a2
	a3.PriceUSDHr = 99
	bad := mk("aws", "us-east-1", "broken", pricing.OnDemand, 0)
	_, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: observed(at(7), a3, bad, b2), Finished: at(7)})
	if pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("got %v, want an Invalid error naming the offer", err)
	}
	equal(t, "counts after failed write", counts(t, s), before)
	equal(t, "A after failed write", current(t, s, Query{})[a.Key().String()], 12.0)

	// 8. Failures keep prices and count up; a success resets the count.
	for i, msg := range []string{"timeout", "HTTP 503"} {
		if err := s.RecordFailure(ctx, "aws", at(8+i), at(8+i), errors.New(msg)); err != nil {
			t.Fatal(err)
		}
	}
	st := providerStatus(t, s, "aws")
	equal(t, "consecutive failures", st.ConsecutiveFailures, 2)
	equal(t, "last error", st.LastError, "HTTP 503")
	equal(t, "last success", st.LastSuccess, at(6))
	equal(t, "last attempt", st.LastAttempt, at(9))
	equal(t, "offers kept through failures", st.Offers, 3)
	equal(t, "prices after failures", counts(t, s).Prices, before.Prices)
	write(10, nil, a2, b2, c)
	st = providerStatus(t, s, "aws")
	equal(t, "failures after success", st.ConsecutiveFailures, 0)
	equal(t, "error after success", st.LastError, "")
}

func providerStatus(t *testing.T, s *Store, name string) ProviderStatus {
	t.Helper()
	all, err := s.Providers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if p.Provider == name {
			return p
		}
	}
	t.Fatalf("provider %s not in %+v", name, all)
	return ProviderStatus{}
}

func TestWriteRejects(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	a := mk("aws", "us-east-1", "p4d.24xlarge", pricing.OnDemand, 10)
	tests := []struct {
		name     string
		provider string
		offers   []pricing.Offer
		want     string
	}{
		{"empty snapshot", "aws", nil, "no offers"},
		{"no provider", "", []pricing.Offer{a}, "provider name is empty"},
		{"other provider's offer", "gcp", []pricing.Offer{a}, `belongs to provider "aws"`},
		{"duplicate", "aws", []pricing.Offer{a, a}, "listed twice"},
		{"invalid", "aws", []pricing.Offer{mk("aws", "r", "t", "reserved", 1)}, "not on-demand or spot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.WriteSnapshot(ctx, tt.provider, WriteInput{Offers: tt.offers})
			if pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want Invalid containing %q", err, tt.want)
			}
		})
	}
	if e, _ := s.Empty(ctx); !e {
		t.Errorf("rejected writes left rows behind: %+v", counts(t, s))
	}
}

func TestCancelledWriteRollsBack(t *testing.T) {
	s := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: []pricing.Offer{mk("aws", "r", "t", pricing.OnDemand, 1)}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if e, _ := s.Empty(context.Background()); !e {
		t.Error("cancelled write left rows")
	}
}

func TestWriteSnapshotsIfEmpty(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	w := []ProviderWrite{
		{"aws", WriteInput{Offers: []pricing.Offer{mk("aws", "r", "t", pricing.OnDemand, 1)}}},
		{"gcp", WriteInput{Offers: []pricing.Offer{mk("gcp", "r", "t", pricing.OnDemand, 2)}}},
	}
	res, wrote, err := s.WriteSnapshotsIfEmpty(ctx, w)
	if err != nil || !wrote || len(res) != 2 {
		t.Fatalf("first: %v %v %v", res, wrote, err)
	}
	_, wrote, err = s.WriteSnapshotsIfEmpty(ctx, w)
	if err != nil || wrote {
		t.Fatalf("second: wrote=%v err=%v, want no write", wrote, err)
	}
	equal(t, "runs", counts(t, s).Runs, 2)
	// A failure in the second provider's batch rolls back the first's too.
	s2 := openTest(t)
	w[1].Input.Offers[0].Currency = ""
	if _, err := s2.WriteSnapshots(ctx, w); err == nil {
		t.Fatal("want an error")
	}
	if e, _ := s2.Empty(ctx); !e {
		t.Error("a failed multi-provider write left rows")
	}
}

func TestOffersFilters(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	o := func(p, region, typ, model string, count, mem, price float64, purchase pricing.Purchase) pricing.Offer {
		return pricing.Offer{Provider: p, Region: region, InstanceType: typ, GPUModel: model, GPUCount: count, GPUMemGiB: mem,
			Purchase: purchase, PriceUSDHr: price, Currency: "USD", Source: pricing.SourceSnapshot, ObservedAt: t0}
	}
	byProvider := map[string][]pricing.Offer{
		"aws": {
			o("aws", "us-east-1", "p5.48xlarge", "H100", 8, 80, 55, pricing.OnDemand),
			o("aws", "us-east-1", "g6f.large", "L4", 0.125, 22.35, 0.2, pricing.OnDemand),
			o("aws", "us-east-1", "g6.xlarge", "L4", 1, 22.35, 0.8, pricing.OnDemand),
			o("aws", "us-west-2", "g6.xlarge", "L4", 1, 22.35, 0.8, pricing.OnDemand),
		},
		"lambda": {
			o("lambda", "us-east-1", "gpu_1x_h100_pcie", "H100-PCIE", 1, 80, 2.5, pricing.OnDemand),
			o("lambda", "us-east-1", "gpu_8x_a100", "A100", 8, 40, 10, pricing.OnDemand),
		},
		"runpod": {
			o("runpod", "US", "1x_H100", "H100", 1, 80, 2.5, pricing.OnDemand),
			o("runpod", "US", "1x_H100", "H100", 1, 80, 1.2, pricing.Spot),
			o("runpod", "US", "2x_H100", "H100", 2, 80, 5.2, pricing.OnDemand),
		},
	}
	for p, offers := range byProvider {
		if _, err := s.WriteSnapshot(ctx, p, WriteInput{Offers: offers, Finished: t0}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		q    Query
		want []string
	}{
		{"all, cheapest first, ties by key", Query{}, []string{
			"aws/us-east-1/g6f.large/on-demand", "aws/us-east-1/g6.xlarge/on-demand", "aws/us-west-2/g6.xlarge/on-demand",
			"runpod/US/1x_H100/spot", "lambda/us-east-1/gpu_1x_h100_pcie/on-demand", "runpod/US/1x_H100/on-demand",
			"runpod/US/2x_H100/on-demand", "lambda/us-east-1/gpu_8x_a100/on-demand", "aws/us-east-1/p5.48xlarge/on-demand"}},
		{"gpu model case-insensitive", Query{GPUModels: []string{"h100"}, Purchase: pricing.OnDemand}, []string{
			"runpod/US/1x_H100/on-demand", "runpod/US/2x_H100/on-demand", "aws/us-east-1/p5.48xlarge/on-demand"}},
		{"gpu model alias normalised", Query{GPUModels: []string{"NVIDIA H100 PCIe"}}, []string{"lambda/us-east-1/gpu_1x_h100_pcie/on-demand"}},
		{"providers and regions", Query{Providers: []string{"AWS"}, Regions: []string{"US-WEST-2"}}, []string{"aws/us-west-2/g6.xlarge/on-demand"}},
		{"spot only", Query{Purchase: "spot"}, []string{"runpod/US/1x_H100/spot"}},
		{"any purchase", Query{Purchase: "any", GPUModels: []string{"H100"}, Providers: []string{"runpod"}, Limit: 2}, []string{
			"runpod/US/1x_H100/spot", "runpod/US/1x_H100/on-demand"}},
		{"min vram per gpu excludes a slice of a big GPU", Query{MinVRAMGiB: 20, MaxPriceUSDHr: 1}, []string{
			"aws/us-east-1/g6.xlarge/on-demand", "aws/us-west-2/g6.xlarge/on-demand"}},
		{"min total vram", Query{MinTotalVRAMGiB: 300}, []string{"lambda/us-east-1/gpu_8x_a100/on-demand", "aws/us-east-1/p5.48xlarge/on-demand"}},
		{"max gpus and max price", Query{MaxGPUs: 1, MaxPriceUSDHr: 2.5, MinVRAMGiB: 40}, []string{
			"runpod/US/1x_H100/spot", "lambda/us-east-1/gpu_1x_h100_pcie/on-demand", "runpod/US/1x_H100/on-demand"}},
		{"exclude fractional", Query{ExcludeFractional: true, GPUModels: []string{"L4"}, Limit: 1}, []string{"aws/us-east-1/g6.xlarge/on-demand"}},
		{"price per gpu", Query{Sort: SortPricePerGPU, GPUModels: []string{"H100", "A100"}, Purchase: pricing.OnDemand}, []string{
			"lambda/us-east-1/gpu_8x_a100/on-demand", "runpod/US/1x_H100/on-demand", "runpod/US/2x_H100/on-demand", "aws/us-east-1/p5.48xlarge/on-demand"}},
		{"price per gib", Query{Sort: SortPricePerGiB, Providers: []string{"aws"}}, []string{
			"aws/us-east-1/g6.xlarge/on-demand", "aws/us-west-2/g6.xlarge/on-demand", "aws/us-east-1/g6f.large/on-demand", "aws/us-east-1/p5.48xlarge/on-demand"}},
		{"nothing", Query{GPUModels: []string{"B200"}}, nil},
		// Issue 26: an H100 is an 80 GB part with 79.19 GiB usable.
		{"min vram 80 GiB: no H100", Query{GPUModels: []string{"H100"}, MinVRAMGiB: 80}, nil},
		{"min vram 80 GB: the H100 class", Query{GPUModels: []string{"H100"}, MinVRAMGB: 80, Purchase: pricing.OnDemand}, []string{
			"runpod/US/1x_H100/on-demand", "runpod/US/2x_H100/on-demand", "aws/us-east-1/p5.48xlarge/on-demand"}},
		{"min vram GB: a slice has its share of the class", Query{GPUModels: []string{"L4"}, MinVRAMGB: 24}, []string{
			"aws/us-east-1/g6.xlarge/on-demand", "aws/us-west-2/g6.xlarge/on-demand"}},
		{"min total vram GB", Query{MinTotalVRAMGB: 640, Limit: 1}, []string{"aws/us-east-1/p5.48xlarge/on-demand"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			offers, err := s.Offers(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range offers {
				got = append(got, o.Key().String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %v\nwant\n  %v", got, tt.want)
			}
		})
	}
	if _, err := s.Offers(ctx, Query{Sort: "cheapest"}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("bad sort: got %v, want Invalid", err)
	}
	if _, err := s.Offers(ctx, Query{Purchase: "reserved"}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("bad purchase: got %v, want Invalid", err)
	}
	// Offers round-trip every fact.
	got, _ := s.Offers(ctx, Query{Providers: []string{"aws"}, Limit: 1})
	want := byProvider["aws"][1].WithUsableMemory() // memory read back is the GPU's usable figure
	if got[0] != want || want.GPUMemReportedGiB != byProvider["aws"][1].GPUMemGiB {
		t.Errorf("round trip:\n got %+v\nwant %+v", got[0], want)
	}
	if !got[0].Fractional() {
		t.Error("fractional slice lost its fraction")
	}
}

func TestHistoryNotFound(t *testing.T) {
	s := openTest(t)
	_, err := s.History(context.Background(), HistoryQuery{Provider: "aws", InstanceType: "p9.huge", Region: "mars-1"})
	if pricing.ErrorCode(err) != pricing.NotFound || !strings.Contains(err.Error(), "p9.huge") || !strings.Contains(err.Error(), "mars-1") {
		t.Errorf("got %v, want NotFound naming the instance type and region", err)
	}
	if _, err := s.History(context.Background(), HistoryQuery{Provider: "aws"}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("missing instance type: got %v, want Invalid", err)
	}
}

func TestProvidersStatus(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	snap := mk("lambda", "us-east-1", "gpu_1x_a100", pricing.OnDemand, 1.3)
	snap.Source, snap.ObservedAt = pricing.SourceSnapshot, at(0)
	api := mk("lambda", "us-west-1", "gpu_1x_a100", pricing.OnDemand, 1.2)
	api.ObservedAt = at(5)
	if _, err := s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: []pricing.Offer{snap, api}, Started: at(4), Finished: at(5)}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordFailure(ctx, "gcp", at(6), at(7), errors.New("no credentials")); err != nil {
		t.Fatal(err)
	}
	all, err := s.Providers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Provider != "gcp" || all[1].Provider != "lambda" {
		t.Fatalf("got %+v, want gcp and lambda", all)
	}
	g, l := all[0], all[1]
	equal(t, "gcp failures", g.ConsecutiveFailures, 1)
	equal(t, "gcp error", g.LastError, "no credentials")
	equal(t, "gcp never succeeded", g.LastSuccess.IsZero(), true)
	equal(t, "gcp offers", g.Offers, 0)
	equal(t, "lambda offers", l.Offers, 2)
	equal(t, "lambda oldest", l.OldestObserved, at(0))
	equal(t, "lambda newest", l.NewestObserved, at(5))
	equal(t, "lambda success", l.LastSuccess, at(5))
	equal(t, "lambda sources", strings.Join(l.Sources, ","), "api,snapshot")
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	a := mk("aws", "us-east-1", "a", pricing.OnDemand, 1)
	b := mk("aws", "us-east-1", "b", pricing.OnDemand, 1)
	for h, price := range []float64{1, 2, 3} {
		a.PriceUSDHr = price
		offers := []pricing.Offer{a}
		if h == 0 {
			offers = append(offers, b) // b is listed once, then closed at hour 1
		}
		if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: observed(at(h*10), offers...), Finished: at(h * 10)}); err != nil {
			t.Fatal(err)
		}
	}
	// a: [0,10) 1, [10,20) 2, [20,-) 3; b: [0,10).
	equal(t, "prices before", counts(t, s).Prices, 4)
	n, err := s.Prune(ctx, at(15))
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "pruned", n, int64(2)) // a's first interval and b's only one
	c := counts(t, s)
	equal(t, "prices after", c.Prices, 2)
	equal(t, "offers after (b dropped)", c.Offers, 1)
	equal(t, "a history", strings.Join(history(t, s, HistoryQuery{Provider: "aws", InstanceType: "a"}), "|"),
		"us-east-1 on-demand 2 10h0m0s 20h0m0s|us-east-1 on-demand 3 20h0m0s open")
	// Pruning far in the future never drops a current price.
	if _, err := s.Prune(ctx, at(1000)); err != nil {
		t.Fatal(err)
	}
	equal(t, "current survives", current(t, s, Query{})[a.Key().String()], 3.0)
	if err := s.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("this is not a database\x00\xff", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "regular")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		code pricing.Code
	}{
		{"corrupt file", garbage, pricing.Invalid},
		{"path under a regular file", filepath.Join(file, "sub", "picker.db"), pricing.Unavailable},
		{"directory", dir, pricing.Invalid},
		{"empty path", "", pricing.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(context.Background(), tt.path)
			if err == nil {
				s.Close()
				t.Fatal("want an error")
			}
			if pricing.ErrorCode(err) != tt.code || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("got %q (code %s), want code %s naming %q", err, pricing.ErrorCode(err), tt.code, tt.path)
			}
		})
	}
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "picker.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: []pricing.Offer{mk("aws", "r", "t", pricing.OnDemand, 1)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil || v != ms[len(ms)-1].version {
		t.Errorf("schema version %d, %v; want %d (every embedded migration applied once)", v, err, ms[len(ms)-1].version)
	}
	if e, _ := s.Empty(ctx); e {
		t.Error("reopened database lost its rows")
	}
	// A database from a newer picker is refused, not half-understood. A newer picker
	// records its migration and marks the file with its version (Store.init).
	if _, err := s.db.Exec("INSERT INTO schema_migrations VALUES (999, '0999_future.sql', 0); PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("got %v, want a newer-schema error", err)
	}
}

// TestReadersSeeWholeSnapshots: while a refresh writes (one transaction, WAL), readers
// are neither blocked nor shown a mix: every read sees all old prices or all new ones.
func TestReadersSeeWholeSnapshots(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	offers, doubled := writeDoubled(t, s, 3000)
	done := make(chan error, 1)
	go func() {
		_, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: doubled, Finished: at(1)})
		done <- err
	}()
	reads, mixed := 0, 0
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		got, err := s.Offers(ctx, Query{})
		if err != nil {
			t.Fatalf("read during write: %v", err)
		}
		old, new := bySnapshot(got)
		if old != 0 && new != 0 || old+new != len(offers) {
			mixed++
		}
		reads++
	}
	if mixed > 0 {
		t.Errorf("%d of %d reads saw a mix of snapshots", mixed, reads)
	}
	t.Logf("%d reads during the write", reads)
}

func TestHistoryByGPUModel(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	a100 := mk("lambda", "us-east-1", "gpu_8x_a100", pricing.OnDemand, 10)
	h100 := mk("lambda", "us-east-1", "gpu_8x_h100", pricing.OnDemand, 20)
	h100.GPUModel = "H100"
	if _, err := s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: observed(at(1), a100, h100), Started: at(1), Finished: at(1)}); err != nil {
		t.Fatal(err)
	}
	a100.PriceUSDHr = 9
	if _, err := s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: observed(at(2), a100, h100), Started: at(2), Finished: at(2)}); err != nil {
		t.Fatal(err)
	}
	// The A100 offer changed once (two intervals); the H100 offer never did.
	pts, err := s.History(ctx, HistoryQuery{GPUModel: "a100"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[0].PriceUSDHr != 10 || pts[1].PriceUSDHr != 9 || pts[0].GPUModel != "A100" || pts[0].GPUCount != 8 {
		t.Errorf("got %+v, want the A100 offer's two intervals, 10 then 9", pts)
	}
	if _, err := s.History(ctx, HistoryQuery{GPUModel: "B300"}); pricing.ErrorCode(err) != pricing.NotFound {
		t.Errorf("unknown model: got %v, want NotFound", err)
	}
}

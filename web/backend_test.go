package web

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/refresh"
	"github.com/pickergpu/picker/store"
)

// testBackend answers from a real store seeded with the embedded snapshot and from
// fit, binding a subset of the flags the way cmd/picker does. cmd/picker's own
// Backend (the CLI's run functions) is tested end to end in cmd/picker; this one lets
// the pages be tested without the command layer.
type testBackend struct {
	st  *store.Store
	now time.Time
}

// changedOffer is the snapshot offer whose price the test backend changes twice, so
// its history has three intervals.
var changedOffer = pricing.Key{Provider: "lambda", Region: "us-east-1", InstanceType: "gpu_1x_h100_pcie", Purchase: pricing.OnDemand}

func newTestBackend(t testing.TB) *testBackend {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "picker.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := refresh.EnsureSeeded(ctx, st, refresh.Snapshot); err != nil {
		t.Fatal(err)
	}
	b := &testBackend{st: st, now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	// Two live refreshes of lambda, each changing one offer's price: the history page
	// then has stored changes to draw.
	all, err := st.Offers(ctx, store.Query{Providers: []string{"lambda"}})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(all, func(o pricing.Offer) bool { return o.Key() == changedOffer })
	if i < 0 {
		t.Fatalf("snapshot has no %v; pick another offer to change", changedOffer)
	}
	for step, factor := range []float64{1.10, 0.95} {
		at := b.now.Add(time.Duration(step-2) * 24 * time.Hour)
		offers := slices.Clone(all)
		for j := range offers {
			offers[j].Source, offers[j].ObservedAt = pricing.SourceAPI, at
		}
		offers[i].PriceUSDHr = roundCents(all[i].PriceUSDHr * factor)
		all[i].PriceUSDHr = offers[i].PriceUSDHr
		if _, err := st.WriteSnapshot(ctx, "lambda", store.WriteInput{Offers: offers, Started: at, Finished: at}); err != nil {
			t.Fatal(err)
		}
	}
	// A live refresh of runpod that failed: its prices stay the snapshot's.
	if err := st.RecordFailure(ctx, failedProvider, b.now.Add(-3*time.Hour), b.now.Add(-3*time.Hour), errors.New("401 Unauthorized")); err != nil {
		t.Fatal(err)
	}
	return b
}

// failedProvider is the snapshot provider whose one live refresh failed.
const failedProvider = "runpod"

func roundCents(v float64) float64 { return float64(int(v*100+0.5)) / 100 }

func (b *testBackend) query(p url.Values, purchaseDefault string) (store.Query, error) {
	q := store.Query{Providers: splitComma(p.Get("provider")), Regions: splitComma(p.Get("region"))}
	for _, g := range splitComma(p.Get("gpu-model")) {
		canon, ok := pricing.NormalizeGPU(g, 0)
		if !ok {
			return q, paramErr("gpu-model", "--gpu-model %q: unknown GPU model", g)
		}
		q.GPUModels = append(q.GPUModels, canon)
	}
	purchase := p.Get("purchase")
	if purchase == "" {
		purchase = purchaseDefault
	}
	if purchase != "any" {
		pu, err := pricing.ParsePurchase(purchase)
		if err != nil {
			return q, pricing.WithParam(err, "purchase")
		}
		q.Purchase = pu
	}
	sorted, err := store.ParseSort(p.Get("sort"))
	if err != nil {
		return q, err
	}
	q.Sort, q.Desc, q.Search = sorted, p.Get("dir") == "desc", p.Get("search")
	for name, dst := range map[string]*float64{"min-vram": &q.MinVRAMGiB, "max-price": &q.MaxPriceUSDHr, "max-gpus": &q.MaxGPUs} {
		if v := p.Get(name); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return q, paramErr(name, "--%s %q: not a number", name, v)
			}
			*dst = f
		}
	}
	return q, nil
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (b *testBackend) Recommend(ctx context.Context, p url.Values) (*recommend.Recommendation, error) {
	vals := map[string]string{}
	for _, jp := range fit.JobParams {
		k := jp.Name
		if v := p.Get(k); v != "" {
			vals[k] = v
		}
	}
	job, err := fit.ParseJob(vals)
	if err != nil {
		return nil, err
	}
	m, ok, err := model.CatalogModel(p.Get("model"))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, paramErr("model", "--model %q: not in the catalog", p.Get("model"))
	}
	q, err := b.query(p, "on-demand")
	if err != nil {
		return nil, err
	}
	offers, err := b.st.Offers(ctx, q)
	if err != nil {
		return nil, err
	}
	top := 10
	if v := p.Get("top"); v != "" {
		top, _ = strconv.Atoi(v)
	}
	_, pinned := vals["gpus"]
	return recommend.Recommend(recommend.RecommendInput{Model: m, Job: job, PinGPUs: pinned, Offers: offers, HeadroomPct: recommend.DefaultHeadroomPct,
		Rank: recommend.Rank(p.Get("rank")), Top: top})
}

func (b *testBackend) Offers(ctx context.Context, p url.Values) ([]pricing.Offer, error) {
	q, err := b.query(p, "any")
	if err != nil {
		return nil, err
	}
	return b.st.Offers(ctx, q)
}

func (b *testBackend) OffersPage(ctx context.Context, p url.Values, pq PageQuery) (store.Page, error) {
	q, err := b.query(p, "any")
	if err != nil {
		return store.Page{}, err
	}
	q.GPUCount, q.After, q.Limit = pq.GPUs, pq.After, pq.Limit
	return b.st.OffersPage(ctx, q)
}

func (b *testBackend) History(ctx context.Context, q store.HistoryQuery) ([]store.PricePoint, error) {
	return b.st.History(ctx, q)
}

func (b *testBackend) Providers(ctx context.Context) ([]Provider, error) {
	stats, err := b.st.Providers(ctx)
	if err != nil {
		return nil, err
	}
	var out []Provider
	for _, s := range stats {
		p := Provider{Name: s.Provider, Offers: s.Offers, Sources: s.Sources, LastError: s.LastError,
			ConsecutiveFailures: s.ConsecutiveFailures, NewestObserved: s.NewestObserved}
		// As cmd/picker's liveRuns: a provider whose offers are all the snapshot's was
		// never refreshed live; its one successful run is the seed.
		live := slices.ContainsFunc(s.Sources, func(src string) bool { return src != pricing.SourceSnapshot })
		if t := s.LastSuccess; !t.IsZero() && live {
			p.LastSuccess = &t
		} else if !t.IsZero() {
			p.SnapshotDate = &t
		}
		if t := s.LastAttempt; !t.IsZero() && (live || s.ConsecutiveFailures > 0) {
			p.LastAttempt, p.LastAttemptStatus = &t, "ok"
			if s.ConsecutiveFailures > 0 {
				p.LastAttemptStatus = "failed"
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func (b *testBackend) Models(context.Context) ([]string, error) {
	var names []string
	for _, e := range model.Catalog() {
		names = append(names, e.Name)
	}
	return names, nil
}

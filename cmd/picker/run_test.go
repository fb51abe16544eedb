package main

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/store"
)

// fakeStore answers Offers from a fixed list and records the query, so run functions are
// tested without SQLite.
type fakeStore struct {
	offers []pricing.Offer
	got    store.Query
}

func (f *fakeStore) Offers(_ context.Context, q store.Query) ([]pricing.Offer, error) {
	f.got = q
	return f.offers, nil
}

// catalogOnly resolves catalog names only: run-function tests never touch files or the Hub.
func catalogOnly(_ context.Context, ref, _ string) (*model.Model, error) {
	m, ok, err := model.CatalogModel(ref)
	if !ok && err == nil {
		err = pricing.Errorf(pricing.NotFound, "unknown model %q", ref)
	}
	return m, err
}

func h100(provider, source string, price float64, observed time.Time) pricing.Offer {
	return pricing.Offer{Provider: provider, Region: "r", InstanceType: provider + "-h100", GPUModel: "H100", GPUCount: 1, GPUMemGiB: 80,
		VCPUs: 16, RAMGiB: 200, Purchase: pricing.OnDemand, PriceUSDHr: price, Currency: "USD", ObservedAt: observed, Source: source}
}

func newFakeRecommend(fs *fakeStore, vals url.Values) (*RecommendOptions, error) {
	o := &RecommendOptions{Resolve: catalogOnly, Store: func(context.Context) (offerStore, error) { return fs, nil },
		Now: func() time.Time { return fixedNow }, StaleAfter: 7 * 24 * time.Hour}
	return o, o.Bind(QueryLookup(vals))
}

func TestRunRecommendFakeStore(t *testing.T) {
	old := fixedNow.Add(-30 * 24 * time.Hour)
	fs := &fakeStore{offers: []pricing.Offer{h100("b", pricing.SourceSnapshot, 3, old), h100("a", pricing.SourceSnapshot, 2, old)}}
	o, err := newFakeRecommend(fs, url.Values{"model": {"llama-2-7b"}, "task": {"qlora"}, "max-gpus": {"4"}, "gpu-model": {"h100"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := RunRecommend(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// Bound defaults and the filters reach the store query.
	if fs.got.MaxGPUs != 4 || fs.got.Purchase != pricing.OnDemand || len(fs.got.GPUModels) != 1 || fs.got.GPUModels[0] != "H100" {
		t.Errorf("store query = %+v; want max 4 GPUs, on-demand, H100", fs.got)
	}
	if len(out.Offers) != 2 || out.Offers[0].Provider != "a" || out.HeadroomPct != recommend.DefaultHeadroomPct {
		t.Fatalf("offers = %+v, headroom %v; want a then b at the default headroom", out.Offers, out.HeadroomPct)
	}
	w := strings.Join(out.Warnings, "\n")
	for _, want := range []string{"a (30 d), b (30 d)", "embedded snapshot", "picker refresh"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
	if noFit(out) != nil {
		t.Errorf("noFit with offers = %v", noFit(out))
	}
}

func TestRunRecommendNoOffersHint(t *testing.T) {
	o, err := newFakeRecommend(&fakeStore{}, url.Values{"model": {"llama-2-7b"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := RunRecommend(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if out.Offers == nil || len(out.Offers) != 0 || !strings.HasPrefix(out.NearestMiss, recommend.NoOffersMiss) || !strings.Contains(out.NearestMiss, "picker refresh") {
		t.Errorf("offers %v, nearest miss %q; want [] and the refresh hint", out.Offers, out.NearestMiss)
	}
	if err := noFit(out); err == nil {
		t.Error("noFit = nil with no offers")
	}
}

func TestFreshnessWarnings(t *testing.T) {
	fresh := recommend.Fit{Offer: h100("live", pricing.SourceAPI, 1, fixedNow.Add(-time.Hour))}
	stale := recommend.Fit{Offer: h100("old", pricing.SourceSnapshot, 1, fixedNow.Add(-10*24*time.Hour))}
	for _, tt := range []struct {
		name  string
		fits  []recommend.Fit
		after time.Duration
		want  int
	}{
		{"disabled", []recommend.Fit{stale}, 0, 0},
		{"all fresh and live", []recommend.Fit{fresh}, 7 * 24 * time.Hour, 0},
		{"stale snapshot only", []recommend.Fit{stale}, 7 * 24 * time.Hour, 2},
		{"stale beside live", []recommend.Fit{stale, fresh}, 7 * 24 * time.Hour, 1},
		{"nothing fits", nil, 7 * 24 * time.Hour, 0},
	} {
		if got := freshnessWarnings(tt.fits, fixedNow, tt.after); len(got) != tt.want {
			t.Errorf("%s: %q; want %d warnings", tt.name, got, tt.want)
		}
	}
}

// Every bad value comes back as an error naming its parameter as data, from the job
// flags, the filters, the ranking knobs and the model resolver alike.
func TestBindErrorsNameTheParameter(t *testing.T) {
	for _, tt := range []struct{ key, value string }{
		{"task", "pretrain"}, {"batch", "0"}, {"grad-ckpt", "maybe"}, {"resolution", "7x7"},
		{"gpu-model", "H101"}, {"purchase", "reserved"}, {"max-price", "-1"},
		{"top", "0"}, {"rank", "fastest"}, {"headroom", "200"}, {"tokens", "lots"}, {"max-gpus", "two"},
	} {
		_, err := newFakeRecommend(&fakeStore{}, url.Values{"model": {"llama-2-7b"}, tt.key: {tt.value}})
		if got := pricing.ErrorParam(err); got != tt.key || pricing.ErrorCode(err) != pricing.Invalid {
			t.Errorf("%s=%s: param %q code %s (%v); want %q invalid", tt.key, tt.value, got, pricing.ErrorCode(err), err, tt.key)
		}
	}
	o, _ := newFakeRecommend(&fakeStore{}, url.Values{"model": {"no-such-model"}})
	if _, err := RunRecommend(context.Background(), o); err == nil {
		t.Error("unknown model: no error")
	}
	if err := CheckValues(url.Values{"limit": {"1", "2"}}, (&OffersOptions{}).params()); pricing.ErrorParam(err) != "limit" {
		t.Errorf("repeated scalar: %v", err)
	}
	if err := CheckValues(url.Values{"provider": {"a", "b"}}, (&OffersOptions{}).params()); err != nil {
		t.Errorf("repeated list: %v", err)
	}
}

func TestRunOffersFakeStore(t *testing.T) {
	fs := &fakeStore{}
	o := &OffersOptions{Store: func(context.Context) (offerStore, error) { return fs, nil }}
	if err := o.Bind(QueryLookup(url.Values{"provider": {"aws", "gcp"}, "limit": {"3"}})); err != nil {
		t.Fatal(err)
	}
	offers, err := RunOffers(context.Background(), o)
	if err != nil || offers == nil || len(offers) != 0 {
		t.Fatalf("offers %v, %v; want an empty non-nil list", offers, err)
	}
	if fs.got.Limit != 3 || strings.Join(fs.got.Providers, ",") != "aws,gcp" || fs.got.Sort != store.Sort("price") {
		t.Errorf("query = %+v", fs.got)
	}
}

// recommendRun prints the same answer aligned on a terminal and tab-separated on a pipe,
// with warnings on stderr, and exits 3 (noFitError) only when nothing fits.
func TestRecommendRunTerminalAndPipe(t *testing.T) {
	fs := &fakeStore{offers: []pricing.Offer{h100("a", pricing.SourceSnapshot, 2, fixedNow.Add(-48*time.Hour))}}
	for _, tty := range []bool{true, false} {
		o, err := newFakeRecommend(fs, url.Values{"model": {"llama-2-7b"}, "task": {"qlora"}})
		if err != nil {
			t.Fatal(err)
		}
		var out, errb strings.Builder
		o.IO = &IOStreams{Out: &out, ErrOut: &errb, Format: "table", TTY: tty, Now: func() time.Time { return fixedNow }}
		if err := recommendRun(context.Background(), o); err != nil {
			t.Fatalf("tty %v: %v", tty, err)
		}
		row := strings.Split(out.String(), "\n")[4] // summary, hf defaults (QLoRA's checkpointing), blank, header, first offer
		if got := strings.Contains(row, "\t"); got == tty {
			t.Errorf("tty %v: offer row %q has tabs %v", tty, row, got)
		}
		if !strings.Contains(row, "2 d") || !strings.HasPrefix(row, "a") {
			t.Errorf("tty %v: offer row %q; want provider a aged 2 d", tty, row)
		}
		if !strings.Contains(errb.String(), "warning: every price shown comes from the embedded snapshot") {
			t.Errorf("tty %v: stderr %q lacks the snapshot warning", tty, errb.String())
		}
	}
	o, _ := newFakeRecommend(&fakeStore{}, url.Values{"model": {"llama-2-7b"}})
	var out strings.Builder
	o.IO = &IOStreams{Out: &out, ErrOut: &out, Format: "json", Now: time.Now}
	var nf noFitError
	if err := recommendRun(context.Background(), o); !errors.As(err, &nf) || !strings.Contains(out.String(), `"nearest_miss"`) {
		t.Errorf("nothing fits: err %v, output %.200q; want noFitError after the JSON", err, out.String())
	}
}

package main

import (
	"context"
	"net/url"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/modelref"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/store"
	"github.com/pickergpu/picker/web"
)

// webBackend answers the web pages with the run functions the CLI and the /v1 API
// call, binding the page's parameters with the same binder (bindQuery, bindJobQuery:
// the parameters are the commands' flags), so a page shows what
// `picker recommend -o json` prints for the same flags.
type webBackend struct{ a *app }

var _ web.Backend = webBackend{}

// Recommend is RunRecommend; nothing fitting is an answer (the page shows the nearest
// miss), not an error.
func (b webBackend) Recommend(ctx context.Context, params url.Values) (*recommend.Recommendation, error) {
	o := b.a.newRecommendOptions()
	if err := bindJobQuery(params, o.params(), &o.JobRequest); err != nil {
		return nil, err
	}
	out, err := RunRecommend(ctx, o)
	if err != nil {
		return nil, err
	}
	return out.Recommendation, nil
}

// Offers is RunOffers, which is also what `picker export` reads.
func (b webBackend) Offers(ctx context.Context, params url.Values) ([]pricing.Offer, error) {
	o := b.a.newOffersOptions()
	if err := bindQuery(params, o.params()); err != nil {
		return nil, err
	}
	return RunOffers(ctx, o)
}

// OffersPage is RunOffersPage with the page's cut: the same binding as Offers, then
// the store's keyset page (a LIMIT after the cursor, and a count), so /offers.csv reads
// one page of a 100k-offer store, not all of it.
func (b webBackend) OffersPage(ctx context.Context, params url.Values, pq web.PageQuery) (store.Page, error) {
	o := b.a.newOffersOptions()
	if err := bindQuery(params, o.params()); err != nil {
		return store.Page{}, err
	}
	o.Filters.q.GPUCount, o.After, o.Limit = pq.GPUs, pq.After, pq.Limit
	return RunOffersPage(ctx, o)
}

// History is RunHistory, `picker history`'s.
func (b webBackend) History(ctx context.Context, q store.HistoryQuery) ([]store.PricePoint, error) {
	return b.a.RunHistory(ctx, q)
}

func (b webBackend) Providers(ctx context.Context) ([]web.Provider, error) {
	rows, err := b.a.cachedProviderRows(ctx) // provcache.go
	if err != nil {
		return nil, err
	}
	out := make([]web.Provider, len(rows))
	for i, r := range rows {
		out[i] = web.Provider{Name: r.Name, Description: r.Description, Adapter: r.Adapter, Enabled: r.Enabled, Schedule: r.Schedule,
			LastSuccess: r.LastSuccess, SnapshotDate: r.SnapshotDate, LastAttempt: r.LastAttempt, LastAttemptStatus: r.LastAttemptStatus,
			NewestObserved: r.newestObserved, Offers: r.Offers, Sources: r.Sources,
			LastError: r.LastError, ConsecutiveFailures: r.ConsecutiveFailures}
		out[i].Quotas, out[i].Capacity = webLaunch(r) // web_launch.go
	}
	return out, nil
}

// Models are the catalog's names and the Hugging Face ids whose config.json is
// cached (fetched once by an earlier question).
func (b webBackend) Models(context.Context) ([]string, error) {
	var names []string
	for _, e := range model.Catalog() {
		names = append(names, e.Name)
	}
	return append(names, modelref.CachedIDs(modelref.FromEnv(b.a.m.Getenv))...), nil
}

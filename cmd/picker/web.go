package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
	"github.com/pickergpu/picker/web"
)

// webBackend answers the web pages with the CLI's own commands, run exactly as the
// /v1 API runs them (runJSON: the query's parameters set as the command's flags, its
// -o json output decoded), so a page shows what `picker recommend -o json` prints for
// the same flags.
type webBackend struct{ a *app }

var _ web.Backend = webBackend{}

// webParamError names the parameter an error is about, for the page to mark it.
type webParamError struct {
	param string
	err   error
}

func (e webParamError) Error() string { return e.err.Error() }
func (e webParamError) Unwrap() error { return e.err }
func (e webParamError) Param() string { return e.param }

// run runs a command for a page and decodes its JSON into v. A command that found
// nothing to fit still printed its answer (exit 3 on the CLI); that is an answer here
// too.
func (b webBackend) run(ctx context.Context, build func(*app) *cobra.Command, params url.Values, v any) error {
	out, flags, err := b.a.runJSON(ctx, build, params)
	var nf noFitError
	if err != nil && !errors.As(err, &nf) {
		var fe flagError
		if errors.As(err, &fe) {
			return webParamError{fe.param, pricing.Errorf(pricing.Invalid, "%s", err.Error())}
		}
		if errors.As(err, new(usageError)) {
			err = pricing.Errorf(pricing.Invalid, "%s", err.Error())
		}
		if p := paramNamed(flags, err.Error()); p != "" {
			return webParamError{p, err}
		}
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("web: decode the command's JSON: %w", err)
	}
	return nil
}

func (b webBackend) Recommend(ctx context.Context, params url.Values) (*fit.Recommendation, error) {
	var out recommendOutput
	if err := b.run(ctx, (*app).recommendCmd, params, &out); err != nil {
		return nil, err
	}
	return out.Recommendation, nil
}

// Offers binds params with the offers command's own flags and filter validation
// (offerFilters) and reads the store as runOffers does, without the JSON round trip
// run would add (a third of the page's time at 3k offers).
func (b webBackend) Offers(ctx context.Context, params url.Values) ([]pricing.Offer, error) {
	var f offerFilters
	fs := pflag.NewFlagSet("offers", pflag.ContinueOnError)
	f.register(fs, "any")
	f.registerVRAM(fs)
	if name, err := setFlags(fs, params); err != nil {
		return nil, webParamError{name, pricing.Errorf(pricing.Invalid, "%s", err.Error())}
	}
	q, err := f.query()
	if err != nil {
		if p := paramNamed(fs, err.Error()); p != "" {
			return nil, webParamError{p, err}
		}
		return nil, err
	}
	st, err := b.a.store(ctx)
	if err != nil {
		return nil, err
	}
	return st.Offers(ctx, q)
}

// History reads the store as `picker history` does; the per-model query (GPUModel)
// has no CLI flag yet.
func (b webBackend) History(ctx context.Context, q store.HistoryQuery) ([]store.PricePoint, error) {
	st, err := b.a.store(ctx)
	if err != nil {
		return nil, err
	}
	return st.History(ctx, q)
}

func (b webBackend) Providers(ctx context.Context) ([]web.Provider, error) {
	rows, err := b.a.providerRows(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]web.Provider, len(rows))
	for i, r := range rows {
		out[i] = web.Provider{Name: r.Name, Description: r.Description, Adapter: r.Adapter, Enabled: r.Enabled, Schedule: r.Schedule,
			LastSuccess: r.LastSuccess, NewestObserved: r.newestObserved, Offers: r.Offers, Sources: r.Sources,
			LastError: r.LastError, ConsecutiveFailures: r.ConsecutiveFailures}
	}
	return out, nil
}

// Models are the catalog's names and the Hugging Face ids whose config.json is
// cached (fetched once by an earlier question).
func (b webBackend) Models(context.Context) ([]string, error) {
	var names []string
	for _, e := range fit.Catalog() {
		names = append(names, e.Name)
	}
	return append(names, cachedHubModels(fit.ResolveOptionsFromEnv().CacheDir)...), nil
}

// cachedHubModels lists the ids under the Hub cache (<dir>/<owner>/<name>/config.json).
func cachedHubModels(dir string) []string {
	if dir == "" {
		return nil
	}
	matches, _ := fs.Glob(os.DirFS(dir), "*/*/config.json")
	var ids []string
	for _, m := range matches {
		ids = append(ids, strings.TrimSuffix(filepath.ToSlash(m), "/config.json"))
	}
	slices.Sort(ids)
	return ids
}

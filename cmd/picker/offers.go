package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// offerFilters are the offer parameters shared by offers, export and recommend, bound
// straight into a store query.
type offerFilters struct {
	q store.Query
}

// params declares the filters; purchaseDefault differs between commands (recommend
// prices on-demand unless told otherwise). withVRAM adds the VRAM floors, --search and
// the order (--sort, --dir): the Compare page's filters and column headings, named alike.
func (f *offerFilters) params(purchaseDefault string, withVRAM bool) []param {
	list := func(dst *[]string) func(string) error {
		return func(v string) error { *dst = splitList([]string{v}); return nil }
	}
	ps := []param{
		{name: "gpu-model", kind: kindList, usage: "GPU models, comma list (e.g. H100,A100-80GB); see 'picker gpus'", set: f.setGPUModels},
		providerParam(&f.q.Providers, "only the offers of these providers, comma list"),
		{name: "region", kind: kindList, usage: "regions, comma list", set: list(&f.q.Regions)},
		purchaseParam(&f.q.Purchase, purchaseDefault),
		{name: "max-price", kind: kindFloat, usage: "highest price in USD per instance-hour", set: nonNegative("max-price", &f.q.MaxPriceUSDHr)},
		{name: "min-reliability", kind: kindFloat, usage: "least host reliability, 0-1 (marketplace hosts state it; offers that state none pass)", set: reliabilityFloor(&f.q.MinReliability)},
	}
	if withVRAM {
		ps = append(ps,
			param{name: "min-vram", typ: "memory", usage: "least GPU memory per GPU: usable GiB (80, 79.5GiB: what torch.cuda reports) or the datasheet class in GB (80GB: an H100, 79.2 GiB usable)",
				set: memoryFloor("min-vram", &f.q.MinVRAMGiB, &f.q.MinVRAMGB)},
			param{name: "min-total-vram", typ: "memory", usage: "least GPU memory of the whole instance: usable GiB, or the datasheet class in GB (640GB: eight 80 GB GPUs)",
				set: memoryFloor("min-total-vram", &f.q.MinTotalVRAMGiB, &f.q.MinTotalVRAMGB)},
			param{name: "search", usage: "words that must each be part of the provider, instance type, GPU model, region or zone (any case)", set: f.setSearch},
			param{name: "sort", usage: "order by " + strings.Join(store.SortNames(), ", "), def: "price", set: f.setSort},
			param{name: "dir", usage: "asc or desc (desc reverses --sort; ties stay cheapest first)", def: "asc", set: f.setDir},
		)
	}
	return ps
}

func (f *offerFilters) setGPUModels(v string) error {
	f.q.GPUModels = nil
	for _, g := range splitList([]string{v}) {
		canon, err := canonicalGPU(g)
		if err != nil {
			return err
		}
		f.q.GPUModels = append(f.q.GPUModels, canon)
	}
	return nil
}

// setSort takes a key of the one list the Compare page's headings also use
// (store.SortKeys), by name or alias (per-gpu, per-gib).
func (f *offerFilters) setSort(v string) error {
	s, err := store.ParseSort(v)
	if err != nil || strings.TrimSpace(v) == "" {
		return pricing.ParamErrorf(pricing.Invalid, "sort", "--sort %q: want one of %s", v, strings.Join(store.SortNames(), ", "))
	}
	f.q.Sort = s
	return nil
}

func (f *offerFilters) setDir(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "asc":
		f.q.Desc = false
	case "desc":
		f.q.Desc = true
	default:
		return pricing.ParamErrorf(pricing.Invalid, "dir", "--dir %q: want asc or desc", v)
	}
	return nil
}

func (f *offerFilters) setSearch(v string) error {
	if _, err := store.SearchWords(v); err != nil {
		return pricing.ParamErrorf(pricing.Invalid, "search", "--search %q: %d words, want at most %d", v, len(strings.Fields(v)), store.MaxSearchWords)
	}
	f.q.Search = v
	return nil
}

// canonicalGPU resolves a user's GPU name (any spelling the normalisation table knows)
// to the catalog's name, or fails listing the closest names.
func canonicalGPU(name string) (string, error) {
	if canon, ok := pricing.NormalizeGPU(name, 0); ok {
		return canon, nil
	}
	var names []string
	for _, g := range pricing.GPUs() {
		names = append(names, g.Model)
	}
	return "", pricing.Errorf(pricing.Invalid, "--gpu-model %q: unknown GPU model; closest: %s (see 'picker gpus')", name, strings.Join(closest(name, names, 4), ", "))
}

// closest returns up to n names nearest to s by edit distance (case-insensitive),
// preferring names that contain s.
func closest(s string, names []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	ls := strings.ToLower(s)
	var cs []cand
	for _, name := range names {
		ln := strings.ToLower(name)
		d := levenshtein(ls, ln)
		if strings.Contains(ln, ls) || strings.Contains(ls, ln) {
			d -= len(ls)
		}
		cs = append(cs, cand{name, d})
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// offerStore is what the read commands need of the store; tests hand them a fake.
type offerStore interface {
	Offers(ctx context.Context, q store.Query) ([]pricing.Offer, error)
}

// offerPager is a store that also says how a page relates to the whole (*store.Store
// does); a fake without it answers one page holding everything.
type offerPager interface {
	OffersPage(ctx context.Context, q store.Query) (store.Page, error)
}

// OffersOptions is `picker offers` (GET /v1/offers): a store query and where to read it.
type OffersOptions struct {
	Filters offerFilters
	Limit   int
	// After is the cursor of the page to start after (store.Page.Next).
	After string
	// Store opens the store on first use (lazily, so a bad flag never opens a database).
	Store func(context.Context) (offerStore, error)
	IO    *IOStreams // where offersRun prints
	// Hint, set by the run function on an empty answer, says why when the GB/GiB
	// difference does (memoryUnitsHint).
	Hint string
}

func (o *OffersOptions) params() []param {
	return append(o.Filters.params("any", true),
		param{name: "limit", kind: kindInt, usage: "show at most N offers (0 = all)", set: func(v string) (err error) { o.Limit, err = parseInt("limit", 0)(v); return }},
		param{name: "after", usage: "the page after this cursor (printed when --limit cuts the list; the API's Link header)", set: func(v string) error { o.After = strings.TrimSpace(v); return nil }})
}

// Bind sets the options from request parameters (flags, a query, a form).
func (o *OffersOptions) Bind(l Lookup) error { return BindParams(o.params(), l) }

// RunOffers lists the offers that match, in --sort's order; never nil.
func RunOffers(ctx context.Context, o *OffersOptions) ([]pricing.Offer, error) {
	p, err := RunOffersPage(ctx, o)
	return p.Offers, err
}

// RunOffersPage is RunOffers with the paging facts: the total the filters match and the
// cursor of the next page, "" on the last.
func RunOffersPage(ctx context.Context, o *OffersOptions) (store.Page, error) {
	st, err := o.Store(ctx)
	if err != nil {
		return store.Page{}, err
	}
	if err := o.Filters.checkNames(ctx, st); err != nil {
		return store.Page{}, err
	}
	q := o.Filters.q
	q.Limit, q.After = o.Limit, o.After
	var p store.Page
	if pg, ok := st.(offerPager); ok {
		p, err = pg.OffersPage(ctx, q)
	} else {
		p.Offers, err = st.Offers(ctx, q)
		p.Total = len(p.Offers)
	}
	if err != nil {
		return store.Page{}, err
	}
	if p.Offers == nil {
		p.Offers = []pricing.Offer{}
	}
	if p.Offers, err = withCapacity(ctx, st, p.Offers); err != nil { // launch.go
		return store.Page{}, err
	}
	o.Hint = memoryUnitsHint(ctx, st, q, p.Total)
	return p, nil
}

// apiOffersPage is /v1/offers' answer. The body is the page's offers as
// `picker offers -o json` prints them for the same parameters, a JSON array byte for
// byte, as it always was; the paging facts go in headers, so a client that reads only
// the body loses nothing it had and one that pages finds the next page where HTTP puts
// it (RFC 8288, as GitHub's API does).
type apiOffersPage struct {
	store.Page
	query url.Values // the request's parameters, for the next page's link
	hint  string     // OffersOptions.Hint: why an empty answer is empty (X-Picker-Hint)
}

// setHeaders writes X-Total-Count, every offer the filters match on all pages,
// X-Picker-Hint when an empty answer has one, and, when the page is cut short, Link:
// </v1/offers?the same parameters&after=CURSOR>; rel="next". Its absence is the last page.
func (p apiOffersPage) setHeaders(h http.Header) {
	h.Set("X-Total-Count", strconv.Itoa(p.Total))
	if p.hint != "" {
		h.Set("X-Picker-Hint", p.hint) // the CLI's "hint:" line
	}
	if p.Next == "" {
		return
	}
	q := url.Values{}
	for k, vs := range p.query {
		q[k] = vs
	}
	q.Set("after", p.Next)
	h.Set("Link", "</v1/offers?"+q.Encode()+`>; rel="next"`)
}

func (a *app) newOffersOptions() *OffersOptions {
	return &OffersOptions{Store: a.offerStore, IO: a.streams()}
}

// offersRun is the CLI's run function: RunOffersPage, printed to o.IO. A page that
// --limit cuts short says so on stderr, with the flag that asks for the next one (the
// output itself stays the bare list, whatever the format).
func offersRun(ctx context.Context, o *OffersOptions) error {
	p, err := RunOffersPage(ctx, o)
	if err != nil {
		return err
	}
	defer o.writeHint()
	if err := writeOffers(o.IO, p.Offers); err != nil {
		return err
	}
	if p.Next != "" && !o.IO.Quiet {
		fmt.Fprintf(o.IO.ErrOut, "%d of %d offers; the next page: --after %s\n", len(p.Offers), p.Total, p.Next)
	}
	return nil
}

// offerStore opens the store as the read commands see it.
func (a *app) offerStore(ctx context.Context) (offerStore, error) { return a.store(ctx) }

func (a *app) offersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "offers",
		Short: "List current GPU instance offers, cheapest first",
		Example: `  picker offers --gpu-model H100
  picker offers --min-vram 40 --purchase spot --sort price-per-gpu -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o := a.newOffersOptions()
			if err := o.Bind(FlagLookup(cmd.Flags())); err != nil {
				return err
			}
			return offersRun(cmd.Context(), o)
		},
	}
	registerParams(cmd.Flags(), (&OffersOptions{}).params())
	return cmd
}

// offerColumns are the CSV/JSON field names of an offer, in CONTRACT order.
var offerColumns = pricing.OfferCSVColumns

func offerCells(o pricing.Offer) []string { return pricing.OfferCSVRecord(o) }

func writeOffers(s *IOStreams, offers []pricing.Offer) error {
	w := s.Out
	switch s.Format {
	case "json":
		return writeJSON(w, offers)
	case "csv":
		rows := make([][]string, len(offers))
		for i, o := range offers {
			rows[i] = offerCells(o)
		}
		return writeCSV(w, offerColumns, rows)
	}
	if len(offers) == 0 {
		fmt.Fprintln(s.ErrOut, "no offers match")
		return nil
	}
	t := &table{headers: []string{"PROVIDER", "REGION", "INSTANCE", "GPU", "GPUS", "GiB/GPU", "VCPUS", "RAM GiB", "PURCHASE", "$/HR", "$/GPU-HR", "AGE", "SOURCE"}}
	hosts := s.Verbose && slices.ContainsFunc(offers, func(o pricing.Offer) bool { return o.Host.Stated() })
	if hosts {
		t.headers = append(t.headers, hostHeaders...) // hostfacts.go
	}
	now := s.Now()
	for _, o := range offers {
		region := o.Region
		if o.Zone != "" {
			region += " (" + o.Zone + ")"
		}
		cells := []string{o.Provider, region, o.InstanceType, o.GPUModel, num(o.GPUCount, 3), num(o.GPUMemGiB, 1), num(o.VCPUs, 1), num(o.RAMGiB, 1), string(o.Purchase),
			usd(o.PriceUSDHr), usd(o.PricePerGPU()), formatAge(now.Sub(o.ObservedAt)), o.Source}
		if hosts {
			cells = append(cells, hostCells(o.Host)...)
		}
		t.add(cells...)
	}
	if err := t.write(w, s.TTY); err != nil {
		return err
	}
	if s.TTY {
		fmt.Fprintf(s.ErrOut, "%d offers\n", len(offers))
	}
	return nil
}

// offerNamer is a store that lists the current offers' providers and regions without
// reading the offers (*store.Store does); a fake without it is read whole.
type offerNamer interface {
	OfferNames(ctx context.Context) (providers, regions []string, err error)
}

// checkNames rejects --provider and --region values no stored offer has (a typo is a
// usage error naming the closest names, not "nothing fits"). It asks only when one of
// those filters is given, and of a store.Store only the names (OfferNames), so that a
// page of a filtered list (/offers.csv) does not read every offer to check its filter.
func (f *offerFilters) checkNames(ctx context.Context, st offerStore) error {
	if len(f.q.Providers) == 0 && len(f.q.Regions) == 0 {
		return nil
	}
	provs, regions := map[string]bool{}, map[string]bool{}
	if n, ok := st.(offerNamer); ok {
		ps, rs, err := n.OfferNames(ctx)
		if err != nil {
			return err
		}
		for _, p := range ps {
			provs[p] = true
		}
		for _, r := range rs {
			regions[r] = true
		}
	} else {
		all, err := st.Offers(ctx, store.Query{})
		if err != nil {
			return err
		}
		for _, o := range all {
			provs[o.Provider] = true
			regions[o.Region] = true
		}
	}
	if len(provs) == 0 {
		return nil // nothing stored: the empty answer says to refresh
	}
	check := func(flag string, vals []string, known map[string]bool) error {
		names := make([]string, 0, len(known))
		for k := range known {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, v := range vals {
			if !known[v] {
				return pricing.ParamErrorf(pricing.Invalid, flag, "--%s %q: no stored offer has it; closest: %s", flag, v, strings.Join(closest(v, names, 4), ", "))
			}
		}
		return nil
	}
	if err := check("provider", f.q.Providers, provs); err != nil {
		return err
	}
	return check("region", f.q.Regions, regions)
}

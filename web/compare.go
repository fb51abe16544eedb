package web

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// compareFilters are the Compare page's filter form. All but gpus are `picker offers`
// (and `picker export`) flags, under the names backendParams maps; gpus (an exact GPU
// count) is applied here.
var compareFilters = []field{
	{Name: "q", Label: "Search", Kind: "text", Help: "provider, instance, GPU, region"},
	{Name: "provider", Label: "Provider", Kind: "text", List: "providers", Help: "comma list"},
	{Name: "region", Label: "Region", Kind: "text", Help: "comma list"},
	{Name: "gpu-model", Label: "GPU model", Kind: "text", List: "gpu-models", Help: "comma list"},
	{Name: "gpus", Label: "GPU count", Kind: "number", Step: "any"},
	{Name: "min-vram", Label: "Usable GiB per GPU ≥", Kind: "number", Step: "any"},
	{Name: "purchase", Label: "Purchase", Kind: "select", Options: []string{"on-demand", "spot", "any"}, Default: "any"},
	{Name: "max-price", Label: "Max $/h", Kind: "number", Step: "any"},
}

// backendParams maps the page's parameters to the offers flags the backend binds: the
// search box is q in the page's URL (what a search box is called) and --search on the
// command line (-q is --quiet there); sort and dir are the flags' own names.
var backendParams = [][2]string{
	{"q", "search"}, {"provider", "provider"}, {"region", "region"}, {"gpu-model", "gpu-model"},
	{"min-vram", "min-vram"}, {"purchase", "purchase"}, {"max-price", "max-price"}, {"sort", "sort"}, {"dir", "dir"},
}

// column is a heading of the offers table. Sort names its order in the one list of sort
// keys (store.SortKeys) that `picker offers --sort` takes too; the interconnect has none
// (it is not a fact the store holds).
type column struct {
	Sort         store.Sort
	Label, Month string // Month: the heading when prices are shown per month
	Num          bool
}

var columns = []column{
	{Sort: store.SortProvider, Label: "Provider"},
	{Sort: store.SortRegion, Label: "Region"},
	{Sort: store.SortInstance, Label: "Instance"},
	{Sort: store.SortGPU, Label: "GPU"},
	{Sort: store.SortGPUs, Label: "GPUs", Num: true},
	{Sort: store.SortUsable, Label: "Usable GiB/GPU", Num: true},
	{Sort: store.SortTotal, Label: "Total GiB", Num: true},
	{Sort: store.SortVCPUs, Label: "vCPU", Num: true},
	{Sort: store.SortRAM, Label: "RAM GiB", Num: true},
	{Label: "Interconnect"},
	{Sort: store.SortPurchase, Label: "Purchase"},
	{Sort: store.SortPrice, Label: "$/h", Month: "$/mo", Num: true},
	{Sort: store.SortPricePerGPU, Label: "$/GPU-h", Month: "$/GPU-mo", Num: true},
	{Sort: store.SortPricePerGiB, Label: "$/GiB-h", Month: "$/GiB-mo", Num: true},
	{Sort: store.SortAge, Label: "Age", Num: true},
	{Sort: store.SortSource, Label: "Source"},
}

// sortParam is a sort key as the page's URLs spell it: the alias where there is one
// (per-gpu, per-gib: the page's first URLs, still linked from elsewhere), else the name.
func sortParam(s store.Sort) string {
	for _, k := range store.SortKeys() {
		if k.Name == s && k.Alias != "" {
			return k.Alias
		}
	}
	return string(s)
}

// hoursPerMonth prices a month as the clouds quote one: 730 hours (365 × 24 / 12).
const hoursPerMonth = 730

// perPageChoices bound a page so that its HTML stays small whatever the catalog size.
var perPageChoices = []int{25, 50, 100}

const defaultPerPage = 50

// maxPlacesListed bounds the places a grouped row lists, so a page of 100 rows stays
// small whatever a cloud's region count; the instance's page lists every one.
const maxPlacesListed = 6

// offersView is the offers a Compare request selects: filtered and sorted by the
// backend, the gpus filter applied here, grouped by region unless by-region, and the
// page of them shown.
type offersView struct {
	all      []*pricing.Offer // every matching offer in display order
	groups   []offerGroup     // all, folded by region unless byRegion
	gpus     float64          // the gpus filter: an exact GPU count, 0 = any
	sort     store.Sort       // "" = the backend's default (cheapest first)
	desc     bool
	byRegion bool
	monthly  bool
	page     int
	perPage  int
	query    url.Values // the page's own parameters, cleaned
}

// offerGroup is a row of the table: an offer and the places of the offers that differ
// from it only in place (pricing.RegionGroupKey, the rule `picker recommend` groups by),
// its own first.
type offerGroup struct {
	*pricing.Offer
	places []string
}

// groupByRegion folds offers (in display order) into rows; each row stands where its
// first offer stood.
func groupByRegion(offers []*pricing.Offer) []offerGroup {
	var out []offerGroup
	idx := map[pricing.RegionGroupKey]int{}
	for _, o := range offers {
		k := o.RegionGroupKey()
		if i, ok := idx[k]; ok {
			out[i].places = append(out[i].places, o.Place())
			continue
		}
		idx[k] = len(out)
		out = append(out, offerGroup{Offer: o, places: []string{o.Place()}})
	}
	return out
}

// parseSwitch reads a page's true/false parameter ("" is false).
func parseSwitch(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, paramErr(name, "%s %q: want true or false", name, v)
	}
	return b, nil
}

// selectOffers asks the backend, which filters, searches and sorts (the CLI's order,
// so the page, `picker offers` and the CSV agree), and applies the page's own gpus
// filter, grouping and paging.
func (s *server) selectOffers(ctx context.Context, q url.Values) (*offersView, error) {
	v, err := parseOffersView(q)
	if err != nil {
		return v, err
	}
	offers, err := s.b.Offers(ctx, v.backendQuery())
	if err != nil {
		return v, err
	}
	// Pointers, not copies: grouping 100k offers moves 8 bytes each, and the backend's
	// slice (perhaps a cache's) is never modified.
	v.all = make([]*pricing.Offer, 0, len(offers))
	for i := range offers {
		if v.gpus > 0 && offers[i].GPUCount != v.gpus {
			continue
		}
		v.all = append(v.all, &offers[i])
	}
	if v.byRegion {
		v.groups = make([]offerGroup, len(v.all))
		for i, o := range v.all {
			v.groups[i] = offerGroup{Offer: o, places: []string{o.Place()}}
		}
	} else {
		v.groups = groupByRegion(v.all)
	}
	return v, nil
}

// parseOffersView reads and checks a Compare request's parameters, reading nothing.
func parseOffersView(q url.Values) (*offersView, error) {
	v := &offersView{query: url.Values{}, perPage: defaultPerPage, page: 1}
	for _, f := range compareFilters {
		if val := strings.TrimSpace(q.Get(f.Name)); val != "" {
			v.query.Set(f.Name, val)
		}
	}
	if g := v.query.Get("gpus"); g != "" {
		n, err := strconv.ParseFloat(g, 64)
		if err != nil || n <= 0 {
			return v, paramErr("gpus", "GPU count %q: want a positive number", g)
		}
		v.gpus = n
	}
	if sk := q.Get("sort"); sk != "" {
		sorted, err := store.ParseSort(sk)
		if err != nil {
			return v, err
		}
		v.sort = sorted
		v.query.Set("sort", sortParam(sorted))
	}
	switch d := q.Get("dir"); d {
	case "", "asc":
	case "desc":
		v.desc = true
		v.query.Set("dir", d)
	default:
		return v, paramErr("dir", "dir %q: want asc or desc", d)
	}
	for name, dst := range map[string]*bool{"by-region": &v.byRegion, "monthly": &v.monthly} {
		b, err := parseSwitch(q, name)
		if err != nil {
			return v, err
		}
		if *dst = b; b {
			v.query.Set(name, "true")
		}
	}
	if pp := q.Get("per-page"); pp != "" {
		n, err := strconv.Atoi(pp)
		if err != nil || !slices.Contains(perPageChoices, n) {
			return v, paramErr("per-page", "rows per page %q: want one of %v", pp, perPageChoices)
		}
		v.perPage = n
		v.query.Set("per-page", pp)
	}
	if pg := q.Get("page"); pg != "" {
		n, err := strconv.Atoi(pg)
		if err != nil || n < 1 {
			return v, paramErr("page", "page %q: want a positive number", pg)
		}
		v.page = n
	}
	return v, nil
}

// backendQuery is the page's query as the offers flags.
func (v *offersView) backendQuery() url.Values {
	params := url.Values{}
	for _, m := range backendParams {
		if val := v.query.Get(m[0]); val != "" {
			params.Set(m[1], val)
		}
	}
	if v.sort != "" {
		params.Set("sort", string(v.sort))
	}
	return params
}

// pages is the number of pages (at least 1).
func (v *offersView) pages() int { return max(1, (len(v.groups)+v.perPage-1)/v.perPage) }

// shown is the current page's rows.
func (v *offersView) shown() []offerGroup {
	lo := min((v.page-1)*v.perPage, len(v.groups))
	hi := min(lo+v.perPage, len(v.groups))
	return v.groups[lo:hi]
}

// with returns the page's query with changes (a "" value removes a key).
func (v *offersView) with(kv ...string) url.Values {
	q := url.Values{}
	for k, vs := range v.query {
		q[k] = append([]string(nil), vs...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			q.Del(kv[i])
		} else {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// header is a column heading; a sortable one links to the table sorted by it.
type header struct {
	Key, Label, URL string
	Num             bool
	Sorted          string // "ascending", "descending" or "" (aria-sort)
}

// compareRow is one row of the table, its prices in the period shown.
type compareRow struct {
	*pricing.Offer
	Others       []string // the other places of its group, at most maxPlacesListed
	More         int      // how many other places the group has
	DetailURL    string
	HistoryURL   string
	Interconnect string
	Price        string
	PerGPU       string
	PerGiB       string
}

// hidden is a view parameter the filter form carries (through form="filters" inputs
// inside the swapped section, so they stay in step when app.js swaps it).
type hidden struct{ Name, Value string }

type comparePage struct {
	Filters   []field
	PerPage   int
	PerPages  []int
	GPUModels []string
	Providers []string
	Headers   []header
	Rows      []compareRow
	Keep      []hidden
	Total     int // offers
	Groups    int // rows
	First     int
	Last      int
	Page      int
	Pages     int
	Monthly   bool
	ByRegion  bool
	PeriodURL string // the same view with the other period
	RegionURL string // the same view grouped the other way
	PrevURL   string
	NextURL   string
	CSVURL    string
	APIURL    string
	Error     string
	Now       time.Time
}

// rowOf renders an offer group in the period asked for.
func rowOf(g offerGroup, monthly bool) compareRow {
	o := g.Offer
	r := compareRow{Offer: o, More: len(g.places) - 1, DetailURL: instanceURL(o.Provider, o.InstanceType), Interconnect: interconnectOf(o).Short()}
	r.Others = g.places[1:min(len(g.places), 1+maxPlacesListed)]
	if r.More > 0 {
		// Every place's price history, not this one's alone.
		r.HistoryURL = "/history?" + url.Values{"provider": {o.Provider}, "instance-type": {o.InstanceType}}.Encode()
	} else {
		r.HistoryURL = offerHistoryURL(*o)
	}
	f := 1.0
	if monthly {
		f = hoursPerMonth
	}
	r.Price, r.PerGPU = usd(o.PriceUSDHr*f), usd(o.PricePerGPU()*f)
	if monthly {
		r.PerGiB = usd(o.PricePerGiB() * f)
	} else {
		r.PerGiB = strconv.FormatFloat(o.PricePerGiB(), 'f', 4, 64)
	}
	return r
}

func (s *server) compare(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 45*time.Second)
	defer cancel()
	if q := r.URL.Query(); hasEmpty(q) {
		http.Redirect(w, r, pageURL("/offers", q), http.StatusSeeOther) // the filter form's empty fields
		return
	}
	v, err := s.selectOffers(ctx, r.URL.Query())
	p := comparePage{PerPage: v.perPage, PerPages: perPageChoices, GPUModels: gpuModelNames(), Monthly: v.monthly, ByRegion: v.byRegion}
	if provs, perr := s.b.Providers(ctx); perr == nil {
		for _, pr := range provs {
			p.Providers = append(p.Providers, pr.Name)
		}
	}
	status := http.StatusOK
	errParam := ""
	if err != nil {
		status = statusOf(err)
		s.logFailure(r, status, err)
		p.Error, errParam = err.Error(), paramOf(err)
		for _, m := range backendParams {
			if errParam == m[1] {
				errParam = m[0] // the flag's field on this page (search is q)
			}
		}
	} else {
		v.page = min(v.page, v.pages())
		for _, g := range v.shown() {
			p.Rows = append(p.Rows, rowOf(g, v.monthly))
		}
		p.Total, p.Groups, p.Page, p.Pages = len(v.all), len(v.groups), v.page, v.pages()
		if p.Groups > 0 {
			p.First, p.Last = (v.page-1)*v.perPage+1, (v.page-1)*v.perPage+len(p.Rows)
		}
		if v.page > 1 {
			p.PrevURL = pageURL("/offers", v.with("page", strconv.Itoa(v.page-1)))
		}
		if v.page < v.pages() {
			p.NextURL = pageURL("/offers", v.with("page", strconv.Itoa(v.page+1)))
		}
		p.CSVURL = pageURL("/offers.csv", v.with("by-region", "", "monthly", "", "per-page", ""))
		if s.o.APIBase != "" && v.query.Get("gpus") == "" {
			p.APIURL = pageURL(s.o.APIBase+"/offers", v.backendQuery())
		}
	}
	flip := map[bool]string{false: "true", true: ""}
	p.PeriodURL = pageURL("/offers", v.with("monthly", flip[v.monthly]))
	p.RegionURL = pageURL("/offers", v.with("by-region", flip[v.byRegion], "page", ""))
	for _, name := range []string{"sort", "dir", "by-region", "monthly"} {
		if val := v.query.Get(name); val != "" {
			p.Keep = append(p.Keep, hidden{name, val})
		}
	}
	for _, c := range columns {
		h := header{Label: c.Label, Num: c.Num}
		if v.monthly && c.Month != "" {
			h.Label = c.Month
		}
		if c.Sort != "" {
			h.Key = sortParam(c.Sort)
			dir := ""
			if v.sort == c.Sort {
				h.Sorted = "ascending"
				if v.desc {
					h.Sorted = "descending"
				} else {
					dir = "desc" // a second click reverses
				}
			}
			h.URL = pageURL("/offers", v.with("sort", h.Key, "dir", dir, "page", ""))
		}
		p.Headers = append(p.Headers, h)
	}
	p.Filters = fillGroups([]fieldGroup{{Fields: compareFilters}}, v.query, errParam)[0].Fields
	s.render(w, r, status, "compare", "Compare offers", p)
}

// compareCSV writes the offers the Compare page selects (in its order, one row per offer
// and place whatever the page's grouping, prices per hour), at most maxCSVRows a file
// (?after=CURSOR for the rest, linked rel="next"), with the export columns: the same writer as
// `picker export --format csv`.
func (s *server) compareCSV(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 45*time.Second)
	defer cancel()
	h := w.Header()
	offers, err := s.csvPage(ctx, h, r) // at most maxCSVRows, one paged read (csvpage.go)
	if err != nil {
		status := statusOf(err)
		s.logFailure(r, status, err)
		http.Error(w, err.Error(), status)
		return
	}
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="picker-offers.csv"`)
	h.Set("Cache-Control", "no-store")
	if err := pricing.WriteExportCSV(w, offers); err != nil {
		s.o.Log.Warn("write offers CSV", "error", err)
	}
}

// paramErr is a bad page parameter, named for the form to mark it.
func paramErr(param, format string, args ...any) error {
	return pricing.ParamErrorf(pricing.Invalid, param, format, args...)
}

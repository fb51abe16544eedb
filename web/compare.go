package web

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// compareFilters are the Compare page's filters. All but gpus are `picker offers`
// (and `picker export`) flags and go to the backend unchanged; gpus (an exact GPU
// count) is applied here.
var compareFilters = []field{
	{Name: "provider", Label: "Provider", Kind: "text", List: "providers", Help: "comma list"},
	{Name: "region", Label: "Region", Kind: "text", Help: "comma list"},
	{Name: "gpu-model", Label: "GPU model", Kind: "text", List: "gpu-models", Help: "comma list"},
	{Name: "gpus", Label: "GPU count", Kind: "number", Step: "any"},
	{Name: "min-vram", Label: "Usable GiB per GPU ≥", Kind: "number", Step: "any"},
	{Name: "purchase", Label: "Purchase", Kind: "select", Options: []string{"on-demand", "spot", "any"}, Default: "any"},
	{Name: "max-price", Label: "Max $/h", Kind: "number", Step: "any"},
}

// backendFilters are the filters the backend applies (offers flags).
var backendFilters = []string{"provider", "region", "gpu-model", "min-vram", "purchase", "max-price"}

// column is a sortable column of the offers table, sorted by a number (num) or a text
// (text) computed once per offer.
type column struct {
	Key, Label string
	Num        bool
	num        func(o *pricing.Offer) float64
	text       func(o *pricing.Offer) string
}

var columns = []column{
	{Key: "provider", Label: "Provider", text: func(o *pricing.Offer) string { return o.Provider }},
	{Key: "region", Label: "Region", text: func(o *pricing.Offer) string { return o.Region + "\x00" + o.Zone }},
	{Key: "instance", Label: "Instance", text: func(o *pricing.Offer) string { return o.InstanceType }},
	{Key: "gpu", Label: "GPU", text: func(o *pricing.Offer) string { return o.GPUModel }},
	{Key: "gpus", Label: "GPUs", Num: true, num: func(o *pricing.Offer) float64 { return o.GPUCount }},
	{Key: "usable", Label: "Usable GiB/GPU", Num: true, num: (*pricing.Offer).MemPerDeviceGiB},
	{Key: "total", Label: "Total GiB", Num: true, num: (*pricing.Offer).TotalGPUMemGiB},
	{Key: "purchase", Label: "Purchase", text: func(o *pricing.Offer) string { return string(o.Purchase) }},
	{Key: "price", Label: "$/h", Num: true, num: func(o *pricing.Offer) float64 { return o.PriceUSDHr }},
	{Key: "per-gpu", Label: "$/GPU-h", Num: true, num: (*pricing.Offer).PricePerGPU},
	{Key: "per-gib", Label: "$/GiB-h", Num: true, num: (*pricing.Offer).PricePerGiB},
	// Age ascending is newest first.
	{Key: "age", Label: "Age", Num: true, num: func(o *pricing.Offer) float64 { return -float64(o.ObservedAt.Unix()) }},
	{Key: "source", Label: "Source", text: func(o *pricing.Offer) string { return o.Source }},
}

// sortOffers orders offers by c, descending when desc; equal keys keep their order
// (the backend's). Keys are computed once per offer and ties broken by position, so
// 100k offers sort with a plain (unstable) sort of small structs.
func sortOffers(offers []*pricing.Offer, c column, desc bool) {
	type keyed struct {
		n float64
		s string
		i int
		o *pricing.Offer
	}
	ks := make([]keyed, len(offers))
	for i, o := range offers {
		ks[i] = keyed{i: i, o: o}
		if c.num != nil {
			ks[i].n = c.num(o)
		} else {
			ks[i].s = c.text(o)
		}
	}
	sign := 1
	if desc {
		sign = -1
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if d := cmp.Compare(a.n, b.n) + strings.Compare(a.s, b.s); d != 0 {
			return sign * d
		}
		return a.i - b.i
	})
	for i := range ks {
		offers[i] = ks[i].o
	}
}

// perPageChoices bound a page so that its HTML stays small whatever the catalog size.
var perPageChoices = []int{25, 50, 100}

const defaultPerPage = 50

// offersView is the offers a Compare request selects: filtered, sorted, and the page
// of them shown.
type offersView struct {
	all     []*pricing.Offer // every matching offer in display order
	sort    string
	desc    bool
	page    int
	perPage int
	query   url.Values // the page's own parameters, cleaned
}

// selectOffers asks the backend and applies the page's own filter, sort and paging.
// The backend's order (cheapest first, ties broken the same way on every run) is the
// default, and sorting is stable, so equal keys keep it.
func (s *server) selectOffers(ctx context.Context, q url.Values) (*offersView, error) {
	v := &offersView{query: url.Values{}, perPage: defaultPerPage, page: 1}
	params := url.Values{}
	for _, f := range compareFilters {
		if val := strings.TrimSpace(q.Get(f.Name)); val != "" {
			v.query.Set(f.Name, val)
		}
	}
	for _, name := range backendFilters {
		if val := v.query.Get(name); val != "" {
			params.Set(name, val)
		}
	}
	var gpus float64
	if g := v.query.Get("gpus"); g != "" {
		n, err := strconv.ParseFloat(g, 64)
		if err != nil || n <= 0 {
			return v, paramErr("gpus", "GPU count %q: want a positive number", g)
		}
		gpus = n
	}
	if sk := q.Get("sort"); sk != "" {
		if !slices.ContainsFunc(columns, func(c column) bool { return c.Key == sk }) {
			return v, paramErr("sort", "sort %q: want one of the column keys", sk)
		}
		v.sort = sk
		v.query.Set("sort", sk)
	}
	if d := q.Get("dir"); d == "desc" {
		v.desc = true
		v.query.Set("dir", d)
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

	offers, err := s.b.Offers(ctx, params)
	if err != nil {
		return v, err
	}
	// Pointers, not copies: sorting 100k offers moves 8 bytes each, and the backend's
	// slice (perhaps a cache's) is never modified.
	v.all = make([]*pricing.Offer, 0, len(offers))
	for i := range offers {
		if gpus > 0 && offers[i].GPUCount != gpus {
			continue
		}
		v.all = append(v.all, &offers[i])
	}
	if v.sort != "" {
		i := slices.IndexFunc(columns, func(c column) bool { return c.Key == v.sort })
		sortOffers(v.all, columns[i], v.desc)
	}
	return v, nil
}

// pages is the number of pages (at least 1).
func (v *offersView) pages() int { return max(1, (len(v.all)+v.perPage-1)/v.perPage) }

// shown is the current page's offers.
func (v *offersView) shown() []*pricing.Offer {
	lo := min((v.page-1)*v.perPage, len(v.all))
	hi := min(lo+v.perPage, len(v.all))
	return v.all[lo:hi]
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

// header is a column heading that links to the table sorted by it.
type header struct {
	Key, Label, URL string
	Num             bool
	Sorted          string // "ascending", "descending" or "" (aria-sort)
}

type comparePage struct {
	Filters   []field
	PerPage   int
	PerPages  []int
	GPUModels []string
	Providers []string
	Headers   []header
	Rows      []*pricing.Offer
	Total     int
	First     int
	Last      int
	Page      int
	Pages     int
	PrevURL   string
	NextURL   string
	CSVURL    string
	APIURL    string
	Error     string
	Now       time.Time
}

func (s *server) compare(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 45*time.Second)
	defer cancel()
	if q := r.URL.Query(); hasEmpty(q) {
		http.Redirect(w, r, pageURL("/offers", q), http.StatusSeeOther) // the filter form's empty fields
		return
	}
	v, err := s.selectOffers(ctx, r.URL.Query())
	p := comparePage{PerPage: v.perPage, PerPages: perPageChoices, GPUModels: gpuModelNames()}
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
	} else {
		v.page = min(v.page, v.pages())
		p.Rows, p.Total, p.Page, p.Pages = v.shown(), len(v.all), v.page, v.pages()
		if p.Total > 0 {
			p.First, p.Last = (v.page-1)*v.perPage+1, (v.page-1)*v.perPage+len(p.Rows)
		}
		if v.page > 1 {
			p.PrevURL = pageURL("/offers", v.with("page", strconv.Itoa(v.page-1)))
		}
		if v.page < v.pages() {
			p.NextURL = pageURL("/offers", v.with("page", strconv.Itoa(v.page+1)))
		}
		p.CSVURL = pageURL("/offers.csv", v.query)
		if s.o.APIBase != "" && v.query.Get("gpus") == "" {
			api := url.Values{}
			for _, name := range backendFilters {
				if val := v.query.Get(name); val != "" {
					api.Set(name, val)
				}
			}
			p.APIURL = pageURL(s.o.APIBase+"/offers", api)
		}
	}
	for _, c := range columns {
		h := header{Key: c.Key, Label: c.Label, Num: c.Num}
		dir := ""
		if v.sort == c.Key {
			h.Sorted = "ascending"
			if v.desc {
				h.Sorted = "descending"
			} else {
				dir = "desc" // a second click reverses
			}
		}
		h.URL = pageURL("/offers", v.with("sort", c.Key, "dir", dir, "page", ""))
		p.Headers = append(p.Headers, h)
	}
	p.Filters = fillGroups([]fieldGroup{{Fields: compareFilters}}, v.query, errParam)[0].Fields
	s.render(w, r, status, "compare", "Compare offers", p)
}

// compareCSV writes every offer the Compare page selects (all pages, in its order)
// with the export columns: the same writer as `picker export --format csv`.
func (s *server) compareCSV(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 45*time.Second)
	defer cancel()
	v, err := s.selectOffers(ctx, r.URL.Query())
	if err != nil {
		status := statusOf(err)
		s.logFailure(r, status, err)
		http.Error(w, err.Error(), status)
		return
	}
	offers := make([]pricing.Offer, len(v.all))
	for i, o := range v.all {
		offers[i] = *o
	}
	h := w.Header()
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

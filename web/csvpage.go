package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/pickergpu/picker/pricing"
)

// maxCSVRows caps one /offers.csv answer: 10,000 rows (about 1.2 MB) is more than any
// one cloud's GPU catalogue, and a marketplace-scale store (100k offers made an 11.6 MB
// answer per request, issue 30) is read in pages: ?after=CURSOR, the next page's in a
// Link header (rel="next", as /v1/offers), and the whole count in X-Total-Count.
var maxCSVRows = 10_000 // a variable so that a test can lower it

// PageQuery cuts Backend.OffersPage's answer to one page.
type PageQuery struct {
	// GPUs keeps only offers of exactly that many GPUs (the Compare page's gpus
	// filter, which `picker offers` has no flag for); 0 keeps every count.
	GPUs float64
	// After is the cursor of the page before (store.Page.Next); "" is the first page.
	After string
	Limit int // at most this many offers; above 0
}

// csvPage reads one page of the offers a Compare request selects, as a page of the
// store (a LIMIT after a keyset cursor, and a count), never the whole selection: at
// 100k offers reading every match to cut 10,000 of them cost seconds a request under
// load. It sets X-Total-Count and, when more follow, the Link to the next page: the
// request's parameters with after= the page's cursor. A page= parameter (the HTML
// table's) is refused past 1: the CSV pages only by the cursor its Link gives.
func (s *server) csvPage(ctx context.Context, h http.Header, r *http.Request) ([]pricing.Offer, error) {
	q := r.URL.Query()
	v, err := parseOffersView(q)
	if err != nil {
		return nil, err
	}
	if v.page > 1 {
		return nil, paramErr("page", "page %d: /offers.csv pages by after=, the cursor its Link header names", v.page)
	}
	p, err := s.b.OffersPage(ctx, v.backendQuery(), PageQuery{GPUs: v.gpus, After: q.Get("after"), Limit: maxCSVRows})
	if err != nil {
		return nil, err
	}
	h.Set("X-Total-Count", strconv.Itoa(p.Total))
	if p.Next != "" {
		q.Del("page")
		q.Set("after", p.Next)
		next := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		h.Set("Link", "<"+next.String()+`>; rel="next"`)
	}
	return p.Offers, nil
}

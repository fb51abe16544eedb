package web

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/pickergpu/picker/pricing"
)

// maxCSVRows caps one /offers.csv answer: 10,000 rows (about 1.2 MB) is more than any
// one cloud's GPU catalogue, and a marketplace-scale store (100k offers made an 11.6 MB
// answer per request, issue 30) is read in pages: ?page=N, with the next page in a Link
// header (rel="next", as /v1/offers) and the whole count in X-Total-Count.
var maxCSVRows = 10_000 // a variable so that a test can lower it

// csvPage returns the offers of page (1-based) of all and sets the paging headers.
func csvPage(h http.Header, r *http.Request, all []*pricing.Offer, page int) []pricing.Offer {
	from := min((page-1)*maxCSVRows, len(all))
	to := min(from+maxCSVRows, len(all))
	out := make([]pricing.Offer, 0, to-from)
	for _, o := range all[from:to] {
		out = append(out, *o)
	}
	h.Set("X-Total-Count", strconv.Itoa(len(all)))
	if to < len(all) {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		next := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		h.Set("Link", "<"+next.String()+`>; rel="next"`)
	}
	return out
}

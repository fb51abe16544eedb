package web

import (
	"bytes"
	"context"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// TestCSVPaged: /offers.csv holds at most maxCSVRows rows, says the whole count in
// X-Total-Count and links the next page (rel="next"); the first page is the export of
// the whole selection (selectOffers: every match read, the gpus filter applied after)
// cut at the cap, byte for byte, and the pages together are the export of all of it
// (issue 30: it returned every offer, 11.6 MB at 100k offers, with no cap; then it read
// every offer to cut one page). The cases cover an order SQLite sorts and seeks (price,
// per-gpu), orders sorted in Go (region, per-gib, descending), and the page's own gpus
// filter, which the store applies in SQL so that a page is a LIMIT.
func TestCSVPaged(t *testing.T) {
	b := newTestBackend(t)
	h := Handler(pagesOnly{b, t}, Options{Now: func() time.Time { return b.now }})
	defer func(old int) { maxCSVRows = old }(maxCSVRows)
	linkRe := regexp.MustCompile(`^<([^>]+)>; rel="next"$`)
	for _, q := range []url.Values{
		{"provider": {"lambda"}, "sort": {"price"}},
		{"gpu-model": {"H100,A100-80GB"}, "sort": {"per-gpu"}, "dir": {"desc"}},
		{"gpus": {"8"}, "sort": {"region"}},
		{"gpus": {"1"}, "q": {"h100"}, "sort": {"per-gib"}, "dir": {"desc"}},
		{"purchase": {"spot"}},
	} {
		t.Run(q.Encode(), func(t *testing.T) {
			v, err := (&server{b: b}).selectOffers(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			maxCSVRows = max(2, len(v.all)/5) // five or six pages
			if len(v.all) <= 2*maxCSVRows {
				t.Fatalf("only %d offers; the test needs three pages", len(v.all))
			}
			export := func(all []*pricing.Offer) string {
				offers := make([]pricing.Offer, len(all))
				for i, o := range all {
					offers[i] = *o
				}
				var buf bytes.Buffer
				if err := pricing.WriteExportCSV(&buf, offers); err != nil {
					t.Fatal(err)
				}
				return buf.String()
			}
			var body strings.Builder
			next := "/offers.csv?" + q.Encode()
			for pages := 0; next != ""; pages++ {
				if pages > len(v.all) {
					t.Fatal("the pages do not end")
				}
				rec := get(t, h, next)
				if rec.Code != 200 {
					t.Fatalf("%s: %d %s", next, rec.Code, rec.Body)
				}
				text := rec.Body.String()
				if pages == 0 && text != export(v.all[:maxCSVRows]) {
					t.Errorf("the first page differs from the whole list cut at %d rows:\n%s", maxCSVRows, text)
				}
				if n := strings.Count(text, "\n") - 1; n > maxCSVRows {
					t.Errorf("%s: %d rows, over the cap of %d", next, n, maxCSVRows)
				}
				if got := rec.Header().Get("X-Total-Count"); got != strconv.Itoa(len(v.all)) {
					t.Errorf("X-Total-Count %q; want %d", got, len(v.all))
				}
				if pages > 0 {
					text = text[strings.IndexByte(text, '\n')+1:] // each page repeats the header
				}
				body.WriteString(text)
				next = ""
				if m := linkRe.FindStringSubmatch(rec.Header().Get("Link")); m != nil {
					next = m[1]
				}
			}
			if body.String() != export(v.all) {
				t.Error("the pages together differ from the export of every offer")
			}
		})
	}
}

// pagesOnly is the test backend with Offers (the whole selection) refused: a CSV page
// must be one paged read (OffersPage).
type pagesOnly struct {
	*testBackend
	t *testing.T
}

func (p pagesOnly) Offers(ctx context.Context, params url.Values) ([]pricing.Offer, error) {
	p.t.Errorf("/offers.csv read the whole selection (Offers %v)", params)
	return p.testBackend.Offers(ctx, params)
}

// TestCSVPageErrors: a cursor that is not one, and the HTML table's page= past 1, are
// 400s naming the parameter, not a first page again (a client counting pages would
// loop for ever).
func TestCSVPageErrors(t *testing.T) {
	h, _ := newTestHandler(t)
	for target, want := range map[string]string{
		"/offers.csv?after=nonsense": `after "nonsense": not a cursor`,
		"/offers.csv?page=2":         "pages by after=",
		"/offers.csv?gpus=-1":        "GPU count",
	} {
		rec := get(t, h, target)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d %q; want 400 containing %q", target, rec.Code, rec.Body, want)
		}
	}
}

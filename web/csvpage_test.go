package web

import (
	"bytes"
	"context"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// TestCSVPaged: /offers.csv holds at most maxCSVRows rows, says the whole count in
// X-Total-Count and links the next page (rel="next"); the pages together are the
// export writer's output for every offer (issue 30: it returned every offer, 11.6 MB at
// 100k offers, with no cap).
func TestCSVPaged(t *testing.T) {
	h, b := newTestHandler(t)
	defer func(old int) { maxCSVRows = old }(maxCSVRows)
	maxCSVRows = 4
	q := url.Values{"provider": {"lambda"}, "sort": {"price"}}
	v, err := (&server{b: b}).selectOffers(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.all) <= 2*maxCSVRows {
		t.Fatalf("only %d lambda offers; the test needs three pages", len(v.all))
	}
	var body strings.Builder
	next := "/offers.csv?" + q.Encode()
	linkRe := regexp.MustCompile(`^<([^>]+)>; rel="next"$`)
	for pages := 0; next != ""; pages++ {
		if pages > len(v.all) {
			t.Fatal("the pages do not end")
		}
		rec := get(t, h, next)
		if rec.Code != 200 {
			t.Fatalf("%s: %d", next, rec.Code)
		}
		if n := strings.Count(rec.Body.String(), "\n") - 1; n > maxCSVRows {
			t.Errorf("%s: %d rows, over the cap of %d", next, n, maxCSVRows)
		}
		if got := rec.Header().Get("X-Total-Count"); got != strconv.Itoa(len(v.all)) {
			t.Errorf("X-Total-Count %q; want %d", got, len(v.all))
		}
		text := rec.Body.String()
		if pages > 0 {
			text = text[strings.IndexByte(text, '\n')+1:] // each page repeats the header
		}
		body.WriteString(text)
		next = ""
		if m := linkRe.FindStringSubmatch(rec.Header().Get("Link")); m != nil {
			next = m[1]
		}
	}
	offers := make([]pricing.Offer, len(v.all))
	for i, o := range v.all {
		offers[i] = *o
	}
	var want bytes.Buffer
	pricing.WriteExportCSV(&want, offers)
	if body.String() != want.String() {
		t.Error("the pages together differ from the export of every offer")
	}
}

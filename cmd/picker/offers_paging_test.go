package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

var nextLink = regexp.MustCompile(`^<(/v1/offers\?[^>]+)>; rel="next"$`)

// TestAPIOffersPagesWalkEveryOffer: an unfiltered /v1/offers is a page of 1000 with
// X-Total-Count the whole catalogue's count and a Link to the next page; following the
// links meets every offer exactly once, in `picker offers`' order, each page's body the
// CLI's JSON for the same flags (--after included), the last page without a Link. So
// for a key SQLite orders (price, price-per-gpu), one sorted here (gpu, age) in either
// direction, and with filters and a search.
func TestAPIOffersPagesWalkEveryOffer(t *testing.T) {
	a, srv := newTestAPI(t)
	for _, tc := range []struct {
		query string
		flags []string
	}{
		{"", nil},
		{"sort=price-per-gpu&limit=700", []string{"--sort", "price-per-gpu"}},
		{"sort=gpu&dir=desc&limit=450&purchase=spot", []string{"--sort", "gpu", "--dir", "desc", "--purchase", "spot"}},
		{"sort=age&limit=200&search=a100", []string{"--sort", "age", "--search", "a100"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			cli := runCLI(t, a.st.Path(), false, append([]string{"offers", "-o", "json"}, tc.flags...)...)
			var want []pricing.Offer
			if err := json.Unmarshal([]byte(cli.stdout), &want); err != nil || cli.code != 0 {
				t.Fatalf("CLI exit %d: %v %s", cli.code, err, cli.stderr)
			}
			limit := defaultAPILimit
			if q, _ := url.ParseQuery(tc.query); q.Get("limit") != "" {
				limit, _ = strconv.Atoi(q.Get("limit"))
			}
			if len(want) <= limit {
				t.Fatalf("%d offers fit one page of %d; the walk needs several", len(want), limit)
			}
			var walked []pricing.Offer
			seen := map[pricing.Key]bool{}
			path, after := "/v1/offers?"+tc.query, ""
			for pages := 1; ; pages++ {
				code, hdr, body := do(t, mustReq(t, srv.URL+path))
				if code != http.StatusOK {
					t.Fatalf("%s: %d %s", path, code, body)
				}
				if got := hdr.Get("X-Total-Count"); got != strconv.Itoa(len(want)) {
					t.Errorf("page %d: X-Total-Count %q, want %d", pages, got, len(want))
				}
				// The body is the CLI's JSON for the same flags, byte for byte.
				args := append([]string{"offers", "-o", "json", "--limit", strconv.Itoa(limit)}, tc.flags...)
				if after != "" {
					args = append(args, "--after", after)
				}
				if r := runCLI(t, a.st.Path(), false, args...); r.stdout != string(body) {
					t.Errorf("page %d differs from `picker %s`", pages, strings.Join(args, " "))
				}
				var page []pricing.Offer
				if err := json.Unmarshal(body, &page); err != nil {
					t.Fatal(err)
				}
				for _, o := range page {
					if seen[o.Key()] {
						t.Errorf("page %d repeats %v", pages, o.Key())
					}
					seen[o.Key()] = true
				}
				walked = append(walked, page...)
				link := hdr.Get("Link")
				if link == "" {
					if len(page) > limit || pages != (len(want)+limit-1)/limit {
						t.Errorf("last page %d holds %d offers, of %d pages of %d", pages, len(page), (len(want)+limit-1)/limit, limit)
					}
					break
				}
				if len(page) != limit {
					t.Errorf("page %d holds %d offers, want %d", pages, len(page), limit)
				}
				m := nextLink.FindStringSubmatch(link)
				if m == nil {
					t.Fatalf("Link %q", link)
				}
				path = m[1]
				next, _ := url.Parse(path)
				after = next.Query().Get("after")
				if pages > len(want) {
					t.Fatal("more pages than offers")
				}
			}
			if len(walked) != len(want) {
				t.Fatalf("walked %d offers, want every one of %d", len(walked), len(want))
			}
			for i := range want {
				if walked[i].Key() != want[i].Key() {
					t.Fatalf("offer %d: walked %v, `picker offers` lists %v", i, walked[i].Key(), want[i].Key())
				}
			}
		})
	}
	// A cursor of another order, or none at all, is a 400 naming after.
	_, hdr, _ := do(t, mustReq(t, srv.URL+"/v1/offers?limit=5"))
	next, _ := url.Parse(nextLink.FindStringSubmatch(hdr.Get("Link"))[1])
	for _, q := range []string{"after=nonsense", "sort=gpu&after=" + url.QueryEscape(next.Query().Get("after"))} {
		code, body := get(t, srv.URL+"/v1/offers?"+q)
		var e apiError
		if json.Unmarshal(body, &e); code != http.StatusBadRequest || e.Parameter != "after" {
			t.Errorf("%s: %d %+v; want 400 naming after", q, code, e)
		}
	}
	// An answer that fits one page: the count, no Link.
	code, hdr, _ := do(t, mustReq(t, srv.URL+"/v1/offers?provider=aws&gpu-model=H100"))
	if code != 200 || hdr.Get("Link") != "" || hdr.Get("X-Total-Count") == "" {
		t.Errorf("one page: %d, Link %q, X-Total-Count %q", code, hdr.Get("Link"), hdr.Get("X-Total-Count"))
	}
}

// TestOffersSortKeysAndPages: `picker offers --sort` takes every key of the Compare
// page's headings (and their aliases) and orders as the store does; a bad key is exit 2
// naming the valid ones; --limit says on stderr how to ask for the next page, and
// --after gives it.
func TestOffersSortKeysAndPages(t *testing.T) {
	db := tempDB(t)
	for _, k := range append(store.SortNames(), "per-gpu", "per-gib") {
		for _, dir := range []string{"asc", "desc"} {
			r := runCLI(t, db, false, "offers", "--sort", k, "--dir", dir, "--provider", "lambda,aws", "-o", "json")
			var got []pricing.Offer
			if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil || len(got) < 100 {
				t.Fatalf("--sort %s --dir %s: exit %d, %d offers, %v %s", k, dir, r.code, len(got), err, r.stderr)
			}
			want := append([]pricing.Offer(nil), got...)
			if err := store.SortOffers(want, store.Sort(k), dir == "desc"); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if want[i].Key() != got[i].Key() {
					t.Errorf("--sort %s --dir %s: offer %d is %v, want %v", k, dir, i, got[i].Key(), want[i].Key())
					break
				}
			}
		}
	}
	r := runCLI(t, db, false, "offers", "--sort", "speed")
	if r.code != 2 || !strings.Contains(r.stderr, `--sort "speed": want one of `+strings.Join(store.SortNames(), ", ")) {
		t.Errorf("bad key: exit %d, %q; want 2 naming the keys", r.code, r.stderr)
	}
	if r := runCLI(t, db, false, "offers", "--dir", "up"); r.code != 2 || !strings.Contains(r.stderr, "asc or desc") {
		t.Errorf("bad dir: exit %d, %q", r.code, r.stderr)
	}
	all := runCLI(t, db, false, "offers", "--sort", "gpu", "-o", "json")
	first := runCLI(t, db, false, "offers", "--sort", "gpu", "--limit", "5", "-o", "json")
	m := regexp.MustCompile(`5 of (\d+) offers; the next page: --after (\S+)`).FindStringSubmatch(first.stderr)
	if m == nil {
		t.Fatalf("--limit 5: stderr %q says nothing of the next page", first.stderr)
	}
	second := runCLI(t, db, false, "offers", "--sort", "gpu", "--limit", "5", "--after", m[2], "-o", "json")
	var full, one, two []pricing.Offer
	json.Unmarshal([]byte(all.stdout), &full)
	json.Unmarshal([]byte(first.stdout), &one)
	json.Unmarshal([]byte(second.stdout), &two)
	if m[1] != strconv.Itoa(len(full)) || len(one) != 5 || len(two) != 5 || two[0].Key() != full[5].Key() || two[4].Key() != full[9].Key() {
		t.Errorf("pages of 5: total %s of %d; the second page starts at %v, want %v", m[1], len(full), two[0].Key(), full[5].Key())
	}
	if r := runCLI(t, db, false, "-q", "offers", "--limit", "5"); strings.Contains(r.stderr, "next page") {
		t.Errorf("-q still prints the next page: %q", r.stderr)
	}
}

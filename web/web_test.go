package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/store"
)

// maxPageBytes is the bound on a page's HTML.
const maxPageBytes = 100 << 10

func newTestHandler(t testing.TB) (http.Handler, *testBackend) {
	b := newTestBackend(t)
	return Handler(b, Options{Now: func() time.Time { return b.now }, APIBase: "/v1"}), b
}

func get(t testing.TB, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

var (
	inlineScript  = regexp.MustCompile(`<script(\s[^>]*)?>`)
	inlineHandler = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
	styleAttr     = regexp.MustCompile(`(?i)\sstyle\s*=`)
	styleElement  = regexp.MustCompile(`(?i)<style[\s>]`)
)

// TestPages checks every page: status, size, the CSP header, and that nothing in the
// HTML would need 'unsafe-inline' (inline scripts, handlers, style attributes).
func TestPages(t *testing.T) {
	h, _ := newTestHandler(t)
	for _, tc := range []struct {
		target string
		status int
		want   string
	}{
		{"/", 200, `id="ask"`},
		{"/?model=llama-2-7b&task=lora&batch=4", 200, `id="top-offers"`},
		{"/?model=llama-2-70b&task=full-ft&gpu-model=T4&max-gpus=1", 200, `id="nearest-miss"`},
		{"/?model=no-such-model", 400, `class="field wide invalid"`},
		{"/offers", 200, `id="offers-table"`},
		{"/offers?gpu-model=H100&sort=per-gpu&per-page=100", 200, `aria-sort="ascending"`},
		{"/offers?gpus=abc", 400, `class="error"`},
		{"/history", 200, `id="history-form"`},
		{"/history?" + offerQuery(changedOffer), 200, `data-chart=`},
		{"/history?gpu-model=H100", 200, `data-chart=`},
		{"/history?provider=aws&instance-type=p99.nothing", 404, `class="error"`},
		{"/providers", 200, `id="providers-table"`},
		{"/nope", 404, `There is no page`},
		{"/assets/vendor/", 404, `There is no page`},
	} {
		t.Run(tc.target, func(t *testing.T) {
			rec := get(t, h, tc.target)
			body := rec.Body.String()
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d; body:\n%.2000s", rec.Code, tc.status, body)
			}
			if !strings.Contains(body, tc.want) {
				t.Errorf("body lacks %q:\n%.3000s", tc.want, body)
			}
			if n := len(body); n > maxPageBytes {
				t.Errorf("page is %d bytes, want under %d", n, maxPageBytes)
			}
			if got := rec.Header().Get("Content-Security-Policy"); got != ContentSecurityPolicy {
				t.Errorf("CSP %q, want %q", got, ContentSecurityPolicy)
			}
			for _, m := range inlineScript.FindAllString(body, -1) {
				if !strings.Contains(m, " src=") {
					t.Errorf("inline script %q", m)
				}
			}
			for _, re := range []*regexp.Regexp{inlineHandler, styleAttr, styleElement} {
				if m := re.FindString(body); m != "" {
					t.Errorf("inline code the CSP would block: %q", m)
				}
			}
		})
	}
}

// A submitted form's empty fields redirect to the short URL of what was asked.
func TestCleanURLs(t *testing.T) {
	h, _ := newTestHandler(t)
	for _, tc := range []struct{ target, want string }{
		{"/?model=llama-2-7b&task=lora&batch=4&grad-ckpt&precision=", "/?batch=4&grad-ckpt=true&model=llama-2-7b&task=lora"},
		{"/?model=&task=", "/"},
		{"/offers?provider=lambda&region=&gpus=&per-page=50", "/offers?per-page=50&provider=lambda"},
	} {
		rec := get(t, h, tc.target)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != tc.want {
			t.Errorf("%s: %d to %q, want 303 to %q", tc.target, rec.Code, rec.Header().Get("Location"), tc.want)
		}
		if rec := get(t, h, tc.want); rec.Code != http.StatusOK {
			t.Errorf("%s: %d", tc.want, rec.Code)
		}
	}
}

func offerQuery(k pricing.Key) string {
	return url.Values{"provider": {k.Provider}, "instance-type": {k.InstanceType}, "region": {k.Region}, "zone": {k.Zone}}.Encode()
}

// TestEscaping: what a user typed comes back as text, never as markup.
func TestEscaping(t *testing.T) {
	h, _ := newTestHandler(t)
	evil := `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
	for _, target := range []string{
		"/?" + url.Values{"model": {evil}}.Encode(),
		"/offers?" + url.Values{"region": {evil}}.Encode(),
		"/history?" + url.Values{"provider": {evil}, "instance-type": {evil}}.Encode(),
	} {
		body := get(t, h, target).Body.String()
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s: unescaped input in the page", target)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the input is not shown escaped", target)
		}
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		query, want string
	}{
		{"model=llama-2-7b&task=lora&batch=4", "picker recommend --model llama-2-7b --task lora --batch 4"},
		// Form order, not query order; a ticked box is a bare flag; empty fields and
		// unknown parameters are left out.
		{"batch=2&grad-ckpt=true&model=meta-llama/Llama-2-7b-hf&seq-len=&x=1", "picker recommend --model meta-llama/Llama-2-7b-hf --batch 2 --grad-ckpt"},
		{"model=a b&provider=aws,gcp&tokens=2e9", "picker recommend --model 'a b' --provider aws,gcp --tokens 2e9"},
		{"model=it's", `picker recommend --model 'it'\''s'`},
	} {
		q, _ := url.ParseQuery(tc.query)
		params, order := askParams(q)
		if got := commandLine(params, order); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.query, got, tc.want)
		}
	}
}

// TestAskMatchesBackend: the page shows the backend's offers, in its order.
func TestAskMatchesBackend(t *testing.T) {
	h, b := newTestHandler(t)
	q := url.Values{"model": {"llama-2-7b"}, "task": {"lora"}, "batch": {"4"}, "top": {"5"}}
	rec, err := b.Recommend(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	body := get(t, h, "/?"+q.Encode()).Body.String()
	rows := regexp.MustCompile(`data-instance-type="([^"]+)"`).FindAllStringSubmatch(body, -1)
	if len(rows) != len(rec.Offers) || len(rows) == 0 {
		t.Fatalf("page shows %d offers, backend recommends %d", len(rows), len(rec.Offers))
	}
	for i, f := range rec.Offers {
		if got := html.UnescapeString(rows[i][1]); got != f.InstanceType {
			t.Errorf("row %d: %s, want %s", i+1, got, f.InstanceType)
		}
	}
	if !strings.Contains(body, `href="/v1/recommend?batch=4&amp;model=llama-2-7b&amp;task=lora&amp;top=5"`) {
		t.Error("no JSON link to the API answering the same query")
	}
}

// TestCSVIsExport: the download is the export writer's output for the same offers in
// the page's order.
func TestCSVIsExport(t *testing.T) {
	h, b := newTestHandler(t)
	for _, q := range []url.Values{
		{"gpu-model": {"A100"}, "purchase": {"on-demand"}},
		{"provider": {"lambda"}, "sort": {"per-gib"}, "dir": {"desc"}},
	} {
		rec := get(t, h, "/offers.csv?"+q.Encode())
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/csv") {
			t.Fatalf("%v: status %d, type %q", q, rec.Code, rec.Header().Get("Content-Type"))
		}
		v, err := (&server{b: b}).selectOffers(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		offers := make([]pricing.Offer, len(v.all))
		for i, o := range v.all {
			offers[i] = *o
		}
		pricing.WriteExportCSV(&want, offers)
		if rec.Body.String() != want.String() {
			t.Errorf("%v: CSV differs from the exporter's", q)
		}
		if lines := strings.Count(rec.Body.String(), "\n"); lines != len(offers)+1 || len(offers) < 2 {
			t.Errorf("%v: %d lines for %d offers", q, lines, len(offers))
		}
	}
	// Sorted by $/GiB-h descending: the first data row is the dearest per GiB.
	v, _ := (&server{b: b}).selectOffers(context.Background(), url.Values{"provider": {"lambda"}, "sort": {"per-gib"}, "dir": {"desc"}})
	for i := 1; i < len(v.all); i++ {
		if v.all[i].PricePerGiB() > v.all[i-1].PricePerGiB() {
			t.Fatalf("row %d is dearer per GiB than row %d", i+1, i)
		}
	}
}

// TestHistoryChart: the chart data holds each stored interval as a point at its start.
func TestHistoryChart(t *testing.T) {
	h, b := newTestHandler(t)
	pts, err := b.History(context.Background(), store.HistoryQuery{Provider: changedOffer.Provider, InstanceType: changedOffer.InstanceType, Region: changedOffer.Region})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 3 {
		t.Fatalf("stored %d intervals, want 3 (the snapshot price and two changes)", len(pts))
	}
	body := get(t, h, "/history?"+offerQuery(changedOffer)).Body.String()
	m := regexp.MustCompile(`data-chart="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no chart")
	}
	var c chart
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &c); err != nil {
		t.Fatal(err)
	}
	if c.Changes != len(pts) {
		t.Errorf("chart has %d changes, want %d", c.Changes, len(pts))
	}
	for _, pt := range pts {
		if !chartHas(c, pt.ValidFrom.Unix(), pt.PriceUSDHr) {
			t.Errorf("chart lacks %v at %v", pt.PriceUSDHr, pt.ValidFrom)
		}
	}
	// The current price extends to now.
	if last := c.X[len(c.X)-1]; last != b.now.Unix() {
		t.Errorf("chart ends at %v, want now", time.Unix(last, 0))
	}
}

func chartHas(c chart, t int64, v float64) bool {
	for i, x := range c.X {
		if x != t {
			continue
		}
		for _, s := range c.Series {
			if s.Values[i] != nil && *s.Values[i] == v {
				return true
			}
		}
	}
	return false
}

// TestModelChart: a model's chart is one series per provider and purchase option,
// each that provider's cheapest whole-GPU price at each of its changes. A provider
// first seen later at a lower price is a line of its own, never a drop in another's
// (issue 26: the H100 chart fell from $12.29 to $1.29 on the day the snapshot's
// cheaper provider was dated).
func TestModelChart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	day := func(d int) *time.Time { t := t0.AddDate(0, 0, d); return &t }
	pts := []store.PricePoint{
		// 8 GPUs at $16: $2/GPU-h, until day 2, then $1.5 (a change a refresh saw).
		{Provider: "a", InstanceType: "x8", Region: "r1", Purchase: pricing.OnDemand, GPUCount: 8, PriceUSDHr: 16, ValidFrom: *day(0), ValidTo: day(2)},
		{Provider: "a", InstanceType: "x8", Region: "r1", Purchase: pricing.OnDemand, GPUCount: 8, PriceUSDHr: 12, ValidFrom: *day(2)},
		// a's single GPU at $2.5 from day 1 is never a's cheapest.
		{Provider: "a", InstanceType: "x1", Region: "r1", Purchase: pricing.OnDemand, GPUCount: 1, PriceUSDHr: 2.5, ValidFrom: *day(1)},
		// b is first seen on day 3, far cheaper: its own line.
		{Provider: "b", InstanceType: "b1", Region: "r2", Purchase: pricing.OnDemand, GPUCount: 1, PriceUSDHr: 0.5, ValidFrom: *day(3)},
		// a slice is left out
		{Provider: "c", InstanceType: "s", Purchase: pricing.OnDemand, GPUCount: 0.25, PriceUSDHr: 0.1, ValidFrom: *day(0)},
		{Provider: "a", InstanceType: "x8", Region: "r1", Purchase: pricing.Spot, GPUCount: 8, PriceUSDHr: 8, ValidFrom: *day(0)},
	}
	c, rows := modelChart(pts, t0.AddDate(0, 0, 5))
	want := []historyRow{
		{Series: "a on-demand", Provider: "a", Purchase: "on-demand", Instance: "x8", Region: "r1", ValidFrom: *day(0), ValidTo: day(2), Price: 2},
		{Series: "a on-demand", Provider: "a", Purchase: "on-demand", Instance: "x8", Region: "r1", ValidFrom: *day(2), Price: 1.5},
		{Series: "a spot", Provider: "a", Purchase: "spot", Instance: "x8", Region: "r1", ValidFrom: *day(0), Price: 1},
		{Series: "b on-demand", Provider: "b", Purchase: "on-demand", Instance: "b1", Region: "r2", ValidFrom: *day(3), Price: 0.5},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("rows\n got %v\nwant %v", rows, want)
	}
	var labels []string
	for _, s := range c.Series {
		labels = append(labels, s.Label)
	}
	if strings.Join(labels, ", ") != "a on-demand, a spot, b on-demand" {
		t.Errorf("series %v, want one per provider and purchase", labels)
	}
	if c.Changes != 4 || !chartHas(*c, day(2).Unix(), 1.5) || !chartHas(*c, day(3).Unix(), 0.5) || !chartHas(*c, day(5).Unix(), 0.5) {
		t.Errorf("chart %+v", c)
	}
	// No series falls to b's price: a's line never shows b's day as a drop.
	for _, s := range c.Series {
		for _, v := range s.Values {
			if v != nil && *v == 0.5 && s.Label != "b on-demand" {
				t.Errorf("series %s takes b's price", s.Label)
			}
		}
	}
}

// TestAssets: embedded, versioned, cacheable; uPlot's licence is served beside it.
func TestAssets(t *testing.T) {
	h, _ := newTestHandler(t)
	body := get(t, h, "/history?gpu-model=H100").Body.String()
	for _, path := range []string{"app.js", "app.css", "vendor/uplot/uPlot.iife.min.js", "vendor/uplot/uPlot.min.css"} {
		m := regexp.MustCompile(`/assets/` + regexp.QuoteMeta(path) + `\?v=[0-9a-f]+`).FindString(body)
		if m == "" {
			t.Errorf("page does not load %s", path)
			continue
		}
		rec := get(t, h, m)
		if rec.Code != 200 || rec.Body.Len() == 0 || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
			t.Errorf("%s: status %d, %d bytes, cache %q", m, rec.Code, rec.Body.Len(), rec.Header().Get("Cache-Control"))
		}
	}
	if rec := get(t, h, "/assets/vendor/uplot/LICENSE"); !strings.Contains(rec.Body.String(), "MIT License") {
		t.Error("uPlot's licence is not served")
	}
}

// memBackend serves a fixed slice of offers, for the render benchmarks.
type memBackend struct {
	testBackend
	offers []pricing.Offer
}

// Offers sorts in memory as the store would, when asked to (the page no longer sorts:
// the backend does, as `picker offers` does).
func (m *memBackend) Offers(_ context.Context, p url.Values) ([]pricing.Offer, error) {
	if p.Get("sort") == "" {
		return m.offers, nil
	}
	out := slices.Clone(m.offers)
	return out, store.SortOffers(out, store.Sort(p.Get("sort")), p.Get("dir") == "desc")
}
func (m *memBackend) Providers(context.Context) ([]Provider, error) { return nil, nil }

// benchOffers repeats the snapshot's offers, renamed, up to n.
func benchOffers(b *testing.B, n int) []pricing.Offer {
	base, err := newTestBackend(b).st.Offers(context.Background(), store.Query{})
	if err != nil {
		b.Fatal(err)
	}
	out := make([]pricing.Offer, 0, n)
	for i := 0; len(out) < n; i++ {
		o := base[i%len(base)]
		o.InstanceType = fmt.Sprintf("%s-%d", o.InstanceType, i/len(base))
		out = append(out, o)
	}
	return out
}

// BenchmarkOffersPage renders the Compare page (first page of 50) over the whole
// snapshot (about 3k offers, from the store) and over 100k offers in memory, in the
// default order and sorted by $/GPU-h (which sorts every offer).
func BenchmarkOffersPage(b *testing.B) {
	store3k := newTestBackend(b)
	n3k, _ := store3k.st.Offers(context.Background(), store.Query{})
	for _, tc := range []struct {
		name string
		be   Backend
	}{
		{fmt.Sprintf("store-%d", len(n3k)), store3k},
		{"mem-100000", &memBackend{offers: benchOffers(b, 100_000)}},
	} {
		h := Handler(tc.be, Options{})
		for _, q := range []string{"", "?sort=per-gpu"} {
			b.Run(tc.name+q, func(b *testing.B) {
				size := 0
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/offers"+q, nil))
					if rec.Code != 200 {
						b.Fatalf("status %d", rec.Code)
					}
					size = rec.Body.Len()
				}
				b.ReportMetric(float64(size)/1024, "KiB/page")
			})
		}
	}
}

// BenchmarkPages reports each page's render time and size on the snapshot.
func BenchmarkPages(b *testing.B) {
	h, _ := newTestHandler(b)
	for _, target := range []string{"/", "/?model=llama-2-7b&task=lora&batch=4", "/offers?per-page=100", "/history?gpu-model=H100", "/providers"} {
		b.Run(target, func(b *testing.B) {
			size := 0
			for b.Loop() {
				rec := get(b, h, target)
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size)/1024, "KiB/page")
		})
	}
}

func TestAge(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0 s"}, {0, "0 s"}, {59 * time.Second, "59 s"}, {time.Minute, "1 min"}, {59 * time.Minute, "59 min"},
		{time.Hour, "1 h"}, {47 * time.Hour, "47 h"}, {48 * time.Hour, "2 d"}, {121*24*time.Hour + 5*time.Hour, "121 d"},
	} {
		if got := age(tc.d); got != tc.want {
			t.Errorf("age(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// Every job flag fit knows is a field of the Ask form, so a new flag cannot be
// forgotten here.
func TestAskFormHasEveryJobFlag(t *testing.T) {
	for _, p := range fit.JobParams {
		if !slices.ContainsFunc(askGroups, func(g fieldGroup) bool {
			return slices.ContainsFunc(g.Fields, func(f field) bool { return f.Name == p.Name })
		}) {
			t.Errorf("job flag --%s has no field in the Ask form", p.Name)
		}
	}
}

// The table's headings are the one list of sort keys `picker offers --sort` takes:
// every key has a heading, every sortable heading a key, in the list's order.
func TestColumnsAreTheSortKeys(t *testing.T) {
	var headed []store.Sort
	for _, c := range columns {
		if c.Sort != "" {
			headed = append(headed, c.Sort)
		}
	}
	var keys []store.Sort
	for _, k := range store.SortKeys() {
		keys = append(keys, k.Name)
	}
	if !slices.Equal(headed, keys) {
		t.Errorf("sortable headings %v, want the store's sort keys %v", headed, keys)
	}
}

// fixedRec answers every question with one recommendation.
type fixedRec struct {
	testBackend
	rec *recommend.Recommendation
}

func (f *fixedRec) Recommend(context.Context, url.Values) (*recommend.Recommendation, error) {
	return f.rec, nil
}

// The parts of a recommendation only some questions produce: a multi-instance plan,
// the cheapest cluster, offers left out.
func TestAskRendersPlansAndExclusions(t *testing.T) {
	b := newTestBackend(t)
	o := pricing.Offer{Provider: "aws", Region: "us-east-1", InstanceType: "p5.48xlarge", GPUModel: "H100", GPUCount: 8, GPUMemGiB: 80,
		Purchase: pricing.OnDemand, PriceUSDHr: 55.04, Currency: "USD", ObservedAt: b.now}
	plan := recommend.Fit{Offer: o, Nodes: 3, GPUsUsed: 8, ClusterPriceUSDHr: 165.12, Interconnect: "EFA", Layout: "ZeRO-3 across 24 GPUs"}
	saving := 40.0
	combined := &recommend.Plan{Changes: []string{"gradient checkpointing", "QLoRA"},
		LadderStep: recommend.LadderStep{Flags: "--grad-ckpt --task qlora", NeedPerGPUGiB: 10, Cheapest: &plan, SavingPct: &saving, Slowdown: 1.5}}
	rec := &recommend.Recommendation{Offers: []recommend.Fit{plan}, CheapestCluster: &plan, Plan: combined,
		Rejected:   []recommend.RejectedStep{{Change: "LoRA", Flags: "--task lora", Reason: "saves nothing"}},
		Excluded:   []recommend.Exclusion{{GPUModel: "A100", Offers: 7, Reason: "no fp8"}},
		SpotSaving: &recommend.SpotSaving{Statement: "spot is 51.9 % cheaper for this 2.6-hour job at a >20% /month interruption band"}}
	h := Handler(&fixedRec{*b, rec}, Options{Now: func() time.Time { return b.now }})
	body := get(t, h, "/?model=x").Body.String()
	for _, want := range []string{
		`<th scope="col" class="n">Cluster $/h</th>`, `<td class="n">165.12</td>`,
		`3 × p5.48xlarge = 24 GPUs (EFA): ZeRO-3 across 24 GPUs`,
		`id="cheapest-cluster">Cheapest plan across instances: 3 × aws us-east-1`,
		`<strong>A100</strong> (7 offers): no fp8`,
		`<a href="/?grad-ckpt=true&amp;model=x&amp;task=qlora#result">all of: gradient checkpointing, QLoRA</a>`,
		`<td class="n">40.0 %</td>`, `<td class="n">×1.50</td>`,
		`LoRA <span class="mono">--task lora</span>: saves nothing`,
		`id="spot-saving">spot is 51.9 % cheaper for this 2.6-hour job at a &gt;20% /month interruption band; each spot offer's job cost includes its expected restarts.`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

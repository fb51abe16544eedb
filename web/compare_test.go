package web

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// checkPage fails t unless rec is a page of the wanted status within the size bound,
// under the CSP, with nothing inline (as TestPages checks every page).
func checkPage(t *testing.T, target string, rec interface {
	Result() *http.Response
}, body string, status int) {
	t.Helper()
	if got := rec.Result().StatusCode; got != status {
		t.Fatalf("%s: status %d, want %d:\n%.2000s", target, got, status, body)
	}
	if len(body) > maxPageBytes {
		t.Errorf("%s: page is %d bytes, want under %d", target, len(body), maxPageBytes)
	}
	if got := rec.Result().Header.Get("Content-Security-Policy"); got != ContentSecurityPolicy {
		t.Errorf("%s: CSP %q", target, got)
	}
	for _, m := range inlineScript.FindAllString(body, -1) {
		if !strings.Contains(m, " src=") {
			t.Errorf("%s: inline script %q", target, m)
		}
	}
	for _, re := range []*regexp.Regexp{inlineHandler, styleAttr, styleElement} {
		if m := re.FindString(body); m != "" {
			t.Errorf("%s: inline code the CSP would block: %q", target, m)
		}
	}
}

// rowRe reads a row of the offers table: its cells, tags and all.
var rowRe = regexp.MustCompile(`(?s)<tr>\s*<td>([^<]*)</td>\s*<td>(.*?)</td>\s*<td class="mono"><a href="([^"]+)"[^>]*>([^<]+)</a></td>(.*?)</tr>`)

var cellRe = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)

var tagRe = regexp.MustCompile(`<[^>]+>`)

// compareRows are the table's rows, each as its cells' text (tags stripped), and the
// instance links.
func compareRows(t *testing.T, body string) (rows [][]string, links []string) {
	t.Helper()
	for _, m := range rowRe.FindAllStringSubmatch(body, -1) {
		cells := []string{m[1], m[2], m[4]}
		for _, c := range cellRe.FindAllStringSubmatch(m[5], -1) {
			cells = append(cells, c[1])
		}
		for i := range cells {
			cells[i] = strings.Join(strings.Fields(html.UnescapeString(tagRe.ReplaceAllString(cells[i], " "))), " ")
		}
		rows = append(rows, cells)
		links = append(links, html.UnescapeString(m[3]))
	}
	return rows, links
}

// Column positions in compareRows' cells.
const (
	cProvider = iota
	cRegion
	cInstance
	cGPU
	cGPUs
	cUsable
	cTotal
	cVCPU
	cRAM
	cLink
	cPurchase
	cPrice
	cPerGPU
	cPerGiB
)

func findRow(rows [][]string, instance, purchase string) []string {
	for _, r := range rows {
		if r[cInstance] == instance && r[cPurchase] == purchase {
			return r
		}
	}
	return nil
}

// TestCompareColumns: vCPU, RAM, the interconnect (the GPU link from gpus.csv and the
// instance type, the cluster interconnect where known), per-GPU and per-GiB prices,
// and the headings sort by every key but the interconnect.
func TestCompareColumns(t *testing.T) {
	h, b := newTestHandler(t)
	var body string
	for _, tc := range []struct {
		provider, instance, link string
	}{
		{"aws", "p5.48xlarge", "NVLink · EFA"},        // H100 SXM, and EFA from interconnect.csv
		{"azure", "Standard_NC96ads_A100_v4", "PCIe"}, // A100 80GB, but the NC sizes have no NVLink
		{"aws", "g6.48xlarge", "PCIe"},                // L4: no NVLink at all
		{"aws", "g4dn.xlarge", "–"},                   // one GPU
		{"azure", "Standard_ND96isr_H100_v5", "NVLink · InfiniBand NDR"},
		{"runpod", "8x_H100-SXM_SECURE", "NVLink"},
		{"oci", "BM.GPU.MI300X.8", "Infinity Fabric · RDMA cluster network"}, // AMD
	} {
		target := "/offers?" + url.Values{"provider": {tc.provider}, "q": {tc.instance}, "by-region": {"true"}, "per-page": {"100"}}.Encode()
		rec := get(t, h, target)
		body = rec.Body.String()
		checkPage(t, target, rec, body, 200)
		rows, _ := compareRows(t, body)
		offers, err := b.st.Offers(context.Background(), store.Query{Providers: []string{tc.provider}, Search: tc.instance})
		if err != nil || len(rows) != min(len(offers), 100) {
			t.Fatalf("%s: %d rows for %d offers (%v)", tc.instance, len(rows), len(offers), err)
		}
		var o *pricing.Offer
		for i := range offers {
			if offers[i].InstanceType == tc.instance && offers[i].Purchase == pricing.OnDemand {
				o = &offers[i]
				break
			}
		}
		r := findRow(rows, tc.instance, "on-demand")
		if o == nil || r == nil {
			t.Errorf("%s: no on-demand offer or row", tc.instance)
			continue
		}
		want := map[int]string{cVCPU: pricing.FormatNum(o.VCPUs, 1), cRAM: pricing.FormatNum(o.RAMGiB, 1), cLink: tc.link,
			cPrice: usd(o.PriceUSDHr), cPerGPU: usd(o.PricePerGPU()), cPerGiB: strconv.FormatFloat(o.PricePerGiB(), 'f', 4, 64),
			cUsable: pricing.FormatNum(o.MemPerDeviceGiB(), 1), cTotal: pricing.FormatNum(o.TotalGPUMemGiB(), 1)}
		for col, w := range want {
			if r[col] != w {
				t.Errorf("%s: column %d is %q, want %q (row %q)", tc.instance, col, r[col], w, r)
			}
		}
	}
	for _, c := range columns {
		if c.Sort == "" {
			if strings.Contains(body, `id="sort-`+strings.ToLower(c.Label)) {
				t.Errorf("the %s heading links to a sort", c.Label)
			}
			continue
		}
		if !strings.Contains(body, `id="sort-`+sortParam(c.Sort)+`"`) {
			t.Errorf("no sort link for %s", c.Sort)
		}
	}
}

// TestCompareGrouping: by default an instance sold at one price in many places is one
// row that lists them ("us-east-1 and 16 more"), standing where its first offer stands;
// by-region=true gives each place its row. The count says both, the CSV is one row per
// offer either way, and paging counts rows.
func TestCompareGrouping(t *testing.T) {
	h, b := newTestHandler(t)
	ctx := context.Background()
	offers, err := b.st.Offers(ctx, store.Query{Providers: []string{"lambda"}})
	if err != nil {
		t.Fatal(err)
	}
	places := map[pricing.RegionGroupKey][]string{}
	for _, o := range offers {
		places[o.RegionGroupKey()] = append(places[o.RegionGroupKey()], o.Place())
	}
	const inst = "gpu_1x_a10"
	var a10 []pricing.Offer
	for _, o := range offers {
		if o.InstanceType == inst && o.Purchase == pricing.OnDemand {
			a10 = append(a10, o)
		}
	}
	if len(a10) < 10 || len(places[a10[0].RegionGroupKey()]) != len(a10) {
		t.Fatalf("the snapshot sells %s in %d places, %d at its first price; pick an instance sold at one price in many", inst, len(a10), len(places[a10[0].RegionGroupKey()]))
	}

	target := "/offers?provider=lambda&per-page=100"
	rec := get(t, h, target)
	body := rec.Body.String()
	checkPage(t, target, rec, body, 200)
	rows, _ := compareRows(t, body)
	r := findRow(rows, inst, "on-demand")
	if r == nil {
		t.Fatalf("no %s row", inst)
	}
	first := a10[0].Region
	if want := first + " and " + strconv.Itoa(len(a10)-1) + " more"; !strings.HasPrefix(r[cRegion], want) {
		t.Errorf("grouped region cell %q, want it to start %q", r[cRegion], want)
	}
	for _, o := range a10[1:min(len(a10), 1+maxPlacesListed)] {
		if !strings.Contains(r[cRegion], o.Place()) {
			t.Errorf("grouped cell %q does not list %s", r[cRegion], o.Place())
		}
	}
	if n := countRows(rows, inst, "on-demand"); n != 1 {
		t.Errorf("%d %s rows grouped, want 1", n, inst)
	}
	wantCount := "Rows 1–" + strconv.Itoa(min(100, len(places))) + " of " + strconv.Itoa(len(places)) + " (" + strconv.Itoa(len(offers)) + " offers"
	if !strings.Contains(body, wantCount) {
		t.Errorf("the count does not say %q", wantCount)
	}

	target = "/offers?provider=lambda&by-region=true&q=" + inst
	rec = get(t, h, target)
	body = rec.Body.String()
	checkPage(t, target, rec, body, 200)
	rows, _ = compareRows(t, body)
	if n := countRows(rows, inst, "on-demand"); n != len(a10) {
		t.Errorf("by region: %d %s rows, want %d", n, inst, len(a10))
	}
	for _, r := range rows {
		if strings.Contains(r[cRegion], "more") {
			t.Errorf("by region, a row still groups: %q", r[cRegion])
		}
	}
	// The view toggles link to the other grouping and keep the rest of the query.
	if !strings.Contains(body, `id="region-toggle" href="/offers?provider=lambda&amp;q=`+inst+`"`) {
		t.Errorf("no toggle back to grouped rows:\n%s", regexp.MustCompile(`<a id="region-toggle"[^>]*>`).FindString(body))
	}
	// The filter form carries the view: a hidden by-region field inside the swapped section.
	if !strings.Contains(body, `<input type="hidden" form="filters" name="by-region" value="true">`) {
		t.Error("the filter form does not carry by-region")
	}
	// The CSV is one row per offer and place, whatever the grouping.
	for _, q := range []string{"provider=lambda", "provider=lambda&by-region=true"} {
		csv := get(t, h, "/offers.csv?"+q).Body.String()
		if n := strings.Count(csv, "\n") - 1; n != len(offers) {
			t.Errorf("%s: CSV of %d rows, want %d", q, n, len(offers))
		}
	}
}

func countRows(rows [][]string, instance, purchase string) int {
	n := 0
	for _, r := range rows {
		if r[cInstance] == instance && r[cPurchase] == purchase {
			n++
		}
	}
	return n
}

// TestCompareSearch: q filters on the server (so it works without JavaScript and in the
// CSV): every row matches each word, the count is the store's for the same search, the
// box keeps the words, and the JSON link asks the API the same (search=).
func TestCompareSearch(t *testing.T) {
	h, b := newTestHandler(t)
	for _, search := range []string{"h100", "lambda H100", "us-west", "a100 80gb azure", "no-such-offer"} {
		want, err := b.st.Offers(context.Background(), store.Query{Search: search})
		if err != nil {
			t.Fatal(err)
		}
		target := "/offers?" + url.Values{"q": {search}, "by-region": {"true"}, "per-page": {"100"}}.Encode()
		rec := get(t, h, target)
		body := rec.Body.String()
		checkPage(t, target, rec, body, 200)
		if !strings.Contains(body, `data-total="`+strconv.Itoa(len(want))+`"`) {
			t.Errorf("%q: the page does not count the store's %d matches", search, len(want))
		}
		rows, _ := compareRows(t, body)
		if len(rows) != min(len(want), 100) {
			t.Errorf("%q: %d rows, want %d", search, len(rows), min(len(want), 100))
		}
		for _, r := range rows {
			hay := strings.ToLower(strings.Join([]string{r[cProvider], r[cRegion], r[cInstance], r[cGPU]}, " "))
			for _, w := range strings.Fields(strings.ToLower(search)) {
				if !strings.Contains(hay, w) {
					t.Errorf("%q: row %v lacks %q", search, r[:4], w)
				}
			}
		}
		if !strings.Contains(body, `id="f-q" name="q" value="`+html.EscapeString(search)+`"`) {
			t.Errorf("%q: the search box does not keep the words", search)
		}
		api := regexp.MustCompile(`<a href="(/v1/offers[^"]*)"`).FindStringSubmatch(body)
		if len(want) > 0 && (api == nil || html.UnescapeString(api[1]) != "/v1/offers?"+url.Values{"search": {search}}.Encode()) {
			t.Errorf("%q: the JSON link %v does not ask the API the same", search, api)
		}
		csv := get(t, h, "/offers.csv?"+url.Values{"q": {search}}.Encode()).Body.String()
		if n := strings.Count(csv, "\n") - 1; n != len(want) {
			t.Errorf("%q: CSV of %d rows, want %d", search, n, len(want))
		}
	}
	if rec := get(t, h, "/offers?q="+url.QueryEscape("a b c d e f g h i")); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "field invalid") {
		t.Errorf("nine words: %d, want 400 with the search box marked", rec.Code)
	}
}

// TestCompareMonthly: monthly=true shows every price × 730 h under month headings; the
// order and the CSV (prices per hour) are unchanged.
func TestCompareMonthly(t *testing.T) {
	h, _ := newTestHandler(t)
	const q = "/offers?provider=lambda&by-region=true&sort=per-gpu"
	hourly, monthly := get(t, h, q).Body.String(), get(t, h, q+"&monthly=true")
	mbody := monthly.Body.String()
	checkPage(t, q+"&monthly=true", monthly, mbody, 200)
	hr, _ := compareRows(t, hourly)
	mr, _ := compareRows(t, mbody)
	if len(hr) == 0 || len(hr) != len(mr) {
		t.Fatalf("%d hourly rows, %d monthly", len(hr), len(mr))
	}
	for i := range hr {
		if hr[i][cInstance] != mr[i][cInstance] || hr[i][cRegion] != mr[i][cRegion] {
			t.Fatalf("row %d: monthly prices reordered the table", i+1)
		}
		for _, col := range []int{cPrice, cPerGPU} {
			h, _ := strconv.ParseFloat(hr[i][col], 64)
			m, _ := strconv.ParseFloat(mr[i][col], 64)
			if d := m - h*hoursPerMonth; d > 0.01*hoursPerMonth || d < -0.01*hoursPerMonth {
				t.Errorf("row %d column %d: %s a month for %s an hour", i+1, col, mr[i][col], hr[i][col])
			}
		}
	}
	for _, heading := range []string{">$/mo", ">$/GPU-mo", ">$/GiB-mo", "Prices per month (730 h)"} {
		if !strings.Contains(mbody, heading) {
			t.Errorf("monthly page lacks %q", heading)
		}
	}
	if strings.Contains(mbody, ">$/h<") {
		t.Error("monthly page still heads a column $/h")
	}
	if !strings.Contains(mbody, `id="period-toggle" href="/offers?by-region=true&amp;provider=lambda&amp;sort=per-gpu" data-swap="offers">show per hour`) {
		t.Errorf("no toggle back to hourly prices: %s", regexp.MustCompile(`<a id="period-toggle"[^>]*>`).FindString(mbody))
	}
	if rec := get(t, h, "/offers?monthly=often"); rec.Code != http.StatusBadRequest {
		t.Errorf("monthly=often: %d, want 400", rec.Code)
	}
	if a, b := get(t, h, "/offers.csv?provider=lambda").Body.String(), get(t, h, "/offers.csv?provider=lambda&monthly=true").Body.String(); a != b {
		t.Error("the CSV changes with monthly; it is always per hour")
	}
}

// TestInstancePage: the page of one instance type has its specs (GPU, count, usable
// and reported memory, vCPU, RAM, the GPU link and the cluster interconnect), every
// place's current on-demand and spot price, and its price history; the Compare table
// links each instance there.
func TestInstancePage(t *testing.T) {
	h, b := newTestHandler(t)
	ctx := context.Background()
	// From Compare, by its link.
	body := get(t, h, "/offers?provider=aws&q=p5.48xlarge").Body.String()
	_, links := compareRows(t, body)
	if len(links) == 0 || links[0] != "/offers/aws/p5.48xlarge" {
		t.Fatalf("Compare links p5.48xlarge to %v", links)
	}
	target := links[0]
	rec := get(t, h, target)
	body = rec.Body.String()
	checkPage(t, target, rec, body, 200)
	offers, err := b.st.Offers(ctx, store.Query{Providers: []string{"aws"}, Search: "p5.48xlarge"})
	if err != nil {
		t.Fatal(err)
	}
	offers = slices.DeleteFunc(offers, func(o pricing.Offer) bool { return o.InstanceType != "p5.48xlarge" })
	o := offers[0]
	for _, want := range []string{
		`<h1><span class="mono">p5.48xlarge</span></h1>`,
		`<dt>GPU</dt><dd><a href="/history?gpu-model=H100">H100</a>`,
		`<dt>GPUs</dt><dd>8</dd>`,
		`<dd>79.19 GiB usable, 80 GiB as the provider reports it<br>`,
		`<dt>vCPU</dt><dd>` + pricing.FormatNum(o.VCPUs, 1) + `</dd>`,
		`<dt>RAM</dt><dd>` + pricing.FormatNum(o.RAMGiB, 1) + ` GiB</dd>`,
		`<dd id="gpu-link">NVLink, 900 GB/s per GPU (both directions, datasheet)</dd>`,
		`<dd id="cluster-link">EFA, 3200 Gbit/s per instance</dd>`,
		`id="chart" data-chart=`,
		`href="/history?instance-type=p5.48xlarge&amp;provider=aws"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Every place, with its on-demand and spot price.
	type pp struct{ od, spot string }
	want := map[string]*pp{}
	for _, o := range offers {
		k := o.Region + "|" + o.Zone
		if want[k] == nil {
			want[k] = &pp{"–", "–"}
		}
		if o.Purchase == pricing.Spot {
			want[k].spot = usd(o.PriceUSDHr)
		} else {
			want[k].od = usd(o.PriceUSDHr)
		}
	}
	got := regexp.MustCompile(`<tr><td>([^<]*)</td><td>([^<]*)</td><td class="n">([^<]*)</td><td class="n">([^<]*)</td>`).FindAllStringSubmatch(body, -1)
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%d places listed, want %d", len(got), len(want))
	}
	for _, g := range got {
		w := want[g[1]+"|"+g[2]]
		if w == nil || w.od != g[3] || w.spot != g[4] {
			t.Errorf("place %s %s: on demand %s, spot %s; want %+v", g[1], g[2], g[3], g[4], w)
		}
	}
	// Monthly, and the history chart's data over the stored intervals.
	if m := get(t, h, target+"?monthly=true").Body.String(); !strings.Contains(m, "On demand $/mo") || !strings.Contains(m, usd(o.PriceUSDHr*hoursPerMonth)) {
		t.Error("monthly instance page lacks monthly prices")
	}
	// The instance whose price changed: its chart has the changes.
	body = get(t, h, instanceURL(changedOffer.Provider, changedOffer.InstanceType)).Body.String()
	if !strings.Contains(body, `<dd id="gpu-link">none (one GPU)</dd>`) {
		t.Error("a one-GPU instance's link is not none")
	}
	pts, err := b.History(ctx, store.HistoryQuery{Provider: changedOffer.Provider, InstanceType: changedOffer.InstanceType, Region: changedOffer.Region})
	if err != nil || len(pts) != 3 {
		t.Fatalf("%d intervals, %v", len(pts), err)
	}
	m := regexp.MustCompile(`data-chart="([^"]+)"`).FindStringSubmatch(body)
	var c chart
	if m == nil || json.Unmarshal([]byte(html.UnescapeString(m[1])), &c) != nil {
		t.Fatal("no chart on the changed offer's page")
	}
	for _, pt := range pts {
		if !chartHas(c, pt.ValidFrom.Unix(), pt.PriceUSDHr) {
			t.Errorf("the instance's chart lacks %v at %v", pt.PriceUSDHr, pt.ValidFrom)
		}
	}
	// A PCIe instance of an NVLink GPU.
	if body := get(t, h, "/offers/azure/Standard_NC96ads_A100_v4").Body.String(); !strings.Contains(body, `<dd id="gpu-link">PCIe, through the host (PCIe Gen4 x16, 32 GB/s per direction)</dd>`) {
		t.Errorf("NC96ads: %s", regexp.MustCompile(`<dd id="gpu-link">[^<]*`).FindString(body))
	}
	// Not there: 404 pages, named.
	for _, target := range []string{"/offers/aws/p99.nothing", "/offers/nosuchcloud/p5.48xlarge", "/offers/aws/" + url.PathEscape("a/b c")} {
		rec := get(t, h, target)
		checkPage(t, target, rec, rec.Body.String(), http.StatusNotFound)
		if !strings.Contains(rec.Body.String(), `class="error"`) {
			t.Errorf("%s: no error named", target)
		}
	}
	// The largest instance page (the most places) stays within the page bound.
	all, _ := b.st.Offers(ctx, store.Query{})
	n := map[[2]string]int{}
	var top [2]string
	for _, o := range all {
		k := [2]string{o.Provider, o.InstanceType}
		if n[k]++; n[k] > n[top] {
			top = k
		}
	}
	target = instanceURL(top[0], top[1])
	rec = get(t, h, target)
	checkPage(t, target, rec, rec.Body.String(), 200)
}

// TestInstanceChartBounded: an instance's chart draws every place's line while that is
// small, and only the cheapest place's price (per instance-hour) once every place's
// lines would pass maxChartBytes, so the page stays within its bound.
func TestInstanceChartBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(places, changes int) []store.PricePoint {
		var pts []store.PricePoint
		for p := range places {
			for c := range changes {
				from := t0.Add(time.Duration(c*places+p) * time.Hour)
				pt := store.PricePoint{Provider: "gcp", Region: "r" + strconv.Itoa(p), InstanceType: "a3", Purchase: pricing.OnDemand,
					GPUCount: 8, PriceUSDHr: 80 + float64(p) + float64(c%3), ValidFrom: from}
				if c < changes-1 {
					to := from.Add(time.Duration(places) * time.Hour)
					pt.ValidTo = &to
				}
				pts = append(pts, pt)
			}
		}
		return pts
	}
	now := t0.AddDate(1, 0, 0)
	small, cheapest := instanceChart(mk(3, 3), now)
	if cheapest || len(small.Series) != 3 || small.Unit != "$/h" {
		t.Errorf("three places: cheapest %v, %d series, unit %s; want a line per place", cheapest, len(small.Series), small.Unit)
	}
	big, cheapest := instanceChart(mk(40, 60), now)
	b, _ := json.Marshal(big)
	if !cheapest || len(big.Series) != 1 || big.Unit != "$/h" || len(b) > maxChartBytes {
		t.Errorf("40 places × 60 changes: cheapest %v, %d series, unit %s, %d bytes", cheapest, len(big.Series), big.Unit, len(b))
	}
	// The cheapest line is r0's price (the lowest place) at each of its changes.
	if !chartHas(*big, t0.Unix(), 80) || !chartHas(*big, t0.Add(40*time.Hour).Unix(), 81) {
		t.Errorf("the cheapest line lacks r0's prices: %+v", big.Series)
	}
}

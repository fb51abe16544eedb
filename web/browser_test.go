package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
	"github.com/pickergpu/picker/web/browsertest"
)

// TestBrowser drives the pages in headless Chromium against the test backend: a
// keyboard-only question, sorting, filtering and the CSV download, a history chart,
// and the providers page, with no console error anywhere. It skips only when no
// Chromium is installed.
func TestBrowser(t *testing.T) {
	br := browsertest.Start(t)
	h, be := newTestHandler(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx := context.Background()

	t.Run("ask by keyboard", func(t *testing.T) {
		br.Do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("ask")))
		// Tab from the top of the page to the model field: skip link, brand, four nav
		// links, then the form.
		focused := ""
		for i := 0; i < 12 && focused != "f-model"; i++ {
			br.Do(t, chromedp.KeyEvent(kb.Tab))
			focused = browsertest.Eval[string](t, br, "document.activeElement.id")
		}
		if focused != "f-model" {
			t.Fatalf("Tab never reached the model field (focus on %q)", focused)
		}
		// Type the model, Tab to the task select and pick lora by typing, Tab past
		// precision and quantization to the batch, and submit with Enter.
		br.Do(t, chromedp.KeyEvent("llama-2-7b"), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("lora"),
			chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("4"),
			chromedp.KeyEvent(kb.Enter))
		br.Do(t, chromedp.WaitVisible(chromedp.ID("top-offers")))
		loc := browsertest.Eval[string](t, br, "location.search")
		q, err := url.ParseQuery(loc[1:])
		if err != nil {
			t.Fatal(err)
		}
		params, order := askParams(q)
		if got, want := commandLine(params, order), "picker recommend --model llama-2-7b --task lora --batch 4"; got != want {
			t.Errorf("the URL asks %q, want %q", got, want)
		}
		if got := browsertest.Eval[string](t, br, "document.getElementById('cmdline').textContent"); got != commandLine(params, order) {
			t.Errorf("page shows command %q", got)
		}
		rec, err := be.Recommend(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		rows := browsertest.Eval[[]map[string]string](t, br,
			`[...document.querySelectorAll('#top-offers tbody tr[data-provider]')].map(r => Object.assign({}, r.dataset))`)
		if len(rows) != len(rec.Offers) || len(rows) == 0 {
			t.Fatalf("page lists %d offers, the backend recommends %d", len(rows), len(rec.Offers))
		}
		top, want := rows[0], rec.Offers[0]
		if top["provider"] != want.Provider || top["region"] != want.Region || top["zone"] != want.Zone ||
			top["instanceType"] != want.InstanceType || top["purchase"] != string(want.Purchase) || top["price"] != strconv.FormatFloat(want.PriceUSDHr, 'g', -1, 64) {
			t.Errorf("top offer on the page %v, the backend's %s at %v", top, want.Key(), want.PriceUSDHr)
		}
		// At 1280 px the offers table fits without a horizontal scroll bar.
		if over := browsertest.Eval[int](t, br, `(t => t.scrollWidth - t.parentElement.clientWidth)(document.getElementById('top-offers'))`); over > 0 {
			t.Errorf("the offers table overflows its box by %d px at 1280 px", over)
		}
		br.Screenshot(t, "ask")
		br.CheckConsole(t, "ask")
	})

	t.Run("compare: sort, filter, CSV", func(t *testing.T) {
		br.Do(t, chromedp.Navigate(srv.URL+"/offers"), chromedp.WaitVisible(chromedp.ID("offers-table")))
		// Sorting swaps the table in place (app.js) and keeps the URL in step.
		br.Do(t, chromedp.Click(chromedp.ID("sort-per-gpu")), chromedp.WaitVisible(chromedp.CSS(`th[aria-sort="ascending"] #sort-per-gpu`)))
		perGPU := func() []float64 {
			cells := browsertest.Eval[[]string](t, br, `[...document.querySelectorAll('#offers-table tbody td:nth-child(13)')].map(td => td.textContent)`)
			var out []float64
			for _, c := range cells {
				v, err := strconv.ParseFloat(c, 64)
				if err != nil {
					t.Fatalf("$/GPU-h cell %q", c)
				}
				out = append(out, v)
			}
			return out
		}
		asc := perGPU()
		for i := 1; i < len(asc); i++ {
			if asc[i] < asc[i-1] {
				t.Fatalf("ascending $/GPU-h: row %d %v after %v", i+1, asc[i], asc[i-1])
			}
		}
		if loc := browsertest.Eval[string](t, br, "location.search"); loc != "?sort=per-gpu" {
			t.Errorf("URL after sorting: %q", loc)
		}
		br.Do(t, chromedp.Click(chromedp.ID("sort-per-gpu")), chromedp.WaitVisible(chromedp.CSS(`th[aria-sort="descending"] #sort-per-gpu`)))
		desc := perGPU()
		if len(desc) == 0 || desc[0] < asc[len(asc)-1] {
			t.Errorf("descending starts at %v, below the ascending page's last %v", desc, asc[len(asc)-1])
		}
		// By keyboard: focus a heading's link and press Enter; focus stays on it.
		br.Do(t, chromedp.Focus(chromedp.ID("sort-per-gib")), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(`th[aria-sort="ascending"] #sort-per-gib`)))
		if id := browsertest.Eval[string](t, br, "document.activeElement.id"); id != "sort-per-gib" {
			t.Errorf("after sorting by keyboard the focus is on %q, want the heading", id)
		}
		br.CheckConsole(t, "offers sorted")

		// Filter: lambda's 8-GPU offers.
		br.Do(t, chromedp.SetValue(chromedp.ID("f-provider"), "lambda"), chromedp.SetValue(chromedp.ID("f-gpus"), "8"),
			chromedp.Click(chromedp.ID("filter-submit")), chromedp.WaitVisible(chromedp.CSS(`#offer-count`)))
		br.Do(t, chromedp.WaitVisible(chromedp.CSS(`#f-provider[value="lambda"]`)))
		loc := browsertest.Eval[string](t, br, "location.search")
		q, _ := url.ParseQuery(loc[1:])
		v, err := (&server{b: be}).selectOffers(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		cells := browsertest.Eval[[][]string](t, br, `[...document.querySelectorAll('#offers-table tbody tr')].map(tr => [tr.cells[0].textContent, tr.cells[4].textContent])`)
		if len(cells) == 0 || len(cells) != min(len(v.groups), v.perPage) {
			t.Fatalf("filtered table has %d rows, want %d", len(cells), min(len(v.groups), v.perPage))
		}
		for _, c := range cells {
			if c[0] != "lambda" || c[1] != "8" {
				t.Errorf("row %v passed the filter provider=lambda, gpus=8", c)
			}
		}
		total := browsertest.Eval[string](t, br, `document.getElementById('offer-count').dataset.total`)
		if total != strconv.Itoa(len(v.all)) {
			t.Errorf("count says %s offers, want %d", total, len(v.all))
		}

		// The download is the export writer's output for what the page shows.
		got := br.Download(t, "#csv")
		offers := make([]pricing.Offer, len(v.all))
		for i, o := range v.all {
			offers[i] = *o
		}
		var want bytes.Buffer
		if err := pricing.WriteExportCSV(&want, offers); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("downloaded CSV (%d bytes) differs from the exporter's (%d bytes):\n%s", len(got), want.Len(), got)
		}
		br.Screenshot(t, "compare")
		br.CheckConsole(t, "offers filtered")
	})

	t.Run("history chart", func(t *testing.T) {
		pts, err := be.History(ctx, store.HistoryQuery{Provider: changedOffer.Provider, InstanceType: changedOffer.InstanceType, Region: changedOffer.Region})
		if err != nil {
			t.Fatal(err)
		}
		// From the Compare page's chart link of the changed offer.
		br.Do(t, chromedp.Navigate(srv.URL+"/offers?provider=lambda&region=us-east-1&purchase=on-demand&per-page=100"),
			chromedp.WaitVisible(chromedp.ID("offers-table")))
		link := "/history?" + offerQuery(changedOffer)
		br.Do(t, chromedp.Click(chromedp.CSS(`a[href="`+link+`"]`)), chromedp.WaitVisible(chromedp.CSS(`#chart[data-drawn] canvas`)))
		data := browsertest.Eval[[][]*float64](t, br, `pickerCharts[0].data`)
		if drawn := browsertest.Eval[string](t, br, `document.getElementById('chart').dataset.drawn`); drawn != strconv.Itoa(len(pts)+1) {
			// every stored interval, plus the current price carried to now
			t.Errorf("chart drew %s points, want %d", drawn, len(pts)+1)
		}
		for _, pt := range pts {
			found := false
			for i, x := range data[0] {
				if x != nil && int64(*x) == pt.ValidFrom.Unix() {
					for _, s := range data[1:] {
						found = found || (s[i] != nil && *s[i] == pt.PriceUSDHr)
					}
				}
			}
			if !found {
				t.Errorf("uPlot's data lacks the change to %v at %v", pt.PriceUSDHr, pt.ValidFrom)
			}
		}
		br.Screenshot(t, "history-offer")
		br.CheckConsole(t, "history of an offer")

		br.Do(t, chromedp.Navigate(srv.URL+"/history?gpu-model=H100"), chromedp.WaitVisible(chromedp.CSS(`#chart[data-drawn] canvas`)))
		if n := browsertest.Eval[int](t, br, `pickerCharts[0].data[1].filter(v => v != null).length`); n == 0 {
			t.Error("the H100 chart drew no on-demand point")
		}
		br.Screenshot(t, "history-model")
		br.CheckConsole(t, "history of a GPU model")
	})

	t.Run("providers", func(t *testing.T) {
		br.Do(t, chromedp.Navigate(srv.URL+"/providers"), chromedp.WaitVisible(chromedp.ID("providers-table")))
		n := browsertest.Eval[int](t, br, `document.querySelectorAll('#providers-table tbody tr').length`)
		provs, _ := be.Providers(ctx)
		if n != len(provs) || n == 0 {
			t.Errorf("%d provider rows, want %d", n, len(provs))
		}
		br.Screenshot(t, "providers")
		br.CheckConsole(t, "providers")
	})

	t.Run("without JavaScript", func(t *testing.T) {
		br.Scripts(t, false)
		defer br.Scripts(t, true)
		// The form submits as a plain GET and the answer is rendered on the server.
		br.Do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("ask")),
			chromedp.SetValue(chromedp.ID("f-model"), "mistral-7b"), chromedp.SetValue(chromedp.ID("f-task"), "qlora"),
			chromedp.Click(chromedp.ID("ask-submit")), chromedp.WaitVisible(chromedp.CSS(`#top-offers tbody tr[data-provider]`)))
		// Sorting is a plain link: the server sorts.
		br.Do(t, chromedp.Navigate(srv.URL+"/offers"), chromedp.Click(chromedp.ID("sort-per-gib")),
			chromedp.WaitVisible(chromedp.CSS(`th[aria-sort="ascending"] #sort-per-gib`)))
		// The chart needs JavaScript; the table of changes does not.
		br.Do(t, chromedp.Navigate(srv.URL+"/history?"+offerQuery(changedOffer)), chromedp.WaitVisible(chromedp.ID("history-table")))
		ctx, cancel := context.WithTimeout(br.Ctx, 10*time.Second)
		defer cancel()
		drawn, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("#chart[data-drawn]"), chromedp.AtLeast(0)))
		if err != nil {
			t.Fatal(err)
		}
		if len(drawn) != 0 {
			t.Error("a chart was drawn with JavaScript disabled: this subtest did not disable it")
		}
		br.CheckConsole(t, "pages without JavaScript")
	})
}

// layoutReport is what checkLayout's script finds on a page: how far the document
// overflows the window, and each key element that is missing, empty or not within the
// window's width (an element inside a .scroll box counts as within when its box is:
// the box scrolls, the page does not).
type layoutReport struct {
	Overflow int      `json:"overflow"`
	Width    int      `json:"width"`
	Bad      []string `json:"bad"`
}

const layoutScript = `((sels) => {
  const w = window.innerWidth, bad = [];
  for (const sel of sels) {
    const el = document.querySelector(sel);
    if (!el) { bad.push(sel + ': missing'); continue; }
    const box = el.closest('.scroll') || el, r = box.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) bad.push(sel + ': not displayed');
    else if (r.left < -0.5 || r.right > w + 0.5) bad.push(sel + ': spans ' + Math.round(r.left) + '–' + Math.round(r.right) + ' px of ' + w);
  }
  return {overflow: document.documentElement.scrollWidth - w, width: w, bad: bad};
})(%s)`

// TestBrowserResponsive loads every page in a 400 px and a 1400 px window: the
// document never scrolls sideways (wide tables scroll inside their own box), the key
// controls and results lie within the window, the Ask form's fields stack into one
// column when narrow and spread into several when wide. Screenshots of each page at
// both widths are kept under $PICKER_SCREENSHOT_DIR.
func TestBrowserResponsive(t *testing.T) {
	br := browsertest.Start(t)
	h, _ := newTestHandler(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	pages := []struct {
		name, path, wait string
		keys             []string
		status404        bool
	}{
		{"ask-form", "/", "#ask", []string{"#f-model", "#f-task", "#f-grad-ckpt", "#ask-submit", "header nav"}, false},
		{"ask-answer", "/?model=llama-2-7b&task=qlora", "#top-offers", []string{"#need", "#top-offers", "#warnings summary", "#cmdline", "#f-model"}, false},
		{"compare", "/offers", "#offers-table", []string{"#f-provider", "#filter-submit", "#offer-count", "#offers-table"}, false},
		{"history-offer", "/history?" + offerQuery(changedOffer), "#chart[data-drawn] canvas", []string{"#h-provider", "#chart canvas", "#history-table"}, false},
		{"history-model", "/history?gpu-model=H100", "#chart[data-drawn] canvas", []string{"#h-gpu", "#chart canvas", "#history-table"}, false},
		{"providers", "/providers", "#providers-table", []string{"#providers-table", "h1"}, false},
		{"error", "/nope", ".error", []string{".error", "header nav"}, true},
	}
	for _, width := range []int64{400, 1400} {
		br.Viewport(t, width, 900)
		for _, pg := range pages {
			t.Run(fmt.Sprintf("%s at %d px", pg.name, width), func(t *testing.T) {
				br.Do(t, chromedp.Navigate(srv.URL+pg.path), chromedp.WaitVisible(chromedp.CSS(pg.wait)))
				sels, _ := json.Marshal(pg.keys)
				rep := browsertest.Eval[layoutReport](t, br, fmt.Sprintf(layoutScript, sels))
				if rep.Width != int(width) {
					t.Fatalf("window is %d px wide, want %d", rep.Width, width)
				}
				if rep.Overflow > 0 {
					t.Errorf("the document is %d px wider than the %d px window", rep.Overflow, width)
				}
				for _, b := range rep.Bad {
					t.Errorf("key element %s", b)
				}
				br.Screenshot(t, fmt.Sprintf("%s-%d", pg.name, width))
				if pg.status404 {
					// The browser logs the page's own 404; anything else is a fault.
					for _, m := range br.Console() {
						if !strings.Contains(m, "status of 404") || !strings.Contains(m, pg.path) {
							t.Errorf("%s: %s", pg.name, m)
						}
					}
					return
				}
				br.CheckConsole(t, pg.name)
			})
		}
		// The Ask form: one column of fields when narrow, several when wide.
		br.Do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("ask")))
		cols := browsertest.Eval[int](t, br, `new Set([...document.querySelectorAll('#ask fieldset .field')].map(f => Math.round(f.getBoundingClientRect().left))).size`)
		if width <= 400 && cols != 1 {
			t.Errorf("at %d px the form's fields stand in %d columns, want 1", width, cols)
		}
		if width >= 1400 && cols < 4 {
			t.Errorf("at %d px the form's fields stand in %d columns, want several", width, cols)
		}
		// Asked on a phone: gradient checkpointing off (a QLoRA default) reaches the URL
		// as false, and the page opens at the answer, not at the form it came from.
		if width <= 400 {
			br.Do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("ask")),
				chromedp.SetValue(chromedp.ID("f-model"), "llama-2-7b"), chromedp.SetValue(chromedp.ID("f-task"), "qlora"),
				chromedp.SetValue(chromedp.ID("f-grad-ckpt"), "false"), chromedp.Click(chromedp.ID("ask-submit")),
				chromedp.WaitVisible(chromedp.ID("top-offers")))
			if loc := browsertest.Eval[string](t, br, "location.search + location.hash"); loc != "?grad-ckpt=false&model=llama-2-7b&task=qlora#result" {
				t.Errorf("after asking, the page is %q; want grad-ckpt=false kept and the answer in view", loc)
			}
			if top := browsertest.Eval[float64](t, br, "document.getElementById('result').getBoundingClientRect().top"); top < -1 || top > 100 {
				t.Errorf("the answer starts %v px from the window's top, want at the top", top)
			}
			br.Screenshot(t, fmt.Sprintf("ask-asked-%d", width))
			br.CheckConsole(t, "ask on a phone")
		}
		// A wide table scrolls inside its own box when narrow.
		br.Do(t, chromedp.Navigate(srv.URL+"/?model=llama-2-7b&task=qlora"), chromedp.WaitVisible(chromedp.ID("top-offers")))
		if width <= 400 {
			scrolls := browsertest.Eval[bool](t, br, `(t => t.scrollWidth > t.parentElement.clientWidth && getComputedStyle(t.parentElement).overflowX === 'auto')(document.getElementById('top-offers'))`)
			if !scrolls {
				t.Errorf("at %d px the offers table does not scroll in its own box", width)
			}
		}
	}
}

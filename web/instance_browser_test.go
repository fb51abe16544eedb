package web

import (
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pickergpu/picker/web/browsertest"
)

// TestBrowserCompareAndInstance drives the Compare page's new parts and the instance
// page in headless Chromium: at 400 px and 1400 px neither page scrolls sideways (the
// tables scroll in their own box), a grouped row opens to list its places, an instance
// link leads to its page with the chart drawn and every place listed, the monthly
// toggle swaps the table in place and the filter form keeps it, and without JavaScript
// the toggles are plain links the server answers. No console error anywhere.
func TestBrowserCompareAndInstance(t *testing.T) {
	br := browsertest.Start(t)
	h, _ := newTestHandler(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	overflow := func() int {
		return browsertest.Eval[int](t, br, `document.documentElement.scrollWidth - window.innerWidth`)
	}
	const instance = "/offers/aws/p5.48xlarge"

	for _, width := range []int64{400, 1400} {
		t.Run(fmt.Sprintf("%d px", width), func(t *testing.T) {
			br.Do(t, chromedp.EmulateViewport(width, 900))
			br.Do(t, chromedp.Navigate(srv.URL+"/offers?provider=lambda"), chromedp.WaitVisible(chromedp.ID("offers-table")))
			if w := browsertest.Eval[int](t, br, `window.innerWidth`); w != int(width) {
				t.Fatalf("window is %d px wide, want %d", w, width)
			}
			if o := overflow(); o > 0 {
				t.Errorf("Compare is %d px wider than the %d px window", o, width)
			}
			// A grouped row opens to list its places.
			br.Do(t, chromedp.Click(chromedp.CSS(`#offers-table details.places summary`)),
				chromedp.WaitVisible(chromedp.CSS(`#offers-table details.places[open]`)))
			if o := overflow(); o > 0 {
				t.Errorf("an opened row makes Compare %d px wider than the window", o)
			}
			br.Screenshot(t, fmt.Sprintf("compare-grouped-%d", width))

			br.Do(t, chromedp.Navigate(srv.URL+instance), chromedp.WaitVisible(chromedp.CSS(`#chart[data-drawn] canvas`)))
			if o := overflow(); o > 0 {
				t.Errorf("the instance page is %d px wider than the %d px window", o, width)
			}
			// The chart and the tables lie within the window (a table may scroll in its box).
			bad := browsertest.Eval[[]string](t, br, `[...document.querySelectorAll('#specs, #chart, #places-table')].filter(el => {
				const r = (el.closest('.scroll') || el).getBoundingClientRect();
				return r.left < -0.5 || r.right > window.innerWidth + 0.5 || r.width === 0;
			}).map(el => el.id)`)
			if len(bad) > 0 {
				t.Errorf("outside the window or not shown: %v", bad)
			}
			br.Screenshot(t, fmt.Sprintf("instance-%d", width))
			br.CheckConsole(t, fmt.Sprintf("pages at %d px", width))
		})
	}
	br.Do(t, chromedp.EmulateViewport(1280, 900))

	t.Run("from Compare to an instance", func(t *testing.T) {
		br.Do(t, chromedp.Navigate(srv.URL+"/offers?provider=aws&q=p5.48xlarge"), chromedp.WaitVisible(chromedp.ID("offers-table")),
			chromedp.Click(chromedp.CSS(`#offers-table a[href="`+instance+`"]`)), chromedp.WaitVisible(chromedp.ID("places-table")))
		if path := browsertest.Eval[string](t, br, "location.pathname"); path != instance {
			t.Fatalf("the instance link led to %s", path)
		}
		places := browsertest.Eval[int](t, br, `document.querySelectorAll('#places-table tbody tr').length`)
		if want := browsertest.Eval[string](t, br, `document.getElementById('prices-h').textContent`); !strings.Contains(want, " "+strconv.Itoa(places)+" place") {
			t.Errorf("the heading %q does not count the %d places listed", want, places)
		}
		if drawn := browsertest.Eval[string](t, br, `document.getElementById('chart').dataset.drawn`); drawn == "" || drawn == "0" {
			t.Errorf("the history chart drew %q points", drawn)
		}
		br.CheckConsole(t, "instance page")
	})

	t.Run("monthly in place", func(t *testing.T) {
		br.Do(t, chromedp.Navigate(srv.URL+"/offers?provider=lambda&sort=per-gpu"), chromedp.WaitVisible(chromedp.ID("offers-table")),
			chromedp.Click(chromedp.ID("period-toggle")), chromedp.WaitVisible(chromedp.CSS(`#sort-price[href*="monthly=true"]`)))
		if head := browsertest.Eval[string](t, br, `document.getElementById('sort-per-gpu').textContent`); !strings.HasPrefix(head, "$/GPU-mo") {
			t.Errorf("after the toggle the heading is %q", head)
		}
		if loc := browsertest.Eval[string](t, br, "location.search"); !strings.Contains(loc, "monthly=true") {
			t.Errorf("the URL %q does not keep the toggle", loc)
		}
		if id := browsertest.Eval[string](t, br, "document.activeElement.id"); id != "period-toggle" {
			t.Errorf("after the swap the focus is on %q, want the toggle", id)
		}
		// The filter form keeps the view (sort and monthly) through its hidden fields.
		br.Do(t, chromedp.SetValue(chromedp.ID("f-q"), "a100"), chromedp.Click(chromedp.ID("filter-submit")),
			chromedp.WaitVisible(chromedp.CSS(`#f-q[value="a100"]`)))
		loc := browsertest.Eval[string](t, br, "location.search")
		for _, want := range []string{"monthly=true", "sort=per-gpu", "q=a100", "provider=lambda"} {
			if !strings.Contains(loc, want) {
				t.Errorf("after filtering the URL %q lacks %s", loc, want)
			}
		}
		br.CheckConsole(t, "monthly toggle")
	})

	t.Run("without JavaScript", func(t *testing.T) {
		br.Scripts(t, false)
		defer br.Scripts(t, true)
		br.Do(t, chromedp.Navigate(srv.URL+"/offers?provider=lambda"), chromedp.WaitVisible(chromedp.ID("offers-table")),
			chromedp.Click(chromedp.ID("region-toggle")), chromedp.WaitVisible(chromedp.CSS(`#region-toggle[href="/offers?provider=lambda"]`)),
			chromedp.Click(chromedp.ID("period-toggle")), chromedp.WaitVisible(chromedp.CSS(`#sort-price[href*="monthly=true"]`)))
		if n := browsertest.Eval[int](t, br, `document.querySelectorAll('#offers-table details.places').length`); n != 0 {
			t.Errorf("one row per region still groups %d rows", n)
		}
		br.Do(t, chromedp.Navigate(srv.URL+instance), chromedp.WaitVisible(chromedp.ID("places-table")),
			chromedp.Click(chromedp.ID("period-toggle")), chromedp.WaitVisible(chromedp.CSS(`#period-toggle[href="`+instance+`"]`)))
		br.CheckConsole(t, "without JavaScript")
	})
}

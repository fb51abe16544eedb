package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/web"
	"github.com/pickergpu/picker/web/browsertest"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "copy the Ask page's screenshots to docs/web-ask.png and docs/web-ask-narrow.png (the README's)")

// runAt runs the CLI with the clock at now and returns its exit code and stdout.
func runAt(t *testing.T, now time.Time, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	tty := false
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir()}
	m := Main{Stdout: &out, Stderr: &errb, Args: args, TTY: &tty, Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return now }}
	code := m.Run(context.Background())
	if code != 0 && code != exitNoFit {
		t.Fatalf("picker %v: exit %d: %s", args, code, errb.String())
	}
	return code, out.String()
}

// docScreenshot copies the screenshot at shot to docs/name, the README's, when the
// test runs with -update-screenshot.
func docScreenshot(t *testing.T, shot, name string) {
	t.Helper()
	if !*updateScreenshot {
		return
	}
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWebEndToEnd opens the pages of a running `picker daemon` (temporary database,
// one static provider whose price changed once) in headless Chromium and checks them
// against the CLI: the form's top offer is `picker recommend -o json`'s, the CSV
// download is `picker export`'s, the history chart drew `picker history`'s changes,
// and no page logs a console error.
func TestWebEndToEnd(t *testing.T) {
	br := browsertest.Start(t)
	dir := t.TempDir()
	prices := filepath.Join(dir, "mine.toml")
	cfgPath := filepath.Join(dir, "c.toml")
	db := filepath.Join(dir, "picker.db")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("[providers.static]\nfiles = [%q]\nschedule = \"@every 1h\"\n", prices)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A lab H200 box, cheap enough to be the top offer, whose price changes once; the
	// second refresh is recent, so the daemon does not refresh at start.
	now := time.Now().UTC().Truncate(time.Second)
	for i, price := range []string{"0.5", "0.45"} {
		box := "[[offers]]\nregion = \"lab\"\ninstance_type = \"box\"\ngpu_model = \"H200\"\ngpu_count = 1\nprice_usd_hr = " + price + "\n"
		at := now.Add(time.Duration(i-1) * 24 * time.Hour)
		if err := os.WriteFile(prices, []byte(box), 0o644); err != nil {
			t.Fatal(err)
		}
		// A price file's offers are observed at its modification time.
		if err := os.Chtimes(prices, at, at); err != nil {
			t.Fatal(err)
		}
		runAt(t, at, "--db", db, "--config", cfgPath, "refresh")
	}
	base, _, stop := startDaemon(t, db, cfgPath)
	defer stop()
	cli := func(args ...string) string {
		_, out := runAt(t, now, append([]string{"--db", db, "--config", cfgPath}, args...)...)
		return out
	}

	t.Run("ask", func(t *testing.T) {
		br.Do(t, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("ask")),
			chromedp.SetValue(chromedp.ID("f-model"), "llama-2-7b"), chromedp.SetValue(chromedp.ID("f-task"), "lora"),
			chromedp.SetValue(chromedp.ID("f-batch"), "4"), chromedp.Click(chromedp.ID("ask-submit")),
			chromedp.WaitVisible(chromedp.ID("top-offers")))
		var want struct{ Offers []recommend.Fit } // the offers of RecommendResult's JSON
		if err := json.Unmarshal([]byte(cli("recommend", "--model", "llama-2-7b", "--task", "lora", "--batch", "4", "-o", "json")), &want); err != nil {
			t.Fatal(err)
		}
		rows := browsertest.Eval[[]map[string]string](t, br,
			`[...document.querySelectorAll('#top-offers tbody tr[data-provider]')].map(r => Object.assign({}, r.dataset))`)
		if len(rows) != len(want.Offers) || len(rows) == 0 {
			t.Fatalf("page lists %d offers, picker recommend %d", len(rows), len(want.Offers))
		}
		for i, f := range want.Offers {
			r := rows[i]
			if r["provider"] != f.Provider || r["region"] != f.Region || r["zone"] != f.Zone || r["instanceType"] != f.InstanceType ||
				r["purchase"] != string(f.Purchase) || r["price"] != strconv.FormatFloat(f.PriceUSDHr, 'g', -1, 64) {
				t.Errorf("offer %d: page %v, picker recommend %s at %v", i+1, r, f.Key(), f.PriceUSDHr)
			}
		}
		if top := want.Offers[0]; top.Provider != "static" {
			t.Errorf("top offer %s; the lab H200 at $0.45 should win", top.Key())
		}
		cmdline := browsertest.Eval[string](t, br, "document.getElementById('cmdline').textContent")
		if cmdline != "picker recommend --model llama-2-7b --task lora --batch 4" {
			t.Errorf("command line %q", cmdline)
		}
		br.Screenshot(t, "ask")
		br.CheckConsole(t, "ask")

		// The README's screenshot: a question the lab box (on demand only) does not
		// answer, so it shows the embedded snapshot's offers.
		br.Do(t, chromedp.Navigate(base+"/?model=llama-2-7b&task=lora&batch=4&purchase=spot"), chromedp.WaitVisible(chromedp.ID("top-offers")))
		docScreenshot(t, br.Screenshot(t, "ask-spot"), "web-ask.png")
		br.CheckConsole(t, "ask (spot)")
	})

	t.Run("CSV is picker export", func(t *testing.T) {
		q := url.Values{"gpu-model": {"H100,H200"}, "purchase": {"on-demand"}, "min-vram": {"80"}}
		br.Do(t, chromedp.Navigate(base+"/offers?"+q.Encode()), chromedp.WaitVisible(chromedp.ID("csv")))
		got := br.Download(t, "#csv")
		want := cli("export", "--format", "csv", "--gpu-model", "H100,H200", "--purchase", "on-demand", "--min-vram", "80")
		if string(got) != want {
			t.Errorf("downloaded CSV (%d bytes) differs from picker export's (%d bytes)", len(got), len(want))
		}
		br.Screenshot(t, "compare")
		br.CheckConsole(t, "compare")
	})

	t.Run("history", func(t *testing.T) {
		var rows []historyRow
		if err := json.Unmarshal([]byte(cli("history", "--provider", "static", "--instance-type", "box", "-o", "json")), &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 {
			t.Fatalf("picker history: %d intervals, want 2", len(rows))
		}
		br.Do(t, chromedp.Navigate(base+"/history?provider=static&instance-type=box&region=lab&zone="),
			chromedp.WaitVisible(chromedp.CSS(`#chart[data-drawn] canvas`)))
		data := browsertest.Eval[[][]*float64](t, br, `pickerCharts[0].data`)
		for _, r := range rows {
			found := false
			for i, x := range data[0] {
				if x != nil && int64(*x) == r.ValidFrom.Unix() && data[1][i] != nil && *data[1][i] == r.PriceUSDHr {
					found = true
				}
			}
			if !found {
				t.Errorf("chart lacks the change to %v at %v", r.PriceUSDHr, r.ValidFrom)
			}
		}
		br.Screenshot(t, "history")
		br.CheckConsole(t, "history")
		br.Do(t, chromedp.Navigate(base+"/providers"), chromedp.WaitVisible(chromedp.CSS(`tr[data-provider="static"]`)))
		if over := browsertest.Eval[int](t, br, `(t => t.scrollWidth - t.parentElement.clientWidth)(document.getElementById('providers-table'))`); over > 0 {
			t.Errorf("the providers table overflows its box by %d px at 1280 px", over)
		}
		// static was refreshed live; aws never was, whatever run the seed recorded.
		cells := browsertest.Eval[[]string](t, br, `['static', 'aws'].map(p => document.querySelector('tr[data-provider="' + p + '"] td.last-success').textContent)`)
		if strings.HasPrefix(cells[0], "never") || cells[1] != "neverprices from the snapshot, dated 2026-07-20" {
			t.Errorf("last live refresh: static %q, aws %q; want static's refresh, aws never with its snapshot's date", cells[0], cells[1])
		}
		br.Screenshot(t, "providers")
		br.CheckConsole(t, "providers")
	})

	// At a phone's width every page fits the window (wide tables scroll in their box),
	// and a question opens at its answer. The README's narrow screenshot is that view.
	t.Run("narrow", func(t *testing.T) {
		br.Viewport(t, 400, 860)
		defer br.Viewport(t, 1280, 900)
		for _, path := range []string{"/", "/offers?gpu-model=H100", "/history?gpu-model=H100", "/history?provider=static&instance-type=box&region=lab&zone=", "/providers", "/nope"} {
			br.Do(t, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
			if over := browsertest.Eval[int](t, br, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
				t.Errorf("%s is %d px wider than a 400 px window", path, over)
			}
		}
		br.Console() // the 404 page's own status
		br.Do(t, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("ask")),
			chromedp.SetValue(chromedp.ID("f-model"), "llama-2-7b"), chromedp.SetValue(chromedp.ID("f-task"), "lora"),
			chromedp.SetValue(chromedp.ID("f-batch"), "4"), chromedp.Click(chromedp.ID("ask-submit")),
			chromedp.WaitVisible(chromedp.ID("top-offers")))
		if over := browsertest.Eval[int](t, br, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
			t.Errorf("the answer is %d px wider than a 400 px window", over)
		}
		if top := browsertest.Eval[float64](t, br, "document.getElementById('result').getBoundingClientRect().top"); top < -1 || top > 100 {
			t.Errorf("the answer starts %v px from the window's top, want at the top", top)
		}
		docScreenshot(t, br.WindowScreenshot(t, "ask-narrow"), "web-ask-narrow.png")
		br.CheckConsole(t, "narrow pages")
	})
}

// BenchmarkWebPages measures the daemon's pages end to end in process (handler, the
// commands they run, templates) over the seeded snapshot, with the daemon's offer cache.
func BenchmarkWebPages(b *testing.B) {
	_, srv := newTestAPI(b)
	h := srv.Config.Handler
	for _, target := range []string{"/offers", "/offers?sort=per-gpu&per-page=100", "/?model=llama-2-7b&task=lora&batch=4", "/providers"} {
		b.Run(target, func(b *testing.B) {
			size := 0
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, target, nil)
				req.Host = "127.0.0.1" // the guard answers to the listen host, not example.com
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size)/1024, "KiB/page")
		})
	}
}

// The daemon's mux: pages at / with the CSP, JSON under /v1/, each 404 in its kind,
// and a bad question marks the field the CLI's error names.
func TestDaemonServesPages(t *testing.T) {
	_, srv := newTestAPI(t)
	for _, tt := range []struct {
		path, contentType, want string
		status                  int
	}{
		{"/", "text/html", `id="ask"`, 200},
		{"/offers?gpu-model=H100", "text/html", `id="offers-table"`, 200},
		{"/offers?per-page=100&sort=per-gib", "text/html", `aria-sort="ascending"`, 200},
		{"/?model=llama-2-70b&task=full-ft&gpu-model=T4&max-gpus=1", "text/html", `id="nearest-miss"`, 200},
		{"/history?gpu-model=H100", "text/html", `data-chart=`, 200},
		{"/?model=llama-2-7b&prompt-tokens=1000&output-tokens=200&requests=100000", "text/html", `<th scope="col" class="n">TTFT s</th>`, 200},
		{"/?model=llama-2-70b&task=full-ft&shard=zero3&grad-ckpt=true&nodes=auto&gpu-model=H100", "text/html", `<th scope="col" class="n">Cluster $/h</th>`, 200},
		{"/?model=llama-2-7b&task=lora&tokens=1e8", "text/html", `<th scope="col" class="n ranked" title="what the offers are ranked by: the cost of the work">JOB $</th>`, 200},
		{"/offers.csv?gpu-model=H100", "text/csv", "provider,region,zone,instance_type", 200},
		{"/providers", "text/html", `data-provider="lambda"`, 200},
		{"/?model=no-such-model", "text/html", `class="field wide invalid"`, 400},
		{"/?model=llama-2-7b&batch=zero", "text/html", `name="batch" value="zero" type="number" min="0" step="1" placeholder="1" aria-invalid="true"`, 400},
		{"/offers?min-vram=-1", "text/html", `aria-invalid="true"`, 400},
		{"/nope", "text/html", "There is no page /nope", 404},
		{"/v1/nope", "application/json", `"error": "no endpoint /v1/nope`, 404},
		{"/healthz", "application/json", `"status": "ok"`, 200},
	} {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body bytes.Buffer
			body.ReadFrom(resp.Body)
			if resp.StatusCode != tt.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.contentType) || !strings.Contains(body.String(), tt.want) {
				t.Errorf("status %d, type %q, want %d %s containing %q:\n%.1500s", resp.StatusCode, resp.Header.Get("Content-Type"), tt.status, tt.contentType, tt.want, body.String())
			}
			if tt.contentType == "text/html" && resp.Header.Get("Content-Security-Policy") != web.ContentSecurityPolicy {
				t.Errorf("no CSP on a page")
			}
			if tt.contentType == "text/html" && body.Len() >= 100<<10 {
				t.Errorf("page is %d bytes, want under 100 KiB", body.Len())
			}
		})
	}
}

// Every `picker recommend` flag is a field of the web page's Ask form.
func TestAskFormHasEveryRecommendFlag(t *testing.T) {
	fields := web.AskFieldNames()
	for _, p := range (&RecommendOptions{}).params() {
		if !slices.Contains(fields, p.name) {
			t.Errorf("recommend flag --%s has no field in the web page's Ask form", p.name)
		}
	}
}

// The guard lets a person follow a link to a page from another site, and nothing else
// of another site's: not its fetches of a page, not a navigation to the JSON API.
func TestGuardLetsLinksToPagesIn(t *testing.T) {
	_, srv := newTestAPI(t)
	for _, tt := range []struct {
		path, mode, dest string
		status           int
	}{
		{"/?model=llama-2-7b", "navigate", "document", 200},
		{"/offers", "navigate", "document", 200},
		{"/?model=llama-2-7b", "cors", "empty", 403},
		{"/offers", "navigate", "iframe", 403},
		{"/v1/offers", "navigate", "document", 403},
		{"/assets/app.css", "no-cors", "style", 403},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+tt.path, nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Sec-Fetch-Mode", tt.mode)
		req.Header.Set("Sec-Fetch-Dest", tt.dest)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("cross-site %s %s of %s: %d, want %d", tt.mode, tt.dest, tt.path, resp.StatusCode, tt.status)
		}
	}
}

// TestWebGradCkptOffIsTheCLIs: the Ask form turns off what a framework turns on. hf
// QLoRA checkpoints activations by default; `--grad-ckpt=false` turns it off, and the
// page, asked the same, needs what `picker recommend` needs (issue 26: the form
// dropped grad-ckpt=false and answered 7.3 GiB where the CLI said 18.3), shows the
// choice in its select and the command line with --grad-ckpt=false.
func TestWebGradCkptOffIsTheCLIs(t *testing.T) {
	a, srv := newTestAPI(t)
	need := func(args ...string) float64 {
		t.Helper()
		r := runCLI(t, a.st.Path(), false, append(append([]string{"recommend"}, args...), "-o", "json")...)
		var out struct {
			Estimate struct {
				DeviceTotalGiB float64 `json:"device_total_gib"`
			}
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil {
			t.Fatalf("picker recommend %v: exit %d %s", args, r.code, r.stderr)
		}
		return out.Estimate.DeviceTotalGiB
	}
	for _, tc := range []struct {
		query string
		args  []string
	}{
		{"model=llama-2-7b&task=qlora&grad-ckpt=false", []string{"--model", "llama-2-7b", "--task", "qlora", "--grad-ckpt=false"}},
		{"model=llama-2-7b&task=qlora", []string{"--model", "llama-2-7b", "--task", "qlora"}},
		{"model=llama-2-7b&task=qlora&framework=torchtune&double-quant=false", []string{"--model", "llama-2-7b", "--task", "qlora", "--framework", "torchtune", "--double-quant=false"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, body := get(t, srv.URL+"/?"+tc.query)
			m := regexp.MustCompile(`id="need">.*?data-gib="([^"]+)"`).FindSubmatch(body)
			if code != http.StatusOK || m == nil {
				t.Fatalf("page: %d, no need shown", code)
			}
			page, _ := strconv.ParseFloat(string(m[1]), 64)
			if cli := need(tc.args...); page != cli {
				t.Errorf("the page needs %v GiB per GPU, picker recommend %s %v", page, strings.Join(tc.args, " "), cli)
			}
			if want := "picker recommend " + strings.Join(tc.args, " "); !strings.Contains(string(body), `<code id="cmdline">`+want+`</code>`) {
				t.Errorf("the page's command line is not %q", want)
			}
		})
	}
	if off, on := need("--model", "llama-2-7b", "--task", "qlora", "--grad-ckpt=false"), need("--model", "llama-2-7b", "--task", "qlora"); off <= on {
		t.Errorf("QLoRA needs %v GiB with checkpointing off, %v with the default on: the test asks nothing", off, on)
	}
}

// Package browsertest runs headless Chromium for picker's browser tests (the web
// package's and cmd/picker's end-to-end ones): it finds the browser, starts it with
// flags that keep it off the network, collects console errors and uncaught
// exceptions, takes screenshots and catches downloads. Only tests import it.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Candidates are the browser commands tried, in order, after $PICKER_CHROMIUM. Debian's
// package is chromium (.ci/run installs it when missing).
var Candidates = []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "/usr/bin/chromium"}

// Find returns the path of a Chromium, or "" when none is installed.
func Find() string {
	if p := os.Getenv("PICKER_CHROMIUM"); p != "" {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	for _, c := range Candidates {
		if path, err := exec.LookPath(c); err == nil {
			return path
		}
	}
	return ""
}

// Browser is one headless Chromium tab for a test.
type Browser struct {
	Ctx context.Context

	mu       sync.Mutex
	messages []string
	shotDir  string
}

// Start launches Chromium for t, or skips t when no browser is installed, saying so.
// The browser stops when t ends.
func Start(t *testing.T) *Browser {
	t.Helper()
	path := Find()
	if path == "" {
		t.Skipf("no Chromium found (tried $PICKER_CHROMIUM and %s); install Debian's chromium package (.ci/run does) to run the browser tests",
			strings.Join(Candidates, ", "))
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	b := &Browser{shotDir: os.Getenv("PICKER_SCREENSHOT_DIR")}
	if b.shotDir == "" {
		b.shotDir = t.TempDir()
	}
	// A loaded machine (CI runs the web and cmd/picker packages in parallel, each with a
	// browser) occasionally sees Chromium exit before it prints its DevTools address;
	// a second start is the remedy, so a start is tried up to three times.
	var ctx context.Context
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		var cancel context.CancelFunc
		ctx, cancel = chromedp.NewContext(actx, chromedp.WithListener(b.listen))
		// The first Run starts the browser; it must have no deadline (chromedp.Run).
		err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, log.Enable, struct{}{})
			return err
		}))
		if err == nil {
			t.Cleanup(func() {
				cancel()
				cancelAlloc()
			})
			break
		}
		cancel()
		cancelAlloc()
		t.Logf("start %s (attempt %d): %v", path, attempt, err)
		time.Sleep(time.Duration(attempt) * 500 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	b.Ctx = ctx
	return b
}

// listen records what a person would see in red in the DevTools console: console
// errors and warnings, uncaught exceptions, and browser log errors (failed loads,
// Content-Security-Policy violations).
func (b *Browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeWarning && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			if len(a.Value) > 0 {
				parts = append(parts, string(a.Value))
			} else {
				parts = append(parts, a.Description)
			}
		}
		msg = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " "))
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		msg = fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, text)
	case *log.EventEntryAdded:
		if ev.Entry.Level != log.EntryLevelError && ev.Entry.Level != log.EntryLevelWarning {
			return
		}
		msg = fmt.Sprintf("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
	default:
		return
	}
	b.mu.Lock()
	b.messages = append(b.messages, msg)
	b.mu.Unlock()
}

// CheckConsole fails t for every console error, warning or exception since the last
// check, naming the page.
func (b *Browser) CheckConsole(t *testing.T, page string) {
	t.Helper()
	for _, m := range b.Console() {
		t.Errorf("%s: %s", page, m)
	}
}

// Console returns the console errors, warnings and exceptions since the last check and
// forgets them, for a test that expects some (a 404 page logs its own status).
func (b *Browser) Console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	msgs := b.messages
	b.messages = nil
	return msgs
}

// Do runs actions with a bound, so a page that never answers fails the test instead of
// hanging it.
func (b *Browser) Do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise) into a T.
func Eval[T any](t *testing.T, b *Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Screenshot writes the whole page as name.png under the screenshot folder (the
// test's temp dir, or $PICKER_SCREENSHOT_DIR to keep them) and returns its path.
func (b *Browser) Screenshot(t *testing.T, name string) string {
	t.Helper()
	return b.save(t, name, chromedp.FullScreenshot(100))
}

// save runs a screenshot action and writes its PNG as name.png in the screenshot folder.
func (b *Browser) save(t *testing.T, name string, shot chromedp.Action[[]byte]) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.shotDir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
	return path
}

// WindowScreenshot is Screenshot of what the window shows, not the whole page: what a
// person on a phone sees first, at the current scroll position.
func (b *Browser) WindowScreenshot(t *testing.T, name string) string {
	t.Helper()
	return b.save(t, name, chromedp.CaptureScreenshot())
}

// Download clicks the link sel and returns the file the browser saved.
func (b *Browser) Download(t *testing.T, sel string) []byte {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	done := make(chan string, 1)
	failed := make(chan string, 1)
	if err := chromedp.ListenBrowser(ctx, func(ev any) {
		if p, ok := ev.(*browser.EventDownloadProgress); ok {
			switch p.State {
			case browser.DownloadProgressStateCompleted:
				select {
				case done <- p.GUID:
				default:
				}
			case browser.DownloadProgressStateCanceled:
				select {
				case failed <- p.GUID:
				default:
				}
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	enabled := true
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &enabled,
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatal(err)
	}
	select {
	case guid := <-done:
		data, err := os.ReadFile(filepath.Join(dir, guid))
		if err != nil {
			t.Fatal(err)
		}
		return data
	case guid := <-failed:
		t.Fatalf("download %s of %s was cancelled", guid, sel)
	case <-ctx.Done():
		t.Fatal(errors.New("download did not complete in 30 s"))
	}
	return nil
}

// Viewport sets the page's viewport to width × height CSS pixels (device scale 1, no
// mobile emulation), as a browser window of that size would have it, so a test can
// check a layout at a phone's width and a desktop's. It lasts until the next call.
func (b *Browser) Viewport(t *testing.T, width, height int64) {
	t.Helper()
	b.Do(t, chromedp.EmulateViewport(width, height))
}

// Scripts turns the tab's JavaScript off (false) or back on, for a test that a page works
// without it; it lasts until the next call.
func (b *Browser) Scripts(t *testing.T, on bool) {
	t.Helper()
	b.Do(t, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on})
		return err
	}))
}

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
	"golang.org/x/term"

	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/refresh"
	"github.com/pickergpu/picker/termsafe"
)

// How `picker refresh` shows its progress on stderr (issue 26: an AWS refresh over 13
// regions ran minutes with nothing on the screen). On a terminal: a spinner at once and a
// line per provider, redrawn in place as the adapters report regions and pages (docker
// pull's way), erased when the table comes. Elsewhere (a CI log, a file): a plain line
// when a provider completes a part, or at most every lineEvery while it reads pages.
// Nothing with -q.

// lineEvery is how often a provider reading pages without completing a part gets a
// plain progress line: a log, unlike a terminal, keeps every line.
const lineEvery = 5 * time.Second

// spinFrames are the spinner's frames, one per tick.
var spinFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// spinEvery is the spinner's tick on a real terminal.
const spinEvery = 100 * time.Millisecond

// refreshProgress is what a refresh tells its progress display.
type refreshProgress interface {
	report(provider string, p providers.Progress)
	finished(r refresh.Result)
	close()
}

// newRefreshProgress picks the display for the refresh of names: none with -q, the
// terminal's when stderr is one, else plain lines.
func (a *app) newRefreshProgress(names []string) refreshProgress {
	switch {
	case a.quiet && !a.verbose:
		return noProgress{}
	case a.errTTY:
		return newTTYProgress(a.errOut, names, a.termWidth(), a.m.Ticks)
	}
	return &lineProgress{w: a.stderr, throttle: progressThrottle{now: a.now, every: lineEvery}}
}

type noProgress struct{}

func (noProgress) report(string, providers.Progress) {}
func (noProgress) finished(refresh.Result)           {}
func (noProgress) close()                            {}

// progressText is a report as both displays say it: "3/13 regions, 41,230 offers" (with
// ", 14 pages" where the parts are paged).
func progressText(p providers.Progress) string {
	var b strings.Builder
	if p.Total > 0 {
		fmt.Fprintf(&b, "%d/%d %s", p.Done, p.Total, p.Unit)
	} else {
		fmt.Fprintf(&b, "%d %s", p.Done, p.Unit)
	}
	if p.Pages > 0 {
		b.WriteString(", " + plural(p.Pages, "page"))
	}
	b.WriteString(", " + thousands(p.Offers) + " offers")
	return b.String()
}

// plural is "1 page", "3 pages".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return thousands(n) + " " + noun + "s"
}

// thousands writes n with comma separators: 41,230.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// progressThrottle decides which reports are worth a line in a log: each part completed,
// and otherwise (pages, offers) at most one per provider every `every`. It is not safe
// for concurrent use; its callers hold a lock.
type progressThrottle struct {
	now   func() time.Time
	every time.Duration
	last  map[string]throttled
}

type throttled struct {
	p  providers.Progress
	at time.Time
}

func (t *progressThrottle) due(provider string, p providers.Progress) bool {
	if t.last == nil {
		t.last = map[string]throttled{}
	}
	last, seen := t.last[provider]
	now := t.now()
	moved := p.Pages != last.p.Pages || p.Offers != last.p.Offers
	if p.Done > last.p.Done || (moved && (!seen || last.at.IsZero() || now.Sub(last.at) >= t.every)) {
		t.last[provider] = throttled{p, now}
		return true
	}
	if !seen {
		t.last[provider] = throttled{p: p} // the start: remembered, not printed
	}
	return false
}

// lineProgress is the display where stderr is not a terminal: a line per step worth one.
type lineProgress struct {
	mu       sync.Mutex
	w        io.Writer
	throttle progressThrottle
}

func (l *lineProgress) report(provider string, p providers.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.throttle.due(provider, p) {
		fmt.Fprintf(l.w, "refresh: %s: %s\n", provider, progressText(p))
	}
}

func (l *lineProgress) finished(refresh.Result) {}
func (l *lineProgress) close()                  {}

// ttyProgress is the terminal's display: a line per provider below whatever stderr has
// printed, redrawn on each report and tick. Its state changes and draws happen under
// out's lock, so a log line written meanwhile lands above it (termOut.Write).
type ttyProgress struct {
	out   *termOut
	width int
	frame int
	rows  []*progressRow
	drawn int // lines of the display on the screen now
	stopT chan struct{}
	wg    sync.WaitGroup
}

// progressRow is one provider's line.
type progressRow struct {
	name   string
	p      providers.Progress
	seen   bool // a report came
	result *refresh.Result
}

// newTTYProgress draws the display at once (a spinner and "starting" per provider) and
// advances the spinner on ticks: every spinEvery, or on each value of ticks when given
// (tests drive it so).
func newTTYProgress(out *termOut, names []string, width int, ticks <-chan time.Time) *ttyProgress {
	v := &ttyProgress{out: out, width: width, stopT: make(chan struct{})}
	for _, n := range names {
		v.rows = append(v.rows, &progressRow{name: n})
	}
	out.attach(v)
	var stop func()
	if ticks == nil {
		t := time.NewTicker(spinEvery)
		ticks, stop = t.C, t.Stop
	}
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		if stop != nil {
			defer stop()
		}
		for {
			select {
			case <-v.stopT:
				return
			case <-ticks:
				out.update(func() { v.frame++ })
			}
		}
	}()
	return v
}

func (v *ttyProgress) row(name string) *progressRow {
	for _, r := range v.rows {
		if r.name == name {
			return r
		}
	}
	r := &progressRow{name: name}
	v.rows = append(v.rows, r)
	return r
}

func (v *ttyProgress) report(provider string, p providers.Progress) {
	v.out.update(func() {
		r := v.row(provider)
		r.p, r.seen = p, true
	})
}

func (v *ttyProgress) finished(res refresh.Result) {
	v.out.update(func() { v.row(res.Provider).result = &res })
}

// close stops the spinner and erases the display: the results table says the rest.
func (v *ttyProgress) close() {
	close(v.stopT)
	v.wg.Wait()
	v.out.detach()
}

// lines are the display's lines, names aligned.
func (v *ttyProgress) lines() []string {
	w := 0
	for _, r := range v.rows {
		w = max(w, len(r.name))
	}
	spin := string(spinFrames[v.frame%len(spinFrames)])
	out := make([]string, len(v.rows))
	for i, r := range v.rows {
		var status, text string
		switch {
		case r.result != nil && r.result.Err != nil:
			status, text = "✗", "failed"
		case r.result != nil:
			status, text = "✓", fmt.Sprintf("%s offers, %s changed", thousands(r.result.OffersSeen), thousands(r.result.PricesChanged))
		case !r.seen:
			status, text = spin, "starting"
		case r.p.Total > 0 && r.p.Done == r.p.Total:
			status, text = spin, progressText(r.p)+"; storing" // fetched: the write is under way
		default:
			status, text = spin, progressText(r.p)
			if r.p.Part != "" {
				text = r.p.Part + "  " + text
			}
		}
		out[i] = fmt.Sprintf("%s %-*s  %s", status, w, r.name, text)
	}
	return out
}

// erase moves the cursor up over the display and clears to the end of the screen.
func (v *ttyProgress) erase(w io.Writer) {
	if v.drawn > 0 {
		fmt.Fprintf(w, "\x1b[%dA\r\x1b[J", v.drawn)
		v.drawn = 0
	}
}

// draw writes the display's lines, each cut to the terminal's width so none wraps (a
// wrapped line would throw erase's count off).
func (v *ttyProgress) draw(w io.Writer) {
	ls := v.lines()
	for _, l := range ls {
		fmt.Fprintln(w, clip(l, v.width-1))
	}
	v.drawn = len(ls)
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// termOut is picker's stderr. Everything written there (log lines, warnings, a
// picker-fetch child's stderr) goes through it, so that while a display is drawn on the
// terminal a line written lands above the display, which is drawn again below it. A
// partial line is held until its newline, so a child's stderr copied in pieces does
// not break a line in two.
type termOut struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte
	display *ttyProgress
}

func (t *termOut) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.display == nil {
		return termsafe.Writer{W: t.w}.Write(p) // a provider's text cannot drive the terminal
	}
	n := len(p)
	p = []byte(termsafe.String(string(p)))
	t.pending = append(t.pending, p...)
	i := bytes.LastIndexByte(t.pending, '\n')
	if i < 0 {
		return len(p), nil
	}
	t.display.erase(t.w)
	_, err := t.w.Write(t.pending[:i+1])
	t.pending = append(t.pending[:0], t.pending[i+1:]...)
	t.display.draw(t.w)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// attach draws d below what stderr has printed and keeps it there until detach.
func (t *termOut) attach(d *ttyProgress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.display = d
	d.draw(t.w)
}

// update changes the display's state and draws it again.
func (t *termOut) update(change func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	change()
	if t.display != nil {
		t.display.erase(t.w)
		t.display.draw(t.w)
	}
}

// detach erases the display and writes out a partial line it held.
func (t *termOut) detach() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.display != nil {
		t.display.erase(t.w)
		t.display = nil
	}
	if len(t.pending) > 0 {
		t.w.Write(t.pending)
		t.pending = nil
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// termWidth is stderr's width in columns, 80 when it cannot be read.
func (a *app) termWidth() int {
	if f, ok := a.m.Stderr.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 80
}

// logProgress is the daemon's progress for a provider's refreshes: debug log records,
// as plain lines are throttled (each part, else at most one every lineEvery).
func (a *app) logProgress(provider string) func(providers.Progress) {
	var mu sync.Mutex
	th := progressThrottle{now: a.now, every: lineEvery}
	return func(p providers.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if th.due(provider, p) {
			a.log.Debug("refresh progress", "provider", provider, "part", p.Part, "done", p.Done, "total", p.Total, "unit", p.Unit, "pages", p.Pages, "offers", p.Offers)
		}
	}
}

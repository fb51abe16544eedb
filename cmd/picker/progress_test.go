package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/refresh"
)

// replayTerminal is what a terminal shows after b: text, newlines, carriage returns,
// cursor up (ESC[nA) and erase to the end of the screen (ESC[J), the sequences the
// refresh display writes.
func replayTerminal(t *testing.T, b string) []string {
	t.Helper()
	var lines []string
	row, col := 0, 0
	for len(b) > 0 {
		switch {
		case strings.HasPrefix(b, "\x1b["):
			j := 2
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			if j == len(b) {
				t.Fatalf("a cut escape sequence %q", b)
			}
			n, _ := strconv.Atoi(b[2:j])
			switch b[j] {
			case 'A':
				row = max(row-n, 0)
			case 'J':
				lines = lines[:min(row, len(lines))]
			default:
				t.Fatalf("escape sequence %q the display does not write", b[:j+1])
			}
			b = b[j+1:]
		case b[0] == '\r':
			col, b = 0, b[1:]
		case b[0] == '\n':
			row, col, b = row+1, 0, b[1:]
		default:
			i := strings.IndexAny(b, "\x1b\r\n")
			if i < 0 {
				i = len(b)
			}
			for len(lines) <= row {
				lines = append(lines, "")
			}
			l := []rune(lines[row])
			lines[row] = string(l[:min(col, len(l))]) + b[:i]
			col += len([]rune(b[:i]))
			b = b[i:]
		}
	}
	return lines
}

// plainLines are b's lines with the escape sequences taken out: every line the
// display ever drew, and the rest.
func plainLines(b string) []string {
	return strings.Split(regexp.MustCompile(`\x1b\[\d*[AJ]|\r`).ReplaceAllString(b, ""), "\n")
}

type refreshResultJSON struct {
	Provider      string `json:"provider"`
	OffersSeen    int    `json:"offers_seen"`
	PricesChanged int    `json:"prices_changed"`
}

// On a terminal the display comes at once (a spinner and "starting" per provider), is
// redrawn as regions complete, shows each provider done with its offers, and is erased
// at the end: the screen keeps only the log lines, written whole above it meanwhile.
func TestRefreshProgressOnTerminal(t *testing.T) {
	t.Setenv("PICKER_TEST_LAMBDA_KEY", "secret-lambda-key")
	az, lm, rp := fakeClouds(t, false)
	cfg := cloudConfig(t, az.URL, lm.URL, rp.URL, "1m")
	var out, errb bytes.Buffer
	tty := true
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir()}
	m := Main{Stdout: &out, Stderr: &errb, TTY: &tty, Ticks: make(chan time.Time), // no ticks: the spinner stays on its first frame
		Args:   []string{"--db", tempDB(t), "--config", cfg, "refresh", "--provider", "azure,lambda,runpod", "-o", "json"},
		Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return fixedNow }}
	if code := m.Run(context.Background()); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var results []refreshResultJSON
	if err := json.Unmarshal(out.Bytes(), &results); err != nil || len(results) != 3 {
		t.Fatalf("results %q: %v", out.String(), err)
	}
	raw := errb.String()
	spin := string(spinFrames[0])
	if !regexp.MustCompile(`(?m)^` + spin + ` azure +starting\n` + spin + ` lambda +starting\n` + spin + ` runpod +starting\n`).MatchString(raw) {
		t.Errorf("the display did not start with a spinner line per provider:\n%q", raw)
	}
	drawn := strings.Join(plainLines(raw), "\n")
	for _, region := range []string{"eastus", "westeurope"} {
		if !regexp.MustCompile(spin + ` azure +` + region + `  [12]/2 regions, \d+ pages?, \d+ offers`).MatchString(drawn) {
			t.Errorf("no line showed azure reading %s:\n%s", region, drawn)
		}
	}
	if !regexp.MustCompile(spin + ` azure +2/2 regions, \d+ pages, \d+ offers; storing`).MatchString(drawn) {
		t.Errorf("no line showed azure fetched and storing:\n%s", drawn)
	}
	for _, r := range results {
		want := fmt.Sprintf("✓ %-6s  %s offers, %s changed", r.Provider, thousands(r.OffersSeen), thousands(r.PricesChanged))
		if !strings.Contains(drawn, want) {
			t.Errorf("no line %q:\n%s", want, drawn)
		}
	}
	screen := replayTerminal(t, raw)
	for _, l := range screen {
		if strings.Contains(l, spin) || strings.Contains(l, "✓") {
			t.Errorf("the display was left on the screen: %q", screen)
			break
		}
	}
	var logs []string // the log lines written before and during the display, whole
	for _, l := range plainLines(raw) {
		if strings.HasPrefix(l, "time=") {
			logs = append(logs, l)
		}
	}
	if len(logs) == 0 || !strings.Contains(logs[0], "created price database") || strings.Join(screen, "\n") != strings.Join(logs, "\n") {
		t.Errorf("screen %q; want the log lines %q", screen, logs)
	}
}

// Without a terminal, stderr gets a plain line as each part (region, request) completes,
// the last one with every offer the refresh stored; -q prints none.
func TestRefreshProgressLines(t *testing.T) {
	t.Setenv("PICKER_TEST_LAMBDA_KEY", "secret-lambda-key")
	az, lm, rp := fakeClouds(t, false)
	cfg := cloudConfig(t, az.URL, lm.URL, rp.URL, "1m")
	for _, tt := range []struct {
		name  string
		quiet bool
	}{{"default", false}, {"quiet", true}} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"--config", cfg, "refresh", "--provider", "azure,lambda,runpod", "-o", "json"}
			if tt.quiet {
				args = append(args, "-q")
			}
			r := runCLI(t, tempDB(t), false, args...)
			var results []refreshResultJSON
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &results) != nil || len(results) != 3 {
				t.Fatalf("exit %d, stdout %q: %s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stderr, "\x1b[") {
				t.Errorf("escape sequences on a stderr that is no terminal: %q", r.stderr)
			}
			if tt.quiet {
				if strings.Contains(r.stderr, "refresh: ") {
					t.Errorf("progress under -q: %q", r.stderr)
				}
				return
			}
			parts := map[string]int{"azure": 2, "lambda": 1, "runpod": 1} // cloudConfig's regions; one request each
			for _, res := range results {
				n := parts[res.Provider]
				for done := 1; done <= n; done++ {
					re := regexp.MustCompile(fmt.Sprintf(`(?m)^refresh: %s: %d/%d (regions|requests), .*offers$`, res.Provider, done, n))
					if got := len(re.FindAllString(r.stderr, -1)); got != 1 {
						t.Errorf("%d lines for %s part %d/%d; want one:\n%s", got, res.Provider, done, n, r.stderr)
					}
				}
				last := fmt.Sprintf(`, %s offers`+"\n", thousands(res.OffersSeen))
				lines := regexp.MustCompile(`(?m)^refresh: `+res.Provider+`: .*\n`).FindAllString(r.stderr, -1)
				if len(lines) == 0 || !strings.HasSuffix(lines[len(lines)-1], last) {
					t.Errorf("%s's last line %q; want it to end %q (the offers refresh stored)", res.Provider, lines, last)
				}
			}
		})
	}
}

// A log gets each part completed and, between them, a line for pages at most every
// lineEvery per provider, by the injected clock.
func TestProgressThrottle(t *testing.T) {
	at := func(s int) time.Time { return fixedNow.Add(time.Duration(s) * time.Second) }
	start := providers.Progress{Unit: "regions", Total: 3}
	page := func(pages, offers int) providers.Progress {
		p := start
		p.Pages, p.Offers = pages, offers
		return p
	}
	done := func(d, pages, offers int) providers.Progress {
		p := page(pages, offers)
		p.Done = d
		return p
	}
	type step struct {
		sec      int
		provider string
		p        providers.Progress
		want     bool
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"the start is not printed, the first page is", []step{{0, "aws", start, false}, {0, "aws", page(1, 100), true}}},
		{"pages within lineEvery are not", []step{{0, "aws", page(1, 100), true}, {4, "aws", page(2, 200), false}, {5, "aws", page(3, 300), true}}},
		{"a part done always is", []step{{0, "aws", page(1, 100), true}, {1, "aws", done(1, 1, 100), true}, {1, "aws", done(2, 1, 100), true}}},
		{"nothing new is not", []step{{0, "aws", page(1, 100), true}, {9, "aws", page(1, 100), false}}},
		{"each provider on its own", []step{{0, "aws", page(1, 100), true}, {1, "gcp", page(1, 0), true}, {2, "aws", page(2, 200), false}, {6, "gcp", page(2, 0), true}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var now time.Time
			th := progressThrottle{now: func() time.Time { return now }, every: lineEvery}
			for i, s := range tt.steps {
				now = at(s.sec)
				if got := th.due(s.provider, s.p); got != s.want {
					t.Errorf("step %d (%ds %s %+v): due %v; want %v", i, s.sec, s.provider, s.p, got, s.want)
				}
			}
		})
	}
}

// A line written to stderr while the display is drawn lands above it, whole even when
// written in pieces; a tick advances the spinner; close erases the display and leaves
// the lines.
func TestTerminalLinesAboveDisplay(t *testing.T) {
	var buf bytes.Buffer
	out := &termOut{w: &buf}
	ticks := make(chan time.Time)
	v := newTTYProgress(out, []string{"aws", "gcp"}, 80, ticks)
	v.report("aws", providers.Progress{Unit: "regions", Total: 13, Done: 3, Part: "us-east-1", Offers: 41230})
	fmt.Fprint(out, "level=WARN msg=half")
	if s := replayTerminal(t, buf.String()); len(s) != 2 {
		t.Errorf("a partial line was written before its newline: %q", s)
	}
	fmt.Fprint(out, " a line\n")
	screen := replayTerminal(t, buf.String())
	want := []string{
		"level=WARN msg=half a line",
		string(spinFrames[0]) + " aws  us-east-1  3/13 regions, 41,230 offers",
		string(spinFrames[0]) + " gcp  starting",
	}
	if strings.Join(screen, "\n") != strings.Join(want, "\n") {
		t.Errorf("screen\n%s\nwant\n%s", strings.Join(screen, "\n"), strings.Join(want, "\n"))
	}
	ticks <- fixedNow // received: the redraw is under way; close waits for it
	v.finished(refresh.Result{Provider: "gcp", OffersSeen: 1200, PricesChanged: 3})
	v.close()
	all := strings.Join(plainLines(buf.String()), "\n")
	if !strings.Contains(all, string(spinFrames[1])+" aws") || !strings.Contains(all, "✓ gcp  1,200 offers, 3 changed") {
		t.Errorf("no redraw with the next frame and gcp done:\n%s", all)
	}
	if s := replayTerminal(t, buf.String()); len(s) != 1 || s[0] != want[0] {
		t.Errorf("after close the screen is %q; want only the log line", s)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 41230: "41,230", 1234567: "1,234,567", -52310: "-52,310"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q; want %q", n, got, want)
		}
	}
}

// The daemon logs a provider's progress as debug records, throttled as plain lines are.
func TestDaemonLogsProgress(t *testing.T) {
	var buf bytes.Buffer
	a := &app{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), now: func() time.Time { return fixedNow }}
	report := a.logProgress("aws")
	steps := []providers.Progress{
		{Unit: "regions", Total: 2}, // the start: not logged
		{Unit: "regions", Total: 2, Pages: 1, Part: "us-east-1", Offers: 100}, // the first page: logged
		{Unit: "regions", Total: 2, Pages: 2, Part: "us-east-1", Offers: 200}, // within lineEvery: not
		{Unit: "regions", Total: 2, Pages: 2, Done: 1, Part: "us-east-1", Offers: 200},
		{Unit: "regions", Total: 2, Pages: 3, Done: 2, Part: "us-west-2", Offers: 250},
	}
	for _, p := range steps {
		report(p)
	}
	recs := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"done=0 total=2 unit=regions pages=1 offers=100", "done=1 total=2 unit=regions pages=2 offers=200", "done=2 total=2 unit=regions pages=3 offers=250"}
	if len(recs) != len(want) {
		t.Fatalf("records %q; want %d", recs, len(want))
	}
	for i, r := range recs {
		if !strings.Contains(r, `level=DEBUG msg="refresh progress" provider=aws`) || !strings.Contains(r, want[i]) {
			t.Errorf("record %d %q; want a debug record with %q", i, r, want[i])
		}
	}
}

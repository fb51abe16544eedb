//go:build unix

package fetchproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// The test binary doubles as a picker-fetch with fake adapters: with FETCHPROC_TEST_CHILD
// set, TestMain runs Main instead of the tests, so the exec path (flags, stdin, the
// frame stream, SIGTERM, stderr) is tested without building the SDK adapters.
func TestMain(m *testing.M) {
	if os.Getenv("FETCHPROC_TEST_CHILD") != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, fakeAdapters)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// fakeConfig is the fake adapters' section.
type fakeConfig struct {
	providers.Common
	// Parts are the part sizes the adapter sends; Mode picks its behaviour.
	Parts []int
	Mode  string
}

func (c fakeConfig) validate() error {
	if c.Mode == "invalid" {
		return pricing.ParamErrorf(pricing.Invalid, "mode", "fake: mode %q is refused", c.Mode)
	}
	return nil
}

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fakeOffers makes n valid offers numbered from first.
func fakeOffers(first, n int) []pricing.Offer {
	out := make([]pricing.Offer, n)
	for i := range out {
		out[i] = pricing.Offer{Provider: "fake", Region: "r1", InstanceType: fmt.Sprintf("t%06d", first+i), GPUModel: "H100",
			GPUCount: 8, GPUMemGiB: 80, VCPUs: 96, RAMGiB: 1024, Purchase: pricing.OnDemand, PriceUSDHr: float64(first+i) + 0.5,
			Currency: "USD", ObservedAt: testNow, Source: pricing.SourceAPI}
	}
	return out
}

// fakeStreamer streams cfg.Parts; fakeFetcher (no Stream) returns them in one Snapshot.
type fakeStreamer struct{ cfg fakeConfig }
type fakeFetcher struct{ cfg fakeConfig }

func (f fakeStreamer) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	return fakeFetcher(f).Fetch(ctx)
}

func (f fakeStreamer) Stream(ctx context.Context, emit func([]pricing.Offer) error) (*providers.Snapshot, error) {
	if err := f.cfg.act(ctx); err != nil {
		return nil, err
	}
	n := 0
	tr := providers.NewTracker(ctx, "parts", len(f.cfg.Parts))
	for i, size := range f.cfg.Parts {
		if err := emit(fakeOffers(n, size)); err != nil {
			return nil, fmt.Errorf("fake: %w", err)
		}
		n += size
		tr.Done(fmt.Sprint("part ", i), size)
	}
	return f.cfg.summary(), nil
}

func (f fakeFetcher) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := f.cfg.act(ctx); err != nil {
		return nil, err
	}
	snap := f.cfg.summary()
	n := 0
	for _, size := range f.cfg.Parts {
		n += size
	}
	snap.Offers = fakeOffers(0, n)
	return snap, nil
}

func (c fakeConfig) summary() *providers.Snapshot {
	return &providers.Snapshot{Regions: []string{"r1"}, Warnings: []string{"w1"},
		Failed: map[string]error{"r2": pricing.Errorf(pricing.Unavailable, "fake: r2: down")}}
}

// act does what Mode says before any offer is sent.
func (c fakeConfig) act(ctx context.Context) error {
	switch c.Mode {
	case "auth":
		return pricing.Errorf(pricing.Unavailable, "fake: 403 AuthFailure: bad credentials")
	case "param":
		return pricing.ParamErrorf(pricing.Invalid, "regions", "fake: region %q is unknown", "zz")
	case "log":
		slog.Debug("fake debug line")
		slog.Info("fake info line")
		slog.Error("fake error line", "auth", "Authorization: Bearer sekrit-token-123", "key", "the secret value s3cr3t-value-xyz")
	case "block":
		fmt.Fprintln(os.Stderr, "blocking") // the test waits for this line
		<-ctx.Done()
		return fmt.Errorf("fake: %w", ctx.Err())
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Fprintln(os.Stderr, "blocking")
		time.Sleep(time.Minute)
	}
	return nil
}

var fakeAdapters = []providers.Descriptor{
	{Name: "fake", Config: fakeConfig{}, New: providers.Constructor("fake", func(c fakeConfig) (fakeStreamer, error) { return fakeStreamer{c}, nil })},
	{Name: "fakefetch", Config: fakeConfig{}, New: providers.Constructor("fakefetch", func(c fakeConfig) (fakeFetcher, error) { return fakeFetcher{c}, nil })},
}

// safeBuffer is a bytes.Buffer for a child's stderr, written by exec's copier.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testChild returns a provider that runs this test binary as picker-fetch.
func testChild(t *testing.T, name string, cfg fakeConfig, level slog.Level) (*Provider, *safeBuffer) {
	t.Helper()
	t.Setenv("FETCHPROC_TEST_CHILD", "1")
	p, err := Constructor(name, fakeConfig.validate)(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stderr := &safeBuffer{}
	env := map[string]string{EnvPath: os.Args[0]}
	err = p.(*Provider).Configure(Settings{Getenv: func(k string) string { return env[k] }, Stderr: stderr, LogLevel: level,
		Secrets: []string{"s3cr3t-value-xyz"}})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Provider), stderr
}

// TestStreamThroughChild runs the exec path end to end: the parts arrive as the adapter
// sent them (a Streamer's part boundaries kept, a Fetch's offers in chunks), the
// summary's regions, warnings and failed parts (with their codes) come back, and Fetch
// collects the same offers.
func TestStreamThroughChild(t *testing.T) {
	for _, tt := range []struct {
		adapter   string
		parts     []int
		wantParts []int
	}{
		{"fake", []int{3, 0, 5000, 1}, []int{3, 0, 5000, 1}},
		{"fakefetch", []int{10000, 10000}, []int{chunk, chunk, 20000 - 2*chunk}},
		{"fakefetch", []int{7}, []int{7}},
	} {
		t.Run(fmt.Sprint(tt.adapter, tt.parts), func(t *testing.T) {
			p, _ := testChild(t, tt.adapter, fakeConfig{Parts: tt.parts}, slog.LevelInfo)
			var got []int
			var all []pricing.Offer
			snap, err := p.Stream(context.Background(), func(part []pricing.Offer) error {
				got = append(got, len(part))
				all = append(all, part...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.wantParts) {
				t.Errorf("parts %v; want %v", got, tt.wantParts)
			}
			total := 0
			for _, n := range tt.parts {
				total += n
			}
			if want := fakeOffers(0, total); !reflect.DeepEqual(all, want) && total > 0 {
				t.Errorf("offers differ from the adapter's: got %d, first %+v; want %d, first %+v", len(all), all[0], len(want), want[0])
			}
			want := (fakeConfig{}).summary()
			if snap.Offers != nil || !reflect.DeepEqual(snap.Regions, want.Regions) || !reflect.DeepEqual(snap.Warnings, want.Warnings) {
				t.Errorf("summary %+v; want %+v", snap, want)
			}
			if e := snap.Failed["r2"]; len(snap.Failed) != 1 || e == nil || e.Error() != "fake: r2: down" || pricing.ErrorCode(e) != pricing.Unavailable {
				t.Errorf("failed parts %v; want r2: fake: r2: down (unavailable)", snap.Failed)
			}
			fsnap, err := p.Fetch(context.Background())
			if err != nil || !reflect.DeepEqual(fsnap.Offers, all) {
				t.Errorf("Fetch: %d offers, %v; want the %d streamed", len(fsnap.Offers), err, len(all))
			}
		})
	}
}

// TestChildErrorKeepsCode: the adapter's error reaches picker with its code, message and
// parameter, so the exit code and HTTP status stay what they were in one process.
func TestChildErrorKeepsCode(t *testing.T) {
	for _, tt := range []struct {
		mode, msg, param string
		code             pricing.Code
	}{
		{"auth", "fake: 403 AuthFailure: bad credentials", "", pricing.Unavailable},
		{"param", `fake: region "zz" is unknown`, "regions", pricing.Invalid},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			for _, adapter := range []string{"fake", "fakefetch"} {
				p, _ := testChild(t, adapter, fakeConfig{Parts: []int{1}, Mode: tt.mode}, slog.LevelInfo)
				_, err := p.Fetch(context.Background())
				if err == nil || err.Error() != tt.msg || pricing.ErrorCode(err) != tt.code || pricing.ErrorParam(err) != tt.param {
					t.Errorf("%s: error %v (code %q, param %q); want %q (%q, %q)", adapter, err, pricing.ErrorCode(err), pricing.ErrorParam(err), tt.msg, tt.code, tt.param)
				}
			}
		})
	}
	// A section the light package refuses never starts a child: an Invalid error at once.
	if _, err := Constructor("fake", fakeConfig.validate)(fakeConfig{Mode: "invalid"}); pricing.ErrorCode(err) != pricing.Invalid || pricing.ErrorParam(err) != "mode" {
		t.Errorf("invalid config: %v; want an invalid error about mode", err)
	}
}

// TestChildLogs: the child logs at picker's level to the stderr picker gives it, with
// picker's redaction (the known secret values and secret shapes).
func TestChildLogs(t *testing.T) {
	for _, tt := range []struct {
		level      slog.Level
		want, deny []string
	}{
		{slog.LevelError, []string{"fake error line", "provider=fake"}, []string{"fake info line", "fake debug line"}},
		{slog.LevelDebug, []string{"fake error line", "fake info line", "fake debug line"}, nil},
	} {
		p, stderr := testChild(t, "fake", fakeConfig{Parts: []int{1}, Mode: "log"}, tt.level)
		if _, err := p.Fetch(context.Background()); err != nil {
			t.Fatal(err)
		}
		logs := stderr.String()
		for _, w := range tt.want {
			if !strings.Contains(logs, w) {
				t.Errorf("level %v: logs lack %q:\n%s", tt.level, w, logs)
			}
		}
		for _, d := range append(tt.deny, "sekrit-token-123", "s3cr3t-value-xyz") {
			if strings.Contains(logs, d) {
				t.Errorf("level %v: logs show %q:\n%s", tt.level, d, logs)
			}
		}
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// gone reports whether the child pid has exited and been reaped.
func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// TestCancelStopsChild: cancelling the refresh stops the child (SIGTERM; SIGKILL after
// waitDelay for one that ignores it) and Fetch returns the context's error.
func TestCancelStopsChild(t *testing.T) {
	for _, mode := range []string{"block", "ignore-term"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "ignore-term" && testing.Short() {
				t.Skip("waits waitDelay")
			}
			p, stderr := testChild(t, "fake", fakeConfig{Parts: []int{1}, Mode: mode}, slog.LevelInfo)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := p.Fetch(ctx)
				done <- err
			}()
			waitFor(t, "the child to block", func() bool { return strings.Contains(stderr.String(), "blocking") })
			t0 := time.Now()
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "fake: ") {
					t.Errorf("error %v; want fake: context canceled", err)
				}
			case <-time.After(waitDelay + 10*time.Second):
				t.Fatal("Fetch did not return after cancel")
			}
			if mode == "block" && time.Since(t0) > 3*time.Second {
				t.Errorf("a child that honours SIGTERM took %v to stop", time.Since(t0))
			}
			p.mu.Lock()
			pid := p.lastPID
			p.mu.Unlock()
			if pid == 0 || !gone(pid) {
				t.Errorf("child %d still running after Fetch returned", pid)
			}
		})
	}
}

// TestEmitErrorStopsChild: a part the caller refuses stops the stream and the child.
func TestEmitErrorStopsChild(t *testing.T) {
	p, _ := testChild(t, "fake", fakeConfig{Parts: []int{1, 100000, 100000, 100000}}, slog.LevelInfo)
	refuse := errors.New("disk full")
	parts := 0
	t0 := time.Now()
	_, err := p.Stream(context.Background(), func([]pricing.Offer) error {
		parts++
		return refuse
	})
	if !errors.Is(err, refuse) || parts != 1 || !strings.HasPrefix(err.Error(), "fake: ") {
		t.Errorf("error %v after %d parts; want fake: disk full after 1", err, parts)
	}
	if d := time.Since(t0); d > waitDelay {
		t.Errorf("took %v: the child was not stopped at once", d)
	}
	if !gone(p.lastPID) {
		t.Errorf("child %d still running", p.lastPID)
	}
}

// script writes an executable shell script standing in for picker-fetch.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), Program)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBrokenChild: a child that crashes or writes something other than the frame
// stream is a runtime (Internal, exit 1) error that names picker-fetch and its path.
func TestBrokenChild(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       []string
	}{
		{"crash", "cat >/dev/null; echo 'panic: boom' >&2; exit 3", []string{"aws: picker-fetch (", "ended without a result (exit status 3)"}},
		{"garbled", "cat >/dev/null; echo 'hello, this is not a frame stream'", []string{"aws: picker-fetch (", "sent garbled output"}},
		{"cut short", "cat >/dev/null; printf 'P\\005ab'", []string{"aws: picker-fetch (", "sent garbled output (unexpected EOF"}},
		{"bad part", "cat >/dev/null; printf 'P\\003\\011ab'", []string{"aws: picker-fetch (", "sent garbled output", "9 offers in 3 bytes"}},
		{"huge progress", "cat >/dev/null; printf 'G\\200\\200\\004'", []string{"aws: picker-fetch (", "sent garbled output", "a 65536-byte frame 'G'"}},
		{"bad progress", "cat >/dev/null; printf 'G\\003{no'", []string{"aws: picker-fetch (", "sent garbled output", "frame 'G'"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := script(t, tt.body)
			p, err := New("aws", fakeConfig{})
			if err != nil {
				t.Fatal(err)
			}
			stderr := &safeBuffer{}
			if err := p.Configure(Settings{Getenv: func(k string) string { return map[string]string{EnvPath: path}[k] }, Stderr: stderr}); err != nil {
				t.Fatal(err)
			}
			_, err = p.Fetch(context.Background())
			if err == nil || pricing.ErrorCode(err) != pricing.Internal {
				t.Fatalf("error %v (code %q); want an internal error", err, pricing.ErrorCode(err))
			}
			for _, w := range append(tt.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tt.name == "crash" && !strings.Contains(stderr.String(), "panic: boom") {
				t.Errorf("the child's stderr was not relayed: %q", stderr.String())
			}
		})
	}
}

// TestMissingProgram: without PICKER_FETCH, picker-fetch next to the executable or on
// PATH, the error says what to install and where it looked; a bad PICKER_FETCH names
// the variable.
func TestMissingProgram(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	p, err := New("aws", fakeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	err = p.Configure(Settings{Getenv: func(string) string { return "" }})
	for _, w := range []string{"needs the picker-fetch program", "not found next to " + exe + " or on PATH", "go install github.com/pickergpu/picker/cmd/picker-fetch@latest", "PICKER_FETCH"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v; want it to say %q", err, w)
		}
	}
	if code := pricing.ErrorCode(err); code != pricing.Unavailable {
		t.Errorf("code %q; want unavailable (exit 1)", code)
	}
	// Found on PATH.
	dir := filepath.Dir(script(t, "exit 0"))
	t.Setenv("PATH", dir)
	if err := p.Configure(Settings{Getenv: func(string) string { return "" }}); err != nil || p.path != filepath.Join(dir, Program) {
		t.Errorf("on PATH: %v, path %q", err, p.path)
	}
	// A bad PICKER_FETCH.
	err = p.Configure(Settings{Getenv: func(k string) string { return map[string]string{EnvPath: "/nonexistent/picker-fetch"}[k] }})
	if err == nil || !strings.Contains(err.Error(), "PICKER_FETCH=/nonexistent/picker-fetch") {
		t.Errorf("bad PICKER_FETCH: %v", err)
	}
}

// TestMainBadInvocation: picker-fetch reports a bad invocation both on stderr and as
// an error frame, with exit code 2.
func TestMainBadInvocation(t *testing.T) {
	good, _ := json.Marshal(request{Protocol: Protocol, Config: json.RawMessage(`{}`)})
	for _, tt := range []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"no provider", nil, string(good), "want one provider (fake, fakefetch)"},
		{"unknown provider", []string{"azure"}, string(good), `unknown provider "azure"`},
		{"bad flag", []string{"-log-level", "LOUD", "fake"}, string(good), "log-level"},
		{"bad stdin", []string{"fake"}, "{", "read the request on stdin"},
		{"other protocol", []string{"fake"}, `{"protocol": 99, "config": {}}`, "picker sent protocol 99"},
		{"unknown config key", []string{"fake"}, `{"protocol": 1, "config": {"Nope": 1}}`, "fake config"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tt.args, strings.NewReader(tt.stdin), &stdout, &stderr, fakeAdapters)
			_, err := read(&stdout, func([]pricing.Offer) error { return nil }, nil)
			if code != 2 || err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, frame error %v, stderr %q; want 2 and %q", code, err, stderr.String(), tt.want)
			}
		})
	}
	var stdout bytes.Buffer
	if code := Main(context.Background(), []string{"fake"}, strings.NewReader(`{"protocol": 1, "config": {"Parts": [2]}}`), &stdout, io.Discard, fakeAdapters); code != 0 {
		t.Errorf("a good invocation exits %d", code)
	}
}

// TestOfferCodecCoversEveryField: every field of pricing.Offer, set to a value of its
// own, survives the part encoding; a field added to Offer and not to appendOffer fails
// here rather than vanishing between picker-fetch and picker.
func TestOfferCodecCoversEveryField(t *testing.T) {
	var o pricing.Offer
	n := 0
	// fill sets every field of v (a struct: Offer, and Offer.Host within it) to a value
	// of its own, so a field the codec drops or swaps shows as a difference.
	var fill func(v reflect.Value, path string)
	fill = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, name := v.Field(i), path+v.Type().Field(i).Name
			n++
			switch {
			case f.Kind() == reflect.String:
				f.SetString(fmt.Sprintf("value of %s", name))
			case f.Kind() == reflect.Float64:
				f.SetFloat(float64(n) + 0.25)
			case f.Kind() == reflect.Int8: // pricing.Availability: the last of its values, not the zero one
				f.SetInt(int64(pricing.SoldOut))
			case f.Type() == reflect.TypeFor[time.Time]():
				f.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)))
			case f.Kind() == reflect.Struct:
				fill(f, name+".")
			default:
				t.Fatalf("Offer.%s has type %s, which the codec does not know", name, f.Type())
			}
		}
	}
	fill(reflect.ValueOf(&o).Elem(), "")
	var buf bytes.Buffer
	parts := [][]pricing.Offer{{o, o}, {}, {o}}
	fw := newFrameWriter(&buf)
	for _, p := range parts {
		if err := fw.write(frame{Offers: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.write(frame{Summary: summarize((fakeConfig{}).summary())}); err != nil {
		t.Fatal(err)
	}
	var got [][]pricing.Offer
	snap, err := read(&buf, func(p []pricing.Offer) error { got = append(got, p); return nil }, nil)
	if err != nil || snap == nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, parts) {
		t.Errorf("decoded %+v\nwant %+v", got, parts)
	}
}

// BenchmarkStream90k is the frame codec's cost for a 90k-offer refresh (issue 17's AWS
// figure): 300 parts of 300 offers written and read back.
func BenchmarkStream90k(b *testing.B) {
	part := fakeOffers(0, 300)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		fw := newFrameWriter(&buf)
		for range 300 {
			if err := fw.write(frame{Offers: part}); err != nil {
				b.Fatal(err)
			}
		}
		fw.write(frame{Summary: &summary{}})
		n := 0
		if _, err := read(&buf, func(p []pricing.Offer) error { n += len(p); return nil }, nil); err != nil || n != 90000 {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(buf.Cap())/(1<<20), "MiB-buffer")
}

// TestNoOffersIsAFailure: a child whose result has no offers at all is "no prices
// found" (the Streamer contract), not an empty catalog.
func TestNoOffersIsAFailure(t *testing.T) {
	for _, adapter := range []string{"fake", "fakefetch"} {
		p, _ := testChild(t, adapter, fakeConfig{Parts: []int{0}}, slog.LevelInfo)
		if _, err := p.Fetch(context.Background()); err == nil || err.Error() != adapter+": no prices found" || pricing.ErrorCode(err) != pricing.Unavailable {
			t.Errorf("%s: %v; want %s: no prices found (unavailable)", adapter, err, adapter)
		}
	}
}

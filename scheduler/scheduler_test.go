package scheduler

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPeriod(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		spec string
		want time.Duration
	}{
		{"@every 30m", 30 * time.Minute},
		{"@every 1h30m", 90 * time.Minute},
		{"0 */6 * * *", 6 * time.Hour},
		{"*/15 * * * *", 15 * time.Minute},
		{"@daily", 24 * time.Hour},
		{"@hourly", time.Hour},
		{"0 3 * * *", 24 * time.Hour},
		// Uneven gaps: the next run is 17:00, the one after is 09:00 tomorrow.
		{"0 9,17 * * *", 16 * time.Hour},
	} {
		got, err := Period(tt.spec, now)
		if err != nil || got != tt.want {
			t.Errorf("Period(%q) = %v, %v; want %v", tt.spec, got, err, tt.want)
		}
	}
	if _, err := Period("every hour", now); err == nil || !strings.Contains(err.Error(), `"every hour"`) {
		t.Errorf("Period of a bad spec: err = %v; want an error naming the spec", err)
	}
}

func TestDue(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		spec string
		last time.Time
		want bool
	}{
		{"0 */6 * * *", time.Time{}, true},                         // never refreshed
		{"0 */6 * * *", now.Add(-time.Hour), false},                // fresh
		{"0 */6 * * *", now.Add(-6*time.Hour - time.Second), true}, // older than its period
		{"@every 30m", now.Add(-29 * time.Minute), false},
		{"@every 30m", now.Add(-31 * time.Minute), true},
		{"@daily", now.Add(-30 * 24 * time.Hour), true}, // a months-old snapshot
	} {
		got, err := Due(tt.spec, tt.last, now)
		if err != nil || got != tt.want {
			t.Errorf("Due(%q, now-%v) = %v, %v; want %v", tt.spec, now.Sub(tt.last), got, err, tt.want)
		}
	}
}

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newTest(t *testing.T, parallel int) (*Scheduler, *logBuf) {
	t.Helper()
	lb := &logBuf{}
	s := New(context.Background(), Options{Log: slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), Parallel: parallel})
	t.Cleanup(func() { s.Stop(time.Second) })
	return s, lb
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunAtStartAndSchedule(t *testing.T) {
	s, _ := newTest(t, 0)
	var due, notDue atomic.Int32
	if err := s.Add(Task{Name: "due", Spec: "@every 1h", RunAtStart: true, Run: func(context.Context) error { due.Add(1); return nil }}); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Task{Name: "fresh", Spec: "@every 1h", Run: func(context.Context) error { notDue.Add(1); return nil }}); err != nil {
		t.Fatal(err)
	}
	s.Start()
	waitFor(t, "the catch-up run", func() bool { return due.Load() == 1 })
	// Added to a running scheduler: runs at once too.
	var late atomic.Int32
	if err := s.Add(Task{Name: "late", Spec: "@every 1h", RunAtStart: true, Run: func(context.Context) error { late.Add(1); return nil }}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the catch-up run of a task added after Start", func() bool { return late.Load() == 1 })
	time.Sleep(50 * time.Millisecond)
	if n := notDue.Load(); n != 0 {
		t.Errorf("a task that is not due ran %d times before its schedule", n)
	}
	if n := due.Load(); n != 1 {
		t.Errorf("the catch-up task ran %d times; want once (then hourly)", n)
	}
}

func TestBadSpec(t *testing.T) {
	s, _ := newTest(t, 0)
	err := s.Add(Task{Name: "refresh aws", Spec: "61 * * * *", Run: func(context.Context) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "refresh aws") || !strings.Contains(err.Error(), `"61 * * * *"`) {
		t.Errorf("Add with a bad spec: %v; want an error naming the task and the spec", err)
	}
}

// A run still going when the next one is due is skipped, never overlapped.
func TestSkipIfStillRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for @every 1s ticks")
	}
	s, logs := newTest(t, 0)
	var running, maxRunning, runs atomic.Int32
	release := make(chan struct{})
	err := s.Add(Task{Name: "slow", Spec: "@every 1s", RunAtStart: true, Run: func(ctx context.Context) error {
		n := running.Add(1)
		defer running.Add(-1)
		if n > maxRunning.Load() {
			maxRunning.Store(n)
		}
		if runs.Add(1) == 1 {
			<-release
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	waitFor(t, "a skipped run", func() bool { return strings.Contains(logs.String(), "skipped") })
	close(release)
	if m := maxRunning.Load(); m != 1 {
		t.Errorf("%d runs overlapped; want 1 at a time", m)
	}
	if !strings.Contains(logs.String(), "task=slow") {
		t.Errorf("the skip message does not name the task:\n%s", logs)
	}
}

func TestTimeoutPerRun(t *testing.T) {
	s, logs := newTest(t, 0)
	got := make(chan error, 1)
	err := s.Add(Task{Name: "hang", Spec: "@every 1h", Timeout: 50 * time.Millisecond, RunAtStart: true, Run: func(ctx context.Context) error {
		<-ctx.Done()
		got <- ctx.Err()
		return ctx.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	select {
	case err := <-got:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("run ended with %v; want its own deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a run was not cancelled at its timeout")
	}
	waitFor(t, "the failure logged", func() bool { return strings.Contains(logs.String(), "task failed") })
}

func TestStopCancelsRunningTasks(t *testing.T) {
	s, _ := newTest(t, 0)
	started := make(chan struct{})
	var sawCancel atomic.Bool
	s.Add(Task{Name: "long", Spec: "@every 1h", RunAtStart: true, Run: func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // some cleanup Stop must wait for
		sawCancel.Store(errors.Is(ctx.Err(), context.Canceled))
		return ctx.Err()
	}})
	s.Start()
	<-started
	if err := s.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !sawCancel.Load() {
		t.Error("Stop returned before the running task saw its cancellation and returned")
	}
}

// A task that ignores cancellation cannot hold shutdown past the bound.
func TestStopIsBounded(t *testing.T) {
	s, _ := newTest(t, 0)
	started := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	s.Add(Task{Name: "stuck", Spec: "@every 1h", RunAtStart: true, Run: func(ctx context.Context) error {
		close(started)
		<-release
		return nil
	}})
	s.Start()
	<-started
	t0 := time.Now()
	if err := s.Stop(100 * time.Millisecond); !errors.Is(err, ErrStopTimeout) {
		t.Errorf("Stop = %v; want ErrStopTimeout", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("Stop took %v; want about its 100ms bound", d)
	}
}

func TestPanicIsRecovered(t *testing.T) {
	s, logs := newTest(t, 0)
	var after atomic.Bool
	s.Add(Task{Name: "boom", Spec: "@every 1h", RunAtStart: true, Run: func(context.Context) error { panic("kaboom") }})
	s.Start()
	waitFor(t, "the panic logged", func() bool { return strings.Contains(logs.String(), "kaboom") })
	s.Add(Task{Name: "after", Spec: "@every 1h", RunAtStart: true, Run: func(context.Context) error { after.Store(true); return nil }})
	waitFor(t, "a task after the panic", after.Load)
}

func TestParallelBound(t *testing.T) {
	s, _ := newTest(t, 2)
	var running, maxRunning, done atomic.Int32
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		s.Add(Task{Name: name, Spec: "@every 1h", RunAtStart: true, Limited: true, Run: func(context.Context) error {
			n := running.Add(1)
			for {
				m := maxRunning.Load()
				if n <= m || maxRunning.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(30 * time.Millisecond)
			running.Add(-1)
			done.Add(1)
			return nil
		}})
	}
	s.Start()
	waitFor(t, "every task", func() bool { return done.Load() == 5 })
	if m := maxRunning.Load(); m != 2 {
		t.Errorf("at most %d limited tasks ran at once; want 2", m)
	}
}

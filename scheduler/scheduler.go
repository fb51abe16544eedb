// Package scheduler runs named tasks on cron schedules (robfig/cron/v3) for the
// daemon: in UTC, one run of a task at a time (a run still going when the next one is
// due skips that one), a panic in a task is recovered and logged, every run has its
// own timeout (cron never cancels a running job), and Stop cancels running tasks and
// waits for them, bounded.
//
// The package knows nothing of providers or the store: the daemon hands it closures.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"
	"golang.org/x/sync/semaphore"
)

// Task is a job run on a cron schedule.
type Task struct {
	// Name identifies the task in logs ("refresh aws", "nightly").
	Name string
	// Spec is a standard 5-field cron spec or a descriptor ("@every 30m", "@daily"),
	// evaluated in UTC.
	Spec string
	// Timeout bounds each run; 0 means none (not advised: cron never cancels a job).
	Timeout time.Duration
	// RunAtStart runs the task as soon as the scheduler starts (or at once, when it
	// is added to a running scheduler), then on its schedule. The daemon sets it for a
	// provider whose newest successful refresh is older than its period (Due).
	RunAtStart bool
	// Limited tasks share the scheduler's Parallel slots; the wait for a slot is
	// not counted against Timeout.
	Limited bool
	// Run does the work. ctx is cancelled at the timeout and when the scheduler stops.
	Run func(ctx context.Context) error
}

// Options configure a Scheduler.
type Options struct {
	// Log receives task and cron messages; nil discards them.
	Log *slog.Logger
	// Parallel bounds how many Limited tasks run at once; <= 0 means no bound.
	Parallel int
}

// Scheduler runs tasks on their schedules until Stop.
type Scheduler struct {
	c      *cron.Cron
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger
	// slots bounds how many Limited tasks run at once. Tasks are started by cron, one
	// goroutine per firing, and must give up waiting when the scheduler stops, so this
	// is x/sync's context-aware semaphore rather than an errgroup (whose Go cannot be
	// abandoned while it waits for a slot).
	slots *semaphore.Weighted

	mu      sync.Mutex
	started bool
}

// New returns a stopped scheduler whose tasks run under ctx: cancelling ctx (or
// calling Stop) cancels every running task.
func New(ctx context.Context, opts Options) *Scheduler {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Scheduler{ctx: ctx, cancel: cancel, log: log}
	if opts.Parallel > 0 {
		s.slots = semaphore.NewWeighted(int64(opts.Parallel))
	}
	// The chain is Recover(SkipIfStillRunning(job)); SkipIfStillRunning is applied
	// per task in Add (same order, same behaviour) so that its "skip" message names
	// the task.
	s.c = cron.New(cron.WithLocation(time.UTC), cron.WithLogger(cronLogger{log}),
		cron.WithChain(cron.Recover(cronLogger{log})))
	return s
}

// Parse parses a cron spec as the config does (cron.ParseStandard: 5 fields or a
// descriptor, after an optional TZ= or CRON_TZ= zone), so a spec the config accepted is
// one the scheduler runs. The zone prefix and an @every delay are validated first
// (spec.go): cron's parser panics on a zone with nothing after it.
func Parse(spec string) (cron.Schedule, error) {
	sched, err := parseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", spec, err)
	}
	return sched, nil
}

// Period is the time between two consecutive runs of spec after now:
// next(next(now)) - next(now). For specs with uneven gaps ("0 9,17 * * *") it is the
// gap that follows the next run.
func Period(spec string, now time.Time) (time.Duration, error) {
	sched, err := Parse(spec)
	if err != nil {
		return 0, err
	}
	return period(sched, now), nil
}

func period(sched cron.Schedule, now time.Time) time.Duration {
	n1 := sched.Next(now.UTC())
	if n1.IsZero() {
		return 0
	}
	n2 := sched.Next(n1)
	if n2.IsZero() {
		return 0
	}
	return n2.Sub(n1)
}

// Due reports whether a task that last succeeded at last should run now rather than
// wait for its schedule: it never succeeded, or its last success is older than the
// schedule's period.
func Due(spec string, last, now time.Time) (bool, error) {
	p, err := Period(spec, now)
	if err != nil {
		return false, err
	}
	return last.IsZero() || now.Sub(last) > p, nil
}

// Add schedules t. It may be called before or after Start.
func (s *Scheduler) Add(t Task) error {
	if t.Name == "" || t.Run == nil {
		return errors.New("scheduler: a task needs a name and a Run function")
	}
	sched, err := Parse(t.Spec)
	if err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	if t.RunAtStart {
		sched = &firstNow{Schedule: sched}
	}
	named := cronLogger{s.log.With("task", t.Name)}
	job := cron.NewChain(cron.SkipIfStillRunning(named)).Then(cron.FuncJob(func() { s.run(t) }))
	s.c.Schedule(sched, job)
	s.log.Debug("task scheduled", "task", t.Name, "schedule", t.Spec, "timeout", t.Timeout, "run_at_start", t.RunAtStart)
	return nil
}

// run is one run of t: wait for a slot, apply the timeout, log the outcome.
func (s *Scheduler) run(t Task) {
	if s.ctx.Err() != nil {
		return
	}
	if t.Limited && s.slots != nil {
		if s.slots.Acquire(s.ctx, 1) != nil {
			return // stopped while waiting for a slot
		}
		defer s.slots.Release(1)
	}
	ctx := s.ctx
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	start := time.Now()
	s.log.Debug("task started", "task", t.Name)
	err := t.Run(ctx)
	d := time.Since(start).Round(time.Millisecond)
	switch {
	case err != nil && s.ctx.Err() != nil:
		s.log.Warn("task cancelled by shutdown", "task", t.Name, "duration", d, "error", err)
	case err != nil:
		s.log.Error("task failed", "task", t.Name, "duration", d, "error", err)
	default:
		s.log.Debug("task done", "task", t.Name, "duration", d)
	}
}

// Start starts running tasks in the background.
func (s *Scheduler) Start() {
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	s.c.Start()
}

// ErrStopTimeout is returned by Stop when tasks were still running at its bound.
var ErrStopTimeout = errors.New("scheduler: tasks still running at the shutdown bound; abandoned")

// Stop stops scheduling, cancels running tasks' contexts and waits for them to return,
// at most timeout (<= 0: no bound). It returns ErrStopTimeout when the bound passed.
func (s *Scheduler) Stop(timeout time.Duration) error {
	s.cancel()
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return nil
	}
	done := s.c.Stop()
	if timeout <= 0 {
		<-done.Done()
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done.Done():
		return nil
	case <-t.C:
		return ErrStopTimeout
	}
}

// firstNow fires once at the first time cron asks for the next run (when the
// scheduler starts, or when the task is added to a running one), then follows the
// wrapped schedule. Going through cron rather than a separate goroutine keeps the
// catch-up run under the same Recover and SkipIfStillRunning wrappers and under
// Stop's wait.
type firstNow struct {
	cron.Schedule
	fired atomic.Bool
}

func (f *firstNow) Next(t time.Time) time.Time {
	if f.fired.CompareAndSwap(false, true) {
		return t
	}
	return f.Schedule.Next(t)
}

// cronLogger adapts slog to cron.Logger. Cron's routine messages (start, wake,
// schedule, run) are Debug; a skipped run is a Warn; errors (recovered panics) are
// Errors.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) {
	if msg == "skip" {
		c.l.Warn("previous run still going; this run skipped", kv...)
		return
	}
	c.l.Debug("cron: "+msg, kv...)
}

func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append([]any{"error", err}, kv...)...)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/config"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/registry"
	"github.com/pickergpu/picker/refresh"
	"github.com/pickergpu/picker/scheduler"
	"github.com/pickergpu/picker/store"
)

// nightlySpec is when the maintenance job runs (UTC): prune history older than
// [store] keep_history, then PRAGMA optimize.
const nightlySpec = "0 3 * * *"

// nightlyTimeout bounds the maintenance job.
const nightlyTimeout = 30 * time.Minute

// offerCacheSize bounds the offers the daemon keeps in memory across cached queries
// (about 250 bytes each).
const offerCacheSize = 200_000

// recommendMemoSize bounds the recommendations the daemon keeps. The memo serves repeated
// identical questions (a page reloaded, a dashboard polling); an entry on a marketplace
// holds 50-100 KB of live heap (heap profile under bench-market.sh's distinct-job load),
// and every garbage-collection cycle marks it. At 4096 entries the live heap reached
// 0.14-0.29 GB, the heap goal sat at daemonMemLimit and each mark phase took 140-210 ms
// of wall time, taking half of a 2-CPU daemon's CPU for that long: p99 172-208 ms.
// At 256 (13-25 MiB): peak RSS ~0.23 GiB, p99 80-107 ms, CPU per answer 4.0 -> 3.0 ms.
const recommendMemoSize = 256

// Seams for tests: which signals the daemon hears, how it exits at once, and how a
// provider is built (a test makes one that ignores cancellation, as a stuck adapter
// would).
var (
	notifySignals = func(c chan<- os.Signal) { signal.Notify(c, os.Interrupt, syscall.SIGTERM) }
	exitNow       = os.Exit
	newProvider   = func(d providers.Descriptor, cfg any) (providers.Provider, error) { return d.New(cfg) }
)

type daemonOptions struct {
	listen          string
	shutdownTimeout time.Duration
}

func (a *app) daemonCmd() *cobra.Command {
	var o daemonOptions
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Refresh prices on each provider's schedule and serve the web page and the HTTP API",
		Long: `daemon keeps prices fresh and answers questions over HTTP.

Each enabled provider is refreshed on its cron schedule ([providers.NAME] schedule,
else [refresh] schedule; UTC; descriptors such as "@every 30m" work), under its
[refresh] timeout, never overlapping itself. At start, a provider whose newest
successful refresh is older than its schedule's period is refreshed at once. A
failing provider keeps its last good prices. A nightly job (03:00 UTC) prunes price
history older than [store] keep_history and runs PRAGMA optimize.

The API (GET; query parameters are the command's flags; bodies are exactly the
command's -o json):
  /healthz          {"status":"ok"} when the database answers and passed its
                    last integrity check (at start and after each refresh)
  /v1/offers        picker offers
  /v1/estimate      picker estimate
  /v1/recommend     picker recommend (404 with the nearest miss when nothing fits)
  /v1/providers     picker providers
  /v1/watches       the [[watch]] price alerts: last value, offer, state, last
                    crossing (evaluated after each refresh; webhook_url is POSTed
                    once per crossing)
A bad parameter is a 400 whose JSON error names it. Requests are bounded (top <= 100,
limit <= 10000, 1000 offers when no limit is given, 32 list values, 256-byte values);
past [daemon] max_concurrent requests the answer is 503 with Retry-After. Only the
listen host, IPs, localhost and [daemon] hosts are served as Host; with [daemon]
token_env every request but /healthz needs "Authorization: Bearer <token>", and a
listen address beyond loopback requires it. Hub fetches need [daemon] allow_hub.

The web page, on the same listener: / (ask), /offers (compare, CSV), /history,
/providers; it answers with the same commands as the API.

SIGINT or SIGTERM stops it gracefully: no new requests, running refreshes cancelled,
bounded by --shutdown-timeout; a second signal exits at once. SIGHUP is logged and
ignored: the config is read once, at start; restart the daemon to apply a change.`,
		Example: `  picker daemon
  picker daemon --listen 127.0.0.1:9090 --log-format json
  curl 'localhost:8080/v1/recommend?model=llama-2-7b&task=lora&batch=4'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runDaemon(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.listen, "listen", "", "address for the HTTP API (default [daemon] listen, "+config.DefaultListen+")")
	cmd.Flags().DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on shutdown, how long to wait for requests and refreshes to finish")
	return cmd
}

func (a *app) runDaemon(ctx context.Context, o daemonOptions) error {
	listen, from := o.listen, "--listen"
	if listen == "" {
		listen, from = a.cfg.Daemon.Listen, "the default listen address"
		if a.cfg.Sets("daemon", "listen") {
			from = "[daemon] listen at " + a.cfg.Where("daemon", "listen")
		}
	} else if err := config.CheckListen(listen); err != nil {
		return usageError{fmt.Errorf("--listen %q: %v", listen, err)}
	}
	if o.shutdownTimeout <= 0 {
		return usageError{fmt.Errorf("--shutdown-timeout %v: must be positive", o.shutdownTimeout)}
	}
	w, err := a.newWatcher() // a bad [[watch]] is a config error, before anything starts
	if err != nil {
		return err
	}
	a.watch = w
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer a.watchSignals(cancel)()
	defer a.ignoreHangup()() // sighup.go

	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	// Most API requests repeat a few offer queries (recommend reads every current
	// offer matching its filters); serve them from memory until the next refresh.
	st.CacheOffers(offerCacheSize)
	st.KeepConns(a.cfg.Daemon.MaxConcurrent) // a connection per request in progress, its statements prepared
	a.recMemo = newRecommendMemo(recommendMemoSize)
	a.tuneDaemonGC(a.log) // daemongc.go
	ln, err := a.listen(listen, from)
	if err != nil {
		return err
	}
	if err := a.checkExposure(ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	// The integrity probe /healthz reports: once now, again after each refresh.
	a.probeIntegrity(ctx, st)
	a.loadProviderMetrics(ctx) // /metrics' per-provider gauges before the first refresh
	sched, providers, err := a.newScheduler(ctx, st)
	if err != nil {
		ln.Close()
		return err
	}

	srv := a.newHTTPServer(a.apiHandlerFor(listen))
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	sched.Start()
	a.log.Info("daemon started", "listen", ln.Addr().String(), "db", st.Path(), "providers", providers,
		"keep_history", a.cfg.Store.KeepHistory.Duration.String())

	var failure error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		failure = fmt.Errorf("daemon: serve HTTP: %w", err)
		cancel()
	}
	a.shutdown(ctx, srv, sched, o.shutdownTimeout)
	return failure
}

// watchSignals cancels the daemon at the first SIGINT/SIGTERM and exits at once at the
// second; call the function it returns to stop listening. main's signal.NotifyContext
// cancels ctx at the first signal too; the daemon listens on its own channel so that it
// also sees the second one.
func (a *app) watchSignals(cancel context.CancelFunc) (stop func()) {
	sigs := make(chan os.Signal, 2)
	notifySignals(sigs)
	stopped := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case s := <-sigs:
				n++
				if n == 1 {
					a.log.Info("signal received; shutting down (send it again to exit at once)", "signal", s.String())
					cancel()
					continue
				}
				a.log.Warn("second signal; exiting at once", "signal", s.String())
				exitNow(exitRuntime)
			case <-stopped:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(stopped)
	}
}

// listen opens the API's listener; from says where addr came from ("--listen", or the
// config key and its line), so an address in use names what to change.
func (a *app) listen(addr, from string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "daemon: listen on %s (%s): %w", addr, from, err)
	}
	return ln, nil
}

// checkExposure refuses to serve beyond this machine without a token: anyone who can
// reach the port could otherwise use the API (and, with allow_hub, the operator's
// HF_TOKEN). A token_env that names an empty variable is refused too.
func (a *app) checkExposure(addr net.Addr) error {
	env := a.cfg.Daemon.TokenEnv
	if env != "" && a.m.Getenv(env) == "" {
		return pricing.Errorf(pricing.Invalid, "daemon: [daemon] token_env names %s, which is empty or unset; export the token in it", env)
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() && env == "" {
		return pricing.Errorf(pricing.Invalid, "daemon: listening on %s reaches beyond this machine and needs a bearer token: set [daemon] token_env = \"NAME\" and export NAME=<token>, or listen on 127.0.0.1", addr)
	}
	return nil
}

// newScheduler schedules every enabled provider's refresh and the nightly maintenance;
// it returns the scheduled providers for the start-up log.
func (a *app) newScheduler(ctx context.Context, st *store.Store) (*scheduler.Scheduler, []string, error) {
	sched := scheduler.New(ctx, scheduler.Options{Log: a.log, Parallel: a.cfg.Refresh.Parallel})
	providers, err := a.scheduleRefreshes(ctx, sched, st)
	if err == nil {
		err = sched.Add(scheduler.Task{Name: "nightly", Spec: nightlySpec, Timeout: nightlyTimeout, Run: func(ctx context.Context) error {
			return a.nightly(ctx, st)
		}})
	}
	return sched, providers, err
}

// shutdown stops accepting requests and lets the ones in flight finish, while running
// refreshes are cancelled (the scheduler's context is a child of ctx) and waited for;
// both within bound. The store is closed by Main.Run after runDaemon returns.
func (a *app) shutdown(ctx context.Context, srv *http.Server, sched *scheduler.Scheduler, bound time.Duration) {
	a.log.Info("shutting down", "bound", bound)
	t0 := time.Now()
	schedDone := make(chan error, 1)
	go func() { schedDone <- sched.Stop(bound) }()
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		a.log.Warn("requests still running at the shutdown bound; closing their connections", "error", err)
		srv.Close()
	}
	if err := <-schedDone; err != nil {
		a.log.Warn("refreshes still running at the shutdown bound were abandoned; their transactions roll back", "error", err)
	}
	a.log.Info("stopped", "took", time.Since(t0).Round(time.Millisecond))
}

// scheduleRefreshes adds a refresh task per enabled provider and returns their names.
// A provider whose newest successful refresh is older than its period runs at once.
func (a *app) scheduleRefreshes(ctx context.Context, sched *scheduler.Scheduler, st *store.Store) ([]string, error) {
	var names []string
	for _, d := range registry.All() {
		if a.cfg.Enabled(d.Name) {
			names = append(names, d.Name)
		}
	}
	if len(names) == 0 {
		a.log.Warn("no provider is enabled; serving stored prices only (enable one with [providers.NAME] enabled = true)", "config", a.cfg.String())
		return nil, nil
	}
	jobs, err := a.refreshJobs(names)
	if err != nil {
		return nil, err
	}
	stats, err := st.Providers(ctx)
	if err != nil {
		return nil, err
	}
	last := map[string]time.Time{}
	for _, s := range stats {
		last[s.Provider] = s.LastSuccess
	}
	now := a.now()
	for _, j := range jobs {
		spec := a.cfg.Schedule(j.Name)
		due, err := scheduler.Due(spec, last[j.Name], now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", j.Name, err)
		}
		if a.log.Enabled(ctx, slog.LevelDebug) {
			j.Progress = a.logProgress(j.Name)
		}
		err = sched.Add(scheduler.Task{Name: "refresh " + j.Name, Spec: spec, Timeout: j.Timeout, RunAtStart: due, Limited: true, Run: a.refreshTask(st, j)})
		if err != nil {
			return nil, err
		}
		args := []any{"provider", j.Name, "schedule", spec, "timeout", j.Timeout, "refresh_now", due}
		if t := last[j.Name]; !t.IsZero() {
			args = append(args, "last_success", t.Format(time.RFC3339))
		}
		a.log.Info("provider scheduled", args...)
	}
	return names, nil
}

// refreshTask is one scheduled refresh of a provider: fetch, one store transaction;
// a failure is recorded and the last good prices stay current.
func (a *app) refreshTask(st refresh.Store, j refresh.Job) func(context.Context) error {
	return func(ctx context.Context) error {
		r := refresh.Run(ctx, st, j, a.now)
		defer a.observeRefresh(context.WithoutCancel(ctx), r)
		for _, w := range r.Warnings {
			a.log.Warn(a.redactor().String(w), "provider", r.Provider)
		}
		for part, e := range r.Failed {
			a.log.Warn("part of the refresh failed; its last good prices stay current", "provider", r.Provider, "part", part, "error", e)
		}
		if s, ok := st.(*store.Store); ok {
			a.probeIntegrity(ctx, s)
		}
		if r.Err != nil {
			return fmt.Errorf("refresh %s failed, last good prices kept: %w", r.Provider, r.Err)
		}
		a.log.Info("refreshed", "provider", r.Provider, "offers", r.OffersSeen, "prices_changed", r.PricesChanged,
			"offers_closed", r.OffersClosed, "duration", r.Duration.Round(time.Millisecond))
		if a.watch != nil {
			a.watch.evaluate(ctx)
		}
		return nil
	}
}

// nightly prunes closed price intervals older than [store] keep_history (when set),
// then lets SQLite refresh its planner statistics.
func (a *app) nightly(ctx context.Context, st *store.Store) error {
	var errs []error
	if keep := a.cfg.Store.KeepHistory.Duration; keep > 0 {
		cutoff := a.now().Add(-keep)
		n, err := st.Prune(ctx, cutoff)
		if err != nil {
			errs = append(errs, err)
		} else {
			a.log.Info("pruned price history", "older_than", cutoff.UTC().Format(time.RFC3339), "intervals_deleted", n)
		}
	}
	if err := st.Optimize(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

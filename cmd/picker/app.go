package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/config"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/redact"
	"github.com/pickergpu/picker/refresh"
	"github.com/pickergpu/picker/snapshot"
	"github.com/pickergpu/picker/store"
	"github.com/pickergpu/picker/termsafe"
)

// Exit codes (CONTRACT.md, Global).
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
	exitNoFit   = 3
)

// Main is the whole program with its environment made explicit, so end-to-end tests run
// it in process with buffers and a temporary database (wtf's Main.Run pattern).
type Main struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Args           []string
	Getenv         func(string) string
	// TTY overrides terminal detection of Stdout and Stderr (tests); nil means detect
	// each.
	TTY *bool
	// Now is the clock (tests pin it); nil means time.Now.
	Now func() time.Time
	// Ticks, when set, advances the refresh spinner on a terminal instead of a 100 ms
	// ticker (tests send on it, or never).
	Ticks <-chan time.Time
}

// app holds global flags and lazily opened dependencies shared by every command. A
// command's run function takes what it needs from app and never touches cobra.
type app struct {
	m       Main
	stdout  io.Writer
	stderr  io.Writer // errOut
	errOut  *termOut  // stderr, which a progress display can be drawn below (progress.go)
	tty     bool      // stdout is a terminal
	errTTY  bool      // stderr is a terminal
	now     func() time.Time
	log     *slog.Logger
	cfgPath string
	dbPath  string
	output  string
	quiet   bool
	verbose bool
	// logFormat is text or json (--log-format, env PICKER_LOG_FORMAT).
	logFormat string

	cfg *config.Config
	st  *store.Store
	// recMemo (the daemon's) keeps recommendations until the offers change.
	recMemo *recommendMemo
	// provCache keeps the provider rows until the data changes (provcache.go).
	provCache provCache
	red       *redact.Redactor
	// The daemon's health state (/healthz) and Hub gate (API model lookups).
	lastProbe atomic.Pointer[probeResult]
	probing   atomic.Bool
	schema    atomic.Int64
	hub       *hubGate
	// The daemon's metrics (/metrics), built at first use (mx).
	metrics     *metrics
	metricsOnce sync.Once
	// watch evaluates the daemon's [[watch]] entries after each refresh (watch.go).
	watch *watcher
	// cmdPath is the command that ran ("picker recommend"), for the help hint of errors.
	cmdPath string
}

// redactor is the one redaction step for errors picker stores, serves or logs: the
// secrets the config and environment point at, plus secret-shaped text. setup builds
// it; the fallback serves callers that made an app without setup.
func (a *app) redactor() *redact.Redactor {
	if a.red == nil {
		a.red = redact.New(a.cfg.Secrets(a.m.Getenv)...)
	}
	return a.red
}

// usageError marks errors in how picker was invoked (exit 2, usage printed).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// noFitError is returned when no offer fits the job (exit 3).
type noFitError struct{ msg string }

func (e noFitError) Error() string { return e.msg }

// Run executes the command line and returns the exit code.
func (m Main) Run(ctx context.Context) int {
	if m.Getenv == nil {
		m.Getenv = os.Getenv
	}
	a := &app{m: m, stdout: m.Stdout, errOut: &termOut{w: m.Stderr}, now: m.Now}
	a.stderr = a.errOut
	if a.now == nil {
		a.now = time.Now
	}
	if m.TTY != nil {
		a.tty, a.errTTY = *m.TTY, *m.TTY
	} else {
		a.tty, a.errTTY = isTerminal(m.Stdout), isTerminal(m.Stderr)
	}
	if a.tty {
		// Text from providers and the store is escaped on a terminal (termsafe); a pipe
		// or a file gets the bytes (a JSON encoder escapes control characters itself).
		a.stdout = termsafe.Writer{W: m.Stdout}
	}
	root := a.rootCmd()
	root.SetArgs(m.Args)
	root.SetOut(m.Stdout)
	root.SetErr(m.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if cmd != nil {
		a.cmdPath = cmd.CommandPath()
	}
	if a.st != nil {
		if cerr := a.st.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return a.exitCode(err)
}

func (a *app) exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var nf noFitError
	var ue usageError
	switch {
	case errors.As(err, &nf):
		fmt.Fprintln(a.stderr, "picker:", nf.msg)
		return exitNoFit
	case errors.As(err, &ue):
		fmt.Fprintln(a.stderr, "picker:", ue.err)
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmp.Or(a.cmdPath, "picker"))
		return exitUsage
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(a.stderr, "picker: interrupted")
		return exitRuntime
	}
	fmt.Fprintln(a.stderr, "picker:", err)
	switch pricing.ErrorCode(err) {
	case pricing.Invalid, pricing.NotFound:
		if pricing.ErrorParam(err) != "" && a.cmdPath != "" {
			fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", a.cmdPath)
		}
		return exitUsage
	}
	return exitRuntime
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "picker",
		Short: "Find the GPU instance that fits your job and does it for the least money",
		Long: `picker estimates the GPU memory a training, fine-tuning or inference job needs,
keeps GPU instance prices from the clouds in a local SQLite database (seeded from an
embedded price snapshot, so it works offline), and recommends the cheapest instance
that fits.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.setup()
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.cfgPath, "config", a.m.Getenv("PICKER_CONFIG"), "TOML config file (env PICKER_CONFIG; default $XDG_CONFIG_HOME/picker/config.toml if it exists)")
	pf.StringVar(&a.dbPath, "db", a.m.Getenv("PICKER_DB"), "SQLite database (env PICKER_DB; default $XDG_DATA_HOME/picker/picker.db)")
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table, json or csv")
	pf.BoolVarP(&a.quiet, "quiet", "q", false, "log only errors")
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "log debug detail")
	pf.StringVar(&a.logFormat, "log-format", cmp.Or(a.m.Getenv("PICKER_LOG_FORMAT"), "text"), "log format on stderr: text or json (env PICKER_LOG_FORMAT)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{plainFlagError(err)}
	})
	a.distribution(root)
	root.AddCommand(
		a.offersCmd(), a.gpusCmd(), a.exportCmd(), a.historyCmd(), a.providersCmd(), a.refreshCmd(), a.estimateCmd(), a.recommendCmd(), a.daemonCmd(), a.mcpCmd(), a.versionCmd(),
	)
	for _, c := range root.Commands() {
		c.Flags().SortFlags = false
		c.Args = noArgs(a.m.Args) // no command takes arguments: a stray one is a usage error
	}
	// Unknown subcommands and stray arguments are usage errors, not runtime errors.
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("unknown command %q", args[0])}
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	a.shellHabits(root) // value completion, "Did you mean", after root.Args above
	return root
}

// setup validates global flags, configures logging and loads the config. The store
// is opened lazily by commands that need it.
func (a *app) setup() error {
	switch a.output {
	case "table", "json", "csv":
	default:
		return usageError{fmt.Errorf("--output %q: want table, json or csv", a.output)}
	}
	hopts := &slog.HandlerOptions{Level: a.logLevel()}
	switch a.logFormat {
	case "text", "":
		a.log = slog.New(slog.NewTextHandler(a.stderr, hopts))
	case "json":
		a.log = slog.New(slog.NewJSONHandler(a.stderr, hopts))
	default:
		return usageError{fmt.Errorf("--log-format %q: want text or json", a.logFormat)}
	}
	cfg, err := config.Load(a.cfgPath)
	if err != nil {
		return err
	}
	a.cfg = cfg
	// Built here, before any goroutine uses it.
	a.red = redact.New(cfg.Secrets(a.m.Getenv)...)
	// One cap on every provider answer, whichever adapter reads it.
	httpx.SetMaxBodyBytes(int64(cfg.Refresh.MaxAnswerMiB) << 20)
	return nil
}

// logLevel is the level -q and -v ask for.
func (a *app) logLevel() slog.Level {
	switch {
	case a.verbose:
		return slog.LevelDebug
	case a.quiet:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// store opens the database, creating and seeding it from the embedded snapshot on first
// use so every command works offline.
func (a *app) store(ctx context.Context) (*store.Store, error) {
	if a.st != nil {
		return a.st, nil
	}
	path := a.cfg.DBPath(a.dbPath)
	st, err := store.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	res, err := refresh.EnsureSeeded(ctx, st, refresh.Snapshot)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("seed %s: %w", path, err)
	}
	if res.Offers > 0 {
		a.log.Info("created price database from the embedded snapshot", "path", path, "offers", res.Offers, "snapshot", snapshot.Date().Format("2006-01-02"))
	}
	a.log.Debug("opened price database", "path", path, "read_only", st.ReadOnly(), "config", a.cfg.Path)
	a.st = st
	return st, nil
}

// splitList splits comma lists from flags ("aws,gcp"), dropping blanks.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

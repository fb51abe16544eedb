// Package fetchproc runs a provider's fetch in the picker-fetch program, a second
// binary that carries the heavy SDK adapters (aws, gcp), the way git runs its
// subcommands and terraform its providers. Go initialises every linked package at
// process start, and the AWS and GCP SDKs (the GCP compute protobuf registry above all)
// cost every picker command ~8 of its ~16 ms before main (issue 17); picker links only
// the adapters' light config packages and this one, so only a refresh of those
// providers pays for the SDKs, in the process that uses them.
//
// The parent side is Provider (a providers.Streamer): it writes the provider's config
// section to picker-fetch's stdin as JSON and reads its stdout, a stream of parts
// (each a []pricing.Offer) and a final summary or error, forwarding each part as it
// arrives. The child side is Main, which cmd/picker-fetch calls with its list of
// adapters. The child logs to the stderr picker gives it, at picker's level, through
// picker's redaction; an error keeps its pricing code and parameter across the pipe, so
// exit codes stay what they were in one process.
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
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// EnvPath names the environment variable that points at picker-fetch.
const EnvPath = "PICKER_FETCH"

// waitDelay is how long a cancelled child has between SIGTERM and SIGKILL, and how long
// a child that sent its result has to exit.
const waitDelay = 5 * time.Second

// Settings are what the child takes from the picker process that runs it.
type Settings struct {
	// Getenv reads PICKER_FETCH; nil means os.Getenv. The child itself inherits the
	// process environment (credentials, AWS_* and GOOGLE_* variables).
	Getenv func(string) string
	// Stderr receives the child's log lines; nil means os.Stderr.
	Stderr io.Writer
	// LogLevel and LogFormat ("text" or "json") are picker's -v/-q and --log-format.
	LogLevel  slog.Level
	LogFormat string
	// Secrets are the values picker's redactor masks; the child's log lines are masked
	// the same way.
	Secrets []string
}

// Provider fetches one provider's offers by running picker-fetch. It is safe for
// concurrent use; each Fetch or Stream runs its own child.
type Provider struct {
	name string
	cfg  json.RawMessage

	mu   sync.Mutex
	set  Settings
	path string
	// lastPID is the most recent child's process id (tests check it is gone).
	lastPID int
}

// Constructor is a Descriptor.New for the adapter name whose light package gives its
// Config type C and validate: the config is checked here, in picker, so a bad section
// is a usage error (exit 2) before any process starts, as it was in one process.
func Constructor[C any](name string, validate func(C) error) func(any) (providers.Provider, error) {
	return providers.Constructor(name, func(c C) (*Provider, error) {
		if err := validate(c); err != nil {
			return nil, err
		}
		return New(name, c)
	})
}

// New returns the provider that runs `picker-fetch name` with cfg, the adapter's
// decoded config section. It starts nothing; Configure (or the first fetch) finds the
// program.
func New(name string, cfg any) (*Provider, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, pricing.Errorf(pricing.Internal, "%s: encode config for %s: %w", name, Program, err)
	}
	return &Provider{name: name, cfg: b}, nil
}

// Configure sets the child's settings and finds picker-fetch, so a missing program is
// reported when the refresh is set up rather than when it runs.
func (p *Provider) Configure(s Settings) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set = s
	p.path = ""
	_, err := p.locateLocked()
	return err
}

// Path finds picker-fetch: $PICKER_FETCH, else picker-fetch next to the running
// executable (symlinks resolved), else on $PATH. The error says what to install.
func Path(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if env := getenv(EnvPath); env != "" {
		if err := executable(env); err != nil {
			return "", pricing.Errorf(pricing.Unavailable, "%s=%s: %v; point it at the %s program (go install github.com/pickergpu/picker/cmd/%s@latest)", EnvPath, env, err, Program, Program)
		}
		return env, nil
	}
	dir := "the picker executable"
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir = exe
		cand := filepath.Join(filepath.Dir(exe), Program)
		if executable(cand) == nil {
			return cand, nil
		}
	}
	if p, err := exec.LookPath(Program); err == nil {
		return p, nil
	}
	return "", pricing.Errorf(pricing.Unavailable, "needs the %s program (it carries the AWS and GCP SDKs so other commands start fast); not found next to %s or on PATH: go install github.com/pickergpu/picker/cmd/%s@latest (or set %s)", Program, dir, Program, EnvPath)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not an executable file")
	}
	return nil
}

func (p *Provider) locateLocked() (string, error) {
	if p.path != "" {
		return p.path, nil
	}
	path, err := Path(p.set.Getenv)
	if err != nil {
		return "", err
	}
	p.path = path
	return path, nil
}

// Fetch runs the child and collects its parts into one Snapshot.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	var offers []pricing.Offer
	snap, err := p.Stream(ctx, func(part []pricing.Offer) error {
		offers = append(offers, part...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	snap.Offers = offers
	return snap, nil
}

// Stream runs the child and hands each part to emit as it arrives, so the caller never
// holds more than the part being written (plus what it keeps).
func (p *Provider) Stream(ctx context.Context, emit func([]pricing.Offer) error) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", p.name, err)
	}
	p.mu.Lock()
	path, err := p.locateLocked()
	set := p.set
	p.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.name, err)
	}
	req, err := json.Marshal(request{Protocol: Protocol, Config: p.cfg, Secrets: set.Secrets, Progress: providers.WantsProgress(ctx), Quotas: providers.WantsQuotas(ctx), Market: providers.WantsMarket(ctx)})
	if err != nil {
		return nil, pricing.Errorf(pricing.Internal, "%s: encode request for %s: %w", p.name, Program, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(cctx, path,
		"-log-level", set.LogLevel.String(),
		"-log-format", set.LogFormat,
		"-max-answer-bytes", strconv.FormatInt(httpx.MaxBodyBytes(), 10),
		p.name)
	cmd.Stdin = bytes.NewReader(req)
	cmd.Stderr = set.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	cmd.WaitDelay = waitDelay
	out, w, err := os.Pipe()
	if err != nil {
		return nil, pricing.Errorf(pricing.Internal, "%s: %s: %w", p.name, Program, err)
	}
	defer out.Close()
	cmd.Stdout = w
	ownGroup(cmd, out)
	err = cmd.Start()
	w.Close() // the child has its copy; ours would keep the pipe open past its exit
	if err != nil {
		return nil, pricing.Errorf(pricing.Internal, "%s: start %s (%s): %w", p.name, Program, path, err)
	}
	p.mu.Lock()
	p.lastPID = cmd.Process.Pid
	p.mu.Unlock()

	offers := 0
	var dropped []string
	snap, rerr := read(out, func(part []pricing.Offer) error {
		part, warn := recheck(p.name, part)
		dropped = append(dropped, warn...)
		offers += len(part)
		return emit(part)
	}, func(pr providers.Progress) { providers.ReportProgress(ctx, pr) })
	if snap != nil {
		snap.Warnings = append(snap.Warnings, dropped...)
	}
	if rerr == nil {
		// The child has sent its result and is exiting; one that lingers is stopped.
		t := time.AfterFunc(waitDelay, cancel)
		defer t.Stop()
	} else {
		// Stop a child whose stream broke off or was refused: close the pipe (a write
		// to it kills the child with SIGPIPE) and send SIGTERM.
		out.Close()
		cancel()
	}
	werr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", p.name, err)
	}
	var ce childError
	var ee emitError
	switch {
	case rerr == nil && offers == 0: // the adapters never do this; the contract says so
		return nil, pricing.Errorf(pricing.Unavailable, "%s: no prices found", p.name)
	case rerr == nil:
		return snap, nil
	case errors.As(rerr, &ce):
		return nil, ce.err
	case errors.As(rerr, &ee):
		return nil, fmt.Errorf("%s: %w", p.name, ee.err)
	case errors.Is(rerr, io.EOF): // nothing, or whole frames and no result
		return nil, pricing.Errorf(pricing.Internal, "%s: %s (%s) ended without a result (%v); its messages above say why", p.name, Program, path, exitStatus(werr))
	}
	return nil, pricing.Errorf(pricing.Internal, "%s: %s (%s) sent garbled output (%v; %v): is it the picker-fetch of this picker's version?", p.name, Program, path, rerr, exitStatus(werr))
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// childError is the error the child reported: its adapter's error, code and all.
type childError struct{ err error }

func (e childError) Error() string { return e.err.Error() }

// emitError is the caller's emit refusing a part.
type emitError struct{ err error }

func (e emitError) Error() string { return e.err.Error() }

// read decodes frames until the final one, handing parts to emit and progress reports
// to progress (nil: dropped).
func read(r io.Reader, emit func([]pricing.Offer) error, progress func(providers.Progress)) (*providers.Snapshot, error) {
	fr := newFrameReader(r)
	var quotas *providers.QuotaReport
	for {
		f, err := fr.read() // a fresh part each time: emit may keep it
		if err != nil {
			return nil, err
		}
		switch {
		case f.Err != nil:
			return nil, childError{f.Err.err()}
		case f.Summary != nil:
			snap := f.Summary.snapshot()
			snap.Quotas = quotas
			return snap, nil
		case f.Quotas != nil:
			quotas = f.Quotas.report()
			continue
		case f.Progress != nil:
			if progress != nil {
				progress(*f.Progress)
			}
			continue
		}
		if err := emit(f.Offers); err != nil {
			return nil, emitError{err}
		}
	}
}

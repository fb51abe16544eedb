package fetchproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/redact"
)

// chunk is how many offers a frame holds when the adapter fetches all at once (it is
// not a Streamer): the encoder's buffer stays a few MB however many offers there are.
const chunk = 8192

// Main is picker-fetch: `picker-fetch [-log-level L] [-log-format F]
// [-max-answer-bytes N] PROVIDER`, the request (JSON) on stdin, the frames (wire.go) on
// stdout, logs on stderr. adapters are the SDK adapters it can run. It returns the exit
// code: 0 for a result, 1 for an error result, 2 for a bad invocation (reported as an
// error frame as well, so picker shows it).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, adapters []providers.Descriptor) int {
	fw := newFrameWriter(stdout)
	var sendMu sync.Mutex // progress is reported from the adapter's goroutines
	send := func(f frame) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return fw.write(f)
	}
	usage := func(err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", Program, err)
		_ = send(frame{Err: &wireError{Code: pricing.Internal, Message: fmt.Sprintf("%s: %v", Program, err)}})
		return 2
	}
	fs := flag.NewFlagSet(Program, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var level slog.Level
	fs.TextVar(&level, "log-level", slog.LevelInfo, "log level: DEBUG, INFO, WARN or ERROR")
	format := fs.String("log-format", "text", "log format: text or json")
	maxBody := fs.Int64("max-answer-bytes", 0, "cap on one provider answer (picker's [refresh] max_answer_mib); 0: the default")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [flags] PROVIDER < request.json\n\nRuns one provider's fetch for picker (which starts it; see docs/CONTRACT.md).\nProviders: %s\n\n", Program, strings.Join(names(adapters), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 2 // a person asking: the usage is on stderr
	} else if err != nil {
		return usage(err)
	}
	if fs.NArg() != 1 {
		return usage(fmt.Errorf("want one provider (%s), got %d arguments", strings.Join(names(adapters), ", "), fs.NArg()))
	}
	name := fs.Arg(0)
	i := slices.IndexFunc(adapters, func(d providers.Descriptor) bool { return d.Name == name })
	if i < 0 {
		return usage(fmt.Errorf("unknown provider %q; this %s has %s", name, Program, strings.Join(names(adapters), ", ")))
	}
	d := adapters[i]
	var req request
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		return usage(fmt.Errorf("read the request on stdin: %w", err))
	}
	if req.Protocol != Protocol {
		return usage(fmt.Errorf("picker sent protocol %d, this %s speaks %d: install picker and %s from the same version", req.Protocol, Program, Protocol, Program))
	}
	var h slog.Handler
	hopts := &slog.HandlerOptions{Level: level}
	switch *format {
	case "json":
		h = slog.NewJSONHandler(stderr, hopts)
	case "text", "":
		h = slog.NewTextHandler(stderr, hopts)
	default:
		return usage(fmt.Errorf("-log-format %q: want text or json", *format))
	}
	slog.SetDefault(slog.New(redactHandler{h, redact.New(req.Secrets...)}).With("provider", name))
	httpx.SetMaxBodyBytes(*maxBody)

	cfg := reflect.New(reflect.TypeOf(d.Config))
	dec := json.NewDecoder(bytes.NewReader(req.Config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg.Interface()); err != nil {
		return usage(fmt.Errorf("%s config: %w", name, err))
	}
	if req.Progress {
		// A report that cannot be sent is dropped: the next part or the summary fails
		// on the same pipe and ends the fetch.
		ctx = providers.WithProgress(ctx, func(pr providers.Progress) { _ = send(frame{Progress: &pr}) })
	}
	if req.Quotas {
		ctx = providers.WithQuotaRead(ctx)
	}
	if req.Market {
		ctx = providers.WithMarketRead(ctx)
	}
	p, err := d.New(cfg.Elem().Interface())
	if err == nil {
		err = serve(ctx, p, send)
	}
	if err != nil {
		if errors.Is(err, errSend) {
			return 1 // picker is gone or stopped reading: nobody to tell
		}
		w := toWire(err)
		_ = send(frame{Err: &w})
		return 1
	}
	return 0
}

// errSend marks a failure to write a frame.
var errSend = errors.New("write to picker")

// serve runs the fetch, sending each part, then the summary. An error is returned
// for the caller to send.
func serve(ctx context.Context, p providers.Provider, send func(frame) error) error {
	emit := func(offers []pricing.Offer) error {
		if err := send(frame{Offers: offers}); err != nil {
			return fmt.Errorf("%w: %w", errSend, err)
		}
		return nil
	}
	var snap *providers.Snapshot
	var err error
	if s, ok := p.(providers.Streamer); ok {
		snap, err = s.Stream(ctx, emit)
	} else if snap, err = p.Fetch(ctx); err == nil {
		for offers := snap.Offers; len(offers) > 0 && err == nil; offers = offers[min(chunk, len(offers)):] {
			err = emit(offers[:min(chunk, len(offers))])
		}
		snap.Offers = nil
	}
	if err != nil {
		return err
	}
	if snap.Quotas != nil && providers.WantsQuotas(ctx) {
		if err := send(frame{Quotas: quotasToWire(snap.Quotas)}); err != nil {
			return fmt.Errorf("%w: %w", errSend, err)
		}
	}
	if err := send(frame{Summary: summarize(snap)}); err != nil {
		return fmt.Errorf("%w: %w", errSend, err)
	}
	return nil
}

func names(ds []providers.Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

// redactHandler masks secrets in the child's log lines (message and string values),
// with picker's redactor: the SDK's debug lines can quote requests.
type redactHandler struct {
	slog.Handler
	r *redact.Redactor
}

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return redactHandler{h.Handler.WithAttrs(red), h.r}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h.Handler.WithGroup(name), h.r}
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r.String(err.Error()))
		}
		if s, ok := v.Any().(fmt.Stringer); ok {
			return slog.String(a.Key, h.r.String(s.String()))
		}
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = h.attr(ga)
		}
		return slog.Group(a.Key, red...)
	}
	return slog.Attr{Key: a.Key, Value: v}
}

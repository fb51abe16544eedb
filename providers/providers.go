// Package providers defines what a price source is (the Provider interface), how each
// adapter describes itself and its config (Descriptor, whose Config type the config
// package decodes), the config fields every provider section shares (Common), the one
// validate-and-dedupe step every adapter's offers pass (Finalize), and the TOML error
// format every file picker reads shares (TOMLErrorString).
//
// Adapters live in sub-packages (aws, gcp, azure, lambda, runpod, static). Each imports
// only this package, pricing, providers/httpx (the shared HTTP retry policy) and its own
// SDK: never the store, never another adapter. providers/registry lists them;
// providers/providertest is their shared conformance suite and fake-server kit. The SDK
// adapters (aws, gcp) run in the picker-fetch program (providers/fetchproc), picker
// linking only their light config packages (aws/awsconf, gcp/gcpconf).
package providers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// Provider fetches the current GPU offers of one price source.
//
// Contract, checked by the conformance suite:
//   - Fetch honours ctx: it returns promptly with ctx.Err() (wrapped) once ctx is done.
//   - It returns every offer it found or an error, never a silently partial list. Where
//     a provider is split into independent regions, a failed region is reported in
//     Snapshot.Failed and left out of Snapshot.Regions, so the store keeps that region's
//     last good prices.
//   - An empty result is an error: "no prices found" is a failure, never an empty catalog.
//   - Every offer passes pricing.Offer.Validate, has Source pricing.SourceAPI (or
//     SourceFile), a canonical GPU model where the name is known, and no two offers
//     share a Key: every adapter passes its offers through Finalize, the one
//     validate-and-dedupe step.
type Provider interface {
	Fetch(ctx context.Context) (*Snapshot, error)
}

// Streamer is a Provider that can hand its offers over part by part (one region each,
// for instance) as each part completes, so that neither the adapter nor the refresh
// holds every offer of a large provider at once (issue 17: a 90k-offer AWS refresh in
// under 100 MiB).
//
// Contract, in addition to Provider's: Stream calls emit once per completed part, never
// concurrently, with offers that have passed Finalize; no Key repeats within or across
// parts. It returns the rest of what Fetch's Snapshot says (Regions, Failed, Warnings)
// with Offers nil. An error from emit stops the stream and Stream returns it (wrapped).
// A stream that emitted nothing is "no prices found", a failure as for Fetch. Fetch
// stays available and returns the same offers in one Snapshot.
type Streamer interface {
	Provider
	Stream(ctx context.Context, emit func(offers []pricing.Offer) error) (*Snapshot, error)
}

// Snapshot is one fetch's result.
type Snapshot struct {
	Offers []pricing.Offer
	// Regions the fetch covered completely. The store closes this provider's offers that
	// are missing from the snapshot only in these regions. Nil means every region
	// (the provider's prices are global or the fetch had no regional split).
	Regions []string
	// Failed lists the regions (or other parts) that failed, with why; the fetch still
	// succeeds when others landed.
	Failed map[string]error
	// Warnings are non-fatal findings worth a log line: unknown GPU names kept raw,
	// machines skipped for missing SKUs, sizes not in a table.
	Warnings []string
	// Quotas is the account's quota read (quota.go), when the context asked for one and
	// the provider has quotas; nil otherwise.
	Quotas *QuotaReport
	// Market is the spot-band and storage-price read (market.go), when the context asked
	// for one and the provider has them; nil otherwise.
	Market *MarketReport
}

// Common holds the config keys every provider section takes (CONTRACT.md, Config).
// Adapters embed it in their own Config type.
type Common struct {
	Enabled  *bool    `toml:"enabled"`
	Regions  []string `toml:"regions"`
	Schedule string   `toml:"schedule"`
	Endpoint string   `toml:"endpoint"`
	Timeout  Duration `toml:"timeout"`
}

// IsEnabled reports the section's enabled flag, defaulting to def when unset.
func (c Common) IsEnabled(def bool) bool {
	if c.Enabled == nil {
		return def
	}
	return *c.Enabled
}

// Shared returns the shared keys; through embedding, every adapter's Config has it,
// which is how the config package reads them without knowing the adapter.
func (c Common) Shared() Common { return c }

// DefaultEnabled is whether a section without an enabled key is enabled: no, unless
// the adapter's Config says otherwise (static: when it lists files).
func (Common) DefaultEnabled() bool { return false }

// Section is an adapter's decoded config section: its own Config type, which embeds
// Common (and so has these methods).
type Section interface {
	Shared() Common
	DefaultEnabled() bool
}

// Option documents one config key of a provider: the descriptor list drives
// `picker providers`, the config's [providers.*] sections and the test that
// config.example.toml mentions every option. No key holds a secret: credentials are
// read from environment variables the keys name (api_key_env), so nothing is redacted.
type Option struct {
	Key     string
	Help    string
	Default string
}

// CommonOptions are the options of Common, shared by every descriptor.
var CommonOptions = []Option{
	{Key: "enabled", Help: "fetch this provider on refresh and in the daemon", Default: "false (static: true when files are set)"},
	{Key: "regions", Help: "regions to price; empty means the provider's default set"},
	{Key: "schedule", Help: "cron spec or descriptor (@every 30m) for the daemon; falls back to [refresh] schedule"},
	{Key: "endpoint", Help: "base URL that receives every API call of this provider (proxy, mirror, emulator, test server)"},
	{Key: "timeout", Help: "per-refresh timeout for this provider; falls back to [refresh] timeout", Default: "10m"},
}

// Descriptor is how an adapter presents itself (rclone's backend registration idea,
// without init() magic: the list of descriptors is explicit, in package registry).
type Descriptor struct {
	Name        string
	Description string
	// Options are the provider-specific keys, in addition to CommonOptions.
	Options []Option
	// Needs is what a refresh asks of the user (a key, an account, nothing), for
	// `picker providers`.
	Needs Needs
	// Config is the zero value of the adapter's Config type: the config package decodes
	// [providers.NAME] into a value of this type, strictly, and hands it to New.
	Config Section
	// New builds the provider from its config section, which is the adapter's own
	// Config type (a value, not a pointer); a wrong type is a programming error.
	New func(cfg any) (Provider, error)
}

// What a provider's refresh needs (Needs.Kind).
const (
	NeedsNothing     = "none"         // a public price list
	NeedsKey         = "api key"      // a key in the environment variable api_key_env names
	NeedsOptionalKey = "optional key" // works without; a key is sent when the variable is set
	NeedsAccount     = "account"      // cloud account credentials (an SDK's chain)
	NeedsFiles       = "files"        // the user's own price files
)

// Needs says what a provider's refresh asks of its user, so `picker providers` can
// tell which adapters work as they are and which want a key, and from where.
type Needs struct {
	// Kind is one of the Needs* constants.
	Kind string
	// KeyEnv is api_key_env's default: the environment variable read for the key.
	KeyEnv string
	// Where says where to get the key or the account ("Fluidstack console, API keys").
	Where string
}

// WithKeyEnv returns n naming env as the key's variable when env is set and n reads a
// key at all: the variable a section's api_key_env chose over the default.
func (n Needs) WithKeyEnv(env string) Needs {
	if env != "" && n.KeyEnv != "" {
		n.KeyEnv = env
	}
	return n
}

// String is the short form `picker providers` shows: "none", "api key $LAMBDA_API_KEY",
// "optional key $RUNPOD_API_KEY", "account (AWS credential chain)".
func (n Needs) String() string {
	s := n.Kind
	if n.KeyEnv != "" {
		s += " $" + n.KeyEnv
	}
	if n.Kind == NeedsAccount && n.Where != "" {
		s += " (" + n.Where + ")"
	}
	return s
}

// AllOptions returns CommonOptions followed by the descriptor's own options.
func (d Descriptor) AllOptions() []Option {
	return append(append([]Option(nil), CommonOptions...), d.Options...)
}

// Duration is a time.Duration that TOML reads from strings such as "10m", "1h30m" or
// "7d" (a whole number of days, which Go's syntax lacks and retention settings need).
type Duration struct{ time.Duration }

// maxDays is the most days a Duration holds: time.Duration counts nanoseconds in an
// int64, about 292 years; 213504d would wrap to a few minutes.
const maxDays = int64(math.MaxInt64 / int64(24*time.Hour))

// ParseDuration accepts Go duration syntax plus "Nd" for N days. A day count too large
// for a time.Duration is an error, never a wrapped value.
func ParseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.ParseInt(n, 10, 64); err == nil && days >= 0 {
			if days > maxDays {
				return 0, fmt.Errorf("duration %q: more than %d days overflows", s, maxDays)
			}
			return time.Duration(days) * 24 * time.Hour, nil
		} else if err != nil && errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("duration %q: more than %d days overflows", s, maxDays)
		}
	}
	return time.ParseDuration(s)
}

// UnmarshalText parses a duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		if strings.Contains(err.Error(), "overflow") || strings.Contains(err.Error(), "out of range") {
			return fmt.Errorf("bad duration %q: too large (at most %dd)", b, maxDays)
		}
		return fmt.Errorf("bad duration %q (want e.g. \"90s\", \"10m\", \"1h\", \"7d\")", b)
	}
	if v < 0 {
		return fmt.Errorf("bad duration %q: negative", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration back in Go syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Constructor adapts an adapter's typed constructor to Descriptor.New: it accepts the
// adapter's Config by value or by pointer and reports any other type as a programming
// error naming the adapter, so every adapter's descriptor is one line.
func Constructor[C any, P Provider](name string, ctor func(C) (P, error)) func(any) (Provider, error) {
	return func(cfg any) (Provider, error) {
		var c C
		switch v := cfg.(type) {
		case C:
			c = v
		case *C:
			if v != nil {
				c = *v
			}
		default:
			return nil, pricing.Errorf(pricing.Internal, "%s: config has type %T, want %T", name, cfg, c)
		}
		p, err := ctor(c)
		if err != nil {
			return nil, err // not a typed nil inside a non-nil interface
		}
		return p, nil
	}
}

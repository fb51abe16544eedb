// Package static reads a user's own price files: contract prices, on-prem GPUs, a
// private cloud. Files are CSV with the embedded snapshot's columns or TOML with an
// [[offers]] array; every offer is stored under the provider name "static" so a refresh
// of the files replaces exactly what the files said before.
package static

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// Name is the provider name every static offer carries.
const Name = "static"

// Config is the [providers.static] section.
type Config struct {
	providers.Common
	// Files are CSV (.csv) or TOML (.toml) price files; a leading ~ is the home directory.
	Files []string `toml:"files"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name:        Name,
	Description: "your own price files (CSV with the snapshot's columns, or TOML [[offers]])",
	Options: []providers.Option{
		{Key: "files", Help: "price files to read: .csv (snapshot columns) or .toml ([[offers]] tables)"},
	},
	Needs:  providers.Needs{Kind: providers.NeedsFiles, Where: "[providers.static] files"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c), nil }),
}

// Provider reads the configured files on every Fetch.
type Provider struct {
	files []string
}

// New returns a provider over cfg.Files.
func New(cfg Config) *Provider { return &Provider{files: cfg.Files} }

// Fetch reads every file. Any malformed file fails the whole fetch (naming the file and
// line), so a typo never silently closes the offers of a file that used to parse.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if len(p.files) == 0 {
		return nil, pricing.Errorf(pricing.Invalid, "static: no files configured ([providers.static] files = [...])")
	}
	snap := &providers.Snapshot{}
	seen := map[pricing.Key]string{}
	tr := providers.NewTracker(ctx, "files", len(p.files))
	for _, f := range p.files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("static: %w", err)
		}
		offers, err := ReadFileContext(ctx, expandHome(f))
		if err != nil {
			return nil, err
		}
		for _, o := range offers {
			if prev, dup := seen[o.Key()]; dup {
				return nil, pricing.Errorf(pricing.Invalid, "static: %s: offer %s is also in %s", f, o.Key(), prev)
			}
			seen[o.Key()] = f
			if _, ok := pricing.LookupGPU(o.GPUModel); !ok {
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("%s: unknown GPU %q kept as is", f, o.GPUModel))
			}
			snap.Offers = append(snap.Offers, o)
		}
		tr.Done(f, len(offers))
	}
	// ReadFile already refused invalid rows and the loop duplicate keys, both as errors
	// naming the file (a user's file is fixed, not skipped); Finalize is the shared
	// contract step every adapter's offers pass.
	var warn []string
	snap.Offers, warn = providers.Finalize(Name, snap.Offers)
	snap.Warnings = append(snap.Warnings, warn...)
	if len(snap.Offers) == 0 {
		return nil, pricing.Errorf(pricing.Invalid, "static: the files %s hold no offers", strings.Join(p.files, ", "))
	}
	return snap, nil
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	return p
}

// ReadFile is ReadFileContext without a deadline.
func ReadFile(path string) ([]pricing.Offer, error) {
	return ReadFileContext(context.Background(), path)
}

// MaxFileBytes caps one price file: a file this large is a mistake (a log, a disk
// image), not a price list.
const MaxFileBytes = 64 << 20

// readRegular reads a regular file within ctx. A FIFO, device, socket or directory is
// refused before it is opened (opening a FIFO blocks until a writer appears, past any
// timeout and signal); the open and read run beside ctx, so a stalled file (a hung
// network mount) ends at the refresh timeout too.
func readRegular(ctx context.Context, path string) ([]byte, time.Time, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, time.Time{}, fmt.Errorf("%s: not a regular file (%s); price files must be regular files", path, fileKind(fi.Mode()))
	}
	type result struct {
		b   []byte
		mod time.Time
		err error
	}
	ch := make(chan result, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err == nil && !fi.Mode().IsRegular() { // swapped after the first check
			err = fmt.Errorf("%s: not a regular file (%s)", path, fileKind(fi.Mode()))
		}
		var b []byte
		if err == nil {
			b, err = io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
		}
		if err == nil && len(b) > MaxFileBytes {
			err = fmt.Errorf("%s: larger than %d MiB; price files are small", path, MaxFileBytes>>20)
		}
		var mod time.Time
		if fi != nil {
			mod = fi.ModTime()
		}
		ch <- result{b, mod, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.mod, r.err
	case <-ctx.Done():
		return nil, time.Time{}, fmt.Errorf("%s: reading stopped: %w", path, ctx.Err())
	}
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// ReadFileContext parses one price file by its extension. Offers observed-at defaults
// to the file's modification time: the user last stated these prices then.
func ReadFileContext(ctx context.Context, path string) ([]pricing.Offer, error) {
	b, modTime, err := readRegular(ctx, path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, pricing.Errorf(pricing.Unavailable, "static: %w", err)
		}
		return nil, pricing.Errorf(pricing.Invalid, "static: %w", err)
	}
	mod := modTime.UTC().Truncate(time.Second)
	var offers []pricing.Offer
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		offers, err = pricing.ParseOffersCSV(bytes.NewReader(b), path, mod)
	case ".toml":
		offers, err = parseTOML(b, path, mod)
	default:
		return nil, pricing.Errorf(pricing.Invalid, "static: %s: unknown file type (want .csv or .toml)", path)
	}
	if err != nil {
		return nil, err
	}
	for i := range offers {
		offers[i].Provider = Name
		offers[i].Source = pricing.SourceFile
		if err := offers[i].Validate(); err != nil {
			return nil, pricing.Errorf(pricing.Invalid, "static: %s: %w", path, err)
		}
		if obs := offers[i].ObservedAt; obs.After(time.Now().Add(futureSlack)) {
			return nil, pricing.Errorf(pricing.Invalid, "static: %s: offer %s observed %s is in the future", path, offers[i].Key(), obs.Format(time.RFC3339))
		}
	}
	return offers, nil
}

// tomlFile is the TOML price-file format:
//
//	[[offers]]
//	region = "on-prem"
//	instance_type = "dgx-a100"
//	gpu_model = "A100-80GB"
//	gpu_count = 8
//	price_usd_hr = 12.5
type tomlFile struct {
	Offers []tomlOffer `toml:"offers"`
}

type tomlOffer struct {
	Region       string  `toml:"region"`
	Zone         string  `toml:"zone"`
	InstanceType string  `toml:"instance_type"`
	GPUModel     string  `toml:"gpu_model"`
	GPUCount     float64 `toml:"gpu_count"`
	GPUMemGiB    float64 `toml:"gpu_mem_gib"` // optional: the GPU catalog's figure when 0
	VCPUs        float64 `toml:"vcpus"`
	RAMGiB       float64 `toml:"ram_gib"`
	PriceUSDHr   float64 `toml:"price_usd_hr"`
	SpotUSDHr    float64 `toml:"spot_price_usd_hr"`
	// Observed is a TOML date or date-time (observed = 2026-11-29) or a string
	// ("2026-11-29", RFC 3339); the file's mtime when absent.
	Observed any `toml:"observed"`
	// Host facts, optional (pricing.HostCSVColumns): a marketplace host's.
	Reliability  float64 `toml:"reliability"`
	MaxCUDA      float64 `toml:"max_cuda"`
	Driver       string  `toml:"driver"`
	NetUpMbps    float64 `toml:"net_up_mbps"`
	NetDownMbps  float64 `toml:"net_down_mbps"`
	DiskGB       float64 `toml:"disk_gb"`
	Verification string  `toml:"verification"`
}

func parseTOML(b []byte, path string, mod time.Time) ([]pricing.Offer, error) {
	var f tomlFile
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, pricing.Errorf(pricing.Invalid, "static: %s", providers.TOMLErrorString(path, err))
	}
	var out []pricing.Offer
	lines := tableLines(b, "offers")
	for i, t := range f.Offers {
		where := fmt.Sprintf("%s: offers[%d]", path, i)
		if i < len(lines) {
			where = fmt.Sprintf("%s:%d", path, lines[i])
		}
		if t.InstanceType == "" || t.GPUModel == "" {
			return nil, pricing.Errorf(pricing.Invalid, "static: %s: instance_type and gpu_model are required", where)
		}
		if t.PriceUSDHr <= 0 && t.SpotUSDHr <= 0 {
			return nil, pricing.Errorf(pricing.Invalid, "static: %s (%s): price_usd_hr or spot_price_usd_hr must be positive", where, t.InstanceType)
		}
		model, _ := pricing.NormalizeGPU(t.GPUModel, t.GPUMemGiB)
		mem := t.GPUMemGiB
		if mem == 0 {
			g, ok := pricing.LookupGPU(model)
			if !ok {
				return nil, pricing.Errorf(pricing.Invalid, "static: %s (%s): unknown GPU %q (known: see 'picker gpus'); fix the name or give gpu_mem_gib for a GPU picker does not know", where, t.InstanceType, t.GPUModel)
			}
			mem = g.MemGB
		}
		obs, err := observedAt(t.Observed, mod)
		if err != nil {
			return nil, pricing.Errorf(pricing.Invalid, "static: %s (%s): observed %v: want a date (2026-11-29) or an RFC 3339 time (%v)", where, t.InstanceType, t.Observed, err)
		}
		if obs.After(time.Now().Add(futureSlack)) {
			return nil, pricing.Errorf(pricing.Invalid, "static: %s (%s): observed %s is in the future", where, t.InstanceType, obs.Format(time.RFC3339))
		}
		stated := pricing.Host{Reliability: t.Reliability, MaxCUDA: t.MaxCUDA, Driver: t.Driver,
			NetUpMbps: t.NetUpMbps, NetDownMbps: t.NetDownMbps, DiskGB: t.DiskGB, Verification: t.Verification}
		host, col, want := pricing.CheckHost(stated)
		if col != "" {
			return nil, pricing.Errorf(pricing.Invalid, "static: %s (%s): %s %v: %s", where, t.InstanceType, col, hostValue(stated, col), want)
		}
		base := pricing.Offer{Region: t.Region, Zone: t.Zone, InstanceType: t.InstanceType, GPUModel: model,
			GPUCount: t.GPUCount, GPUMemGiB: mem, VCPUs: t.VCPUs, RAMGiB: t.RAMGiB, Currency: "USD", ObservedAt: obs, Host: host}
		if base.GPUCount == 0 {
			base.GPUCount = 1
		}
		for _, p := range []struct {
			purchase pricing.Purchase
			price    float64
		}{{pricing.OnDemand, t.PriceUSDHr}, {pricing.Spot, t.SpotUSDHr}} {
			if p.price > 0 {
				o := base
				o.Purchase, o.PriceUSDHr = p.purchase, p.price
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// futureSlack allows for clock skew between the machine that wrote a price file and this
// one; an observation further in the future is a typo.
const futureSlack = 10 * time.Minute

// tableLines returns the 1-based line of every [[name]] array-of-tables header in a TOML
// file, in order, so errors about the i-th entry name its line.
func tableLines(b []byte, name string) []int {
	var out []int
	for i, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "[["+name+"]]" {
			out = append(out, i+1)
		}
	}
	return out
}

// observedAt reads the observed key: a native TOML date, date-time or local date-time
// (taken as UTC), or a string; absent means def.
func observedAt(v any, def time.Time) (t time.Time, err error) {
	defer func() {
		if err == nil && v != nil && v != "" {
			err = pricing.CheckObservedDate(t) // year 1 is no "unstated"
		}
	}()
	switch t := v.(type) {
	case nil:
		return def, nil
	case time.Time:
		return t.UTC(), nil
	case toml.LocalDate:
		return t.AsTime(time.UTC), nil
	case toml.LocalDateTime:
		return t.AsTime(time.UTC), nil
	case string:
		if t == "" {
			return def, nil
		}
		return parseDate(t)
	}
	return time.Time{}, fmt.Errorf("not a date")
}

func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t.UTC(), nil
	}
	return time.Parse(time.RFC3339, s)
}

// DefaultEnabled: listing files is the intent to use them, so a section with files and
// no enabled key is enabled.
func (c Config) DefaultEnabled() bool { return len(c.Files) > 0 }

// hostValue is the value of h's fact in column col (pricing.HostCSVColumns), for an error.
func hostValue(h pricing.Host, col string) any {
	return map[string]any{"reliability": h.Reliability, "max_cuda": h.MaxCUDA, "driver": h.Driver, "net_up_mbps": h.NetUpMbps,
		"net_down_mbps": h.NetDownMbps, "disk_gb": h.DiskGB, "verification": h.Verification}[col]
}

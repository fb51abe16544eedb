package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/store"
)

// billOptions are recommend's all-in bill and spot-risk flags (issue 24): the dataset on
// the job's disk, what it uploads, the checkpoint interval and a mean time between spot
// interruptions that overrides the stored bands.
type billOptions struct {
	DatasetGB       float64
	UploadGB        *float64
	CheckpointEvery time.Duration
	SpotMTBI        time.Duration
}

func (b *billOptions) params() []param {
	return []param{
		{name: "dataset-gb", kind: kindFloat, usage: "the dataset on the job's disk, GB (the disk also holds the weights and two checkpoints)", set: nonNegative("dataset-gb", &b.DatasetGB)},
		{name: "upload-gb", kind: kindFloat, usage: "data the job uploads out, GB, priced at the provider's egress (default: a training job's trained weights in 16 bits)",
			set: func(v string) error {
				var u float64
				if err := nonNegative("upload-gb", &u)(v); err != nil {
					return err
				}
				b.UploadGB = &u
				return nil
			}},
		{name: "checkpoint-every", typ: "duration", usage: "spot: checkpoint this often, e.g. 30m (default: the Young/Daly optimum for the checkpoint's write time and the interruption band)",
			set: positiveDuration("checkpoint-every", &b.CheckpointEvery)},
		{name: "spot-mtbi", typ: "duration", usage: "spot: mean time between interruptions, e.g. 20h, instead of the provider's interruption band",
			set: positiveDuration("spot-mtbi", &b.SpotMTBI)},
	}
}

// positiveDuration parses a positive duration flag (parseDuration: "90m", "6h" or hours).
func positiveDuration(name string, dst *time.Duration) func(string) error {
	return func(v string) error {
		d, err := parseDuration(name, v)
		if err == nil && d <= 0 {
			err = pricing.Errorf(pricing.Invalid, "--%s %q: want a positive duration such as 30m", name, v)
		}
		*dst = d
		return err
	}
}

// apply sets the flags and the stored spot bands and storage prices on in.
func (b *billOptions) apply(ctx context.Context, st offerStore, in *recommend.RecommendInput) error {
	in.DatasetGB, in.UploadGB, in.CheckpointEvery, in.SpotMTBI = b.DatasetGB, b.UploadGB, b.CheckpointEvery, b.SpotMTBI
	ms, ok := st.(marketReader)
	if !ok {
		return nil
	}
	var err error
	if in.SpotBands, err = ms.SpotBands(ctx); err != nil {
		return err
	}
	in.StoragePrices, err = ms.StoragePrices(ctx)
	return err
}

// marketReader is a store that keeps spot bands and storage prices (store.Store).
type marketReader interface {
	SpotBands(ctx context.Context) ([]pricing.SpotBand, error)
	StoragePrices(ctx context.Context) ([]pricing.StoragePrice, error)
}

// billKey is the part of the memo key (recmemo.go) the bill flags decide. The stored
// bands and prices move the store's data version with the offers they land beside.
func billKey(in recommend.RecommendInput) string {
	up := "default"
	if in.UploadGB != nil {
		up = fmt.Sprint(*in.UploadGB)
	}
	return fmt.Sprintf("|bill %g %s %s %s", in.DatasetGB, up, in.CheckpointEvery, in.SpotMTBI)
}

// writeBill says how the top offer's job cost adds up, what its provider keeps billing
// once it stops, and how spot compares, expected restarts included; -v adds the bill's
// assumptions (on stderr, with the estimate's).
func writeBill(s *IOStreams, r *recommend.Recommendation) {
	if len(r.Offers) == 0 || r.Offers[0].Bill == nil || r.Offers[0].EstCostUSD == nil {
		return
	}
	w := s.Out
	if s.Verbose {
		for _, a := range r.BillAssumptions {
			fmt.Fprintln(s.ErrOut, "assumption:", a)
		}
	}
	f := r.Offers[0]
	b := f.Bill
	parts := []string{fmt.Sprintf("compute %s (boot %s", usd(b.ComputeUSD), usd(b.BootUSD))}
	if f.SpotRisk != nil {
		parts[0] += fmt.Sprintf(", expected spot restarts %s", usd(b.RestartUSD))
	}
	parts[0] += ")"
	disk := "included"
	if !b.DiskIncluded {
		disk = fmt.Sprintf("%s (%.0f GiB %s)", usd(b.DiskUSD), b.DiskGiB, b.DiskProduct)
	}
	parts = append(parts, "disk "+disk, fmt.Sprintf("egress %s (%.1f GB)", usd(b.EgressUSD), b.UploadGB))
	fmt.Fprintf(w, "job $ of %s %s: %s = %s\n", f.Provider, f.InstanceType, usd(*f.EstCostUSD), strings.Join(parts, " + "))
	if s := f.SpotRisk; s != nil {
		every := "no checkpoint needed"
		if s.CheckpointEveryHours != nil {
			every = fmt.Sprintf("checkpoint every %s", formatHours(*s.CheckpointEveryHours))
		}
		fmt.Fprintf(w, "spot: %s interruption band (%s), mean %s between interruptions, %s: %.2f interruptions expected\n",
			s.Band, bandSource(s), formatHours(s.MTBIHours), every, s.ExpectedInterruptions)
	}
	if b.Stopped != "" {
		fmt.Fprintln(w, "note:", b.Stopped)
	}
	if sv := r.SpotSaving; sv != nil {
		fmt.Fprintln(w, sv.Statement)
	}
}

// bandSource is where a band came from, short: the source, or that it is a default.
func bandSource(s *recommend.SpotRisk) string {
	if s.Default {
		return "default: " + s.Source
	}
	return s.Source
}

// formatHours is a duration in hours as a person reads it: "45m", "3.2h", "41d".
func formatHours(h float64) string {
	switch {
	case h < 1:
		return fmt.Sprintf("%.0fm", h*60)
	case h < 48:
		return fmt.Sprintf("%.1fh", h)
	}
	return fmt.Sprintf("%.0fd", h/24)
}

// marketRow is `picker providers`' view of a provider's spot bands and storage prices:
// how many are stored, the newest good read and its age, the last read's failures.
type marketRow struct {
	SpotBands     int        `json:"spot_bands"`
	StoragePrices int        `json:"storage_prices"`
	LastOK        *time.Time `json:"last_ok,omitempty"`
	Attempted     time.Time  `json:"attempted"`
	Age           string     `json:"age,omitempty"`
	Error         string     `json:"error,omitempty"`
	Requests      int        `json:"requests"`
}

// addMarketRows fills the rows' spot_storage column from st (nothing from a store that
// keeps no market data).
func (a *app) addMarketRows(ctx context.Context, st any, rows []providerRow) error {
	ms, ok := st.(interface {
		marketReader
		MarketStatuses(ctx context.Context) ([]store.MarketStatus, error)
	})
	if !ok {
		return nil
	}
	sts, err := ms.MarketStatuses(ctx)
	if err != nil || len(sts) == 0 {
		return err
	}
	bands, err := ms.SpotBands(ctx)
	if err != nil {
		return err
	}
	prices, err := ms.StoragePrices(ctx)
	if err != nil {
		return err
	}
	now := a.now()
	for i := range rows {
		for _, m := range sts {
			if m.Provider != rows[i].Name {
				continue
			}
			r := &marketRow{Attempted: m.Attempted, Error: a.redactor().String(m.Error), Requests: m.Requests}
			if !m.LastOK.IsZero() {
				t := m.LastOK
				r.LastOK, r.Age = &t, formatAge(now.Sub(t))
			}
			for _, b := range bands {
				if b.Provider == m.Provider {
					r.SpotBands++
				}
			}
			for _, p := range prices {
				if p.Provider == m.Provider {
					r.StoragePrices++
				}
			}
			rows[i].Market = r
		}
	}
	return nil
}

// writeMarketLines prints, under the providers table, a line per provider with spot or
// storage data: "spot/storage: aws: 12 spot bands, 2 storage prices, read 3 h ago".
func writeMarketLines(w io.Writer, rows []providerRow) {
	for _, r := range rows {
		m := r.Market
		if m == nil {
			continue
		}
		line := fmt.Sprintf("spot/storage: %s: %d spot bands, %d storage prices", r.Name, m.SpotBands, m.StoragePrices)
		if m.LastOK == nil {
			line += ", never read well"
		} else {
			line += ", read " + m.Age + " ago"
		}
		if m.Error != "" {
			line += fmt.Sprintf("; the last read, %s, failed in part, the last good data kept: %s", m.Attempted.UTC().Format(time.RFC3339), oneLine(m.Error))
		}
		fmt.Fprintln(w, line)
	}
}

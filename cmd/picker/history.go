package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// historyOptions is `picker history` (the MCP tool history): which offers' prices.
type historyOptions struct {
	hq    store.HistoryQuery
	provs []string
}

// params declares history's flags: --provider, --instance-type, --region, --gpu-model,
// --purchase.
func (o *historyOptions) params() []param {
	text := func(dst *string) func(string) error {
		return func(v string) error { *dst = v; return nil }
	}
	return []param{
		providerParam(&o.provs, "the offer's provider; with --gpu-model, only its offers"),
		{name: "instance-type", usage: "instance type (required)", set: text(&o.hq.InstanceType)},
		{name: "region", usage: "region (default: all)", set: text(&o.hq.Region)},
		{name: "gpu-model", usage: "every offer of this GPU model (instead of --provider and --instance-type)", set: text(&o.hq.GPUModel)},
		purchaseParam(&o.hq.Purchase, "any"),
	}
}

// historyQuery binds l and checks it: the history query the flags ask for.
func (a *app) historyQuery(ctx context.Context, o *historyOptions, l Lookup) (store.HistoryQuery, error) {
	if err := BindParams(o.params(), l); err != nil {
		return store.HistoryQuery{}, err
	}
	hq := o.hq
	if len(o.provs) > 1 {
		return hq, pricing.ParamErrorf(pricing.Invalid, "provider", "--provider %q: history shows one provider's prices; give one", strings.Join(o.provs, ","))
	}
	if len(o.provs) == 1 {
		hq.Provider = o.provs[0]
	}
	if (hq.Provider == "" || hq.InstanceType == "") && hq.GPUModel == "" {
		return hq, usageError{fmt.Errorf("history needs --provider and --instance-type, or --gpu-model")}
	}
	if hq.GPUModel != "" {
		canon, err := canonicalGPU(hq.GPUModel)
		if err != nil {
			return hq, err
		}
		hq.GPUModel = canon
	}
	return hq, a.checkProviderFlag(ctx, o.provs)
}

func (a *app) historyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show an offer's price over time, one row per change",
		Example: `  picker history --provider aws --instance-type p4d.24xlarge --region us-east-1
  picker history --gpu-model H100 --purchase spot -o csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			hq, err := a.historyQuery(cmd.Context(), &historyOptions{}, FlagLookup(cmd.Flags()))
			if err != nil {
				return err
			}
			return a.runHistory(cmd.Context(), hq)
		},
	}
	registerParams(cmd.Flags(), (&historyOptions{}).params())
	return cmd
}

// historyRow is the JSON shape of one price interval.
type historyRow struct {
	Provider     string     `json:"provider"`
	Region       string     `json:"region"`
	Zone         string     `json:"zone"`
	InstanceType string     `json:"instance_type"`
	Purchase     string     `json:"purchase"`
	ValidFrom    time.Time  `json:"valid_from"`
	ValidTo      *time.Time `json:"valid_to"`
	PriceUSDHr   float64    `json:"price_usd_hr"`
}

// RunHistory returns every stored price interval of the offers hq names, oldest
// first: what `picker history` prints and the web page charts.
func (a *app) RunHistory(ctx context.Context, hq store.HistoryQuery) ([]store.PricePoint, error) {
	st, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	return st.History(ctx, hq)
}

// historyRows are history's JSON rows.
func historyRows(points []store.PricePoint) []historyRow {
	rows := make([]historyRow, len(points))
	for i, p := range points {
		rows[i] = historyRow{p.Provider, p.Region, p.Zone, p.InstanceType, string(p.Purchase), p.ValidFrom.UTC(), p.ValidTo, p.PriceUSDHr}
		if p.ValidTo != nil {
			t := p.ValidTo.UTC()
			rows[i].ValidTo = &t
		}
	}
	return rows
}

func (a *app) runHistory(ctx context.Context, hq store.HistoryQuery) error {
	points, err := a.RunHistory(ctx, hq)
	if err != nil {
		return err
	}
	rows := historyRows(points)
	switch a.output {
	case "json":
		return writeJSON(a.stdout, rows)
	case "csv":
		recs := make([][]string, len(rows))
		for i, r := range rows {
			ss := pricing.SpreadsheetSafe // provider text: a leading = + - @ is not a formula
			recs[i] = []string{ss(r.Provider), ss(r.Region), ss(r.Zone), ss(r.InstanceType), r.Purchase, r.ValidFrom.Format(time.RFC3339), fmtOptTime(r.ValidTo, ""), num(r.PriceUSDHr, 6)}
		}
		return writeCSV(a.stdout, []string{"provider", "region", "zone", "instance_type", "purchase", "valid_from", "valid_to", "price_usd_hr"}, recs)
	}
	if hq.GPUModel != "" {
		return writeModelHistory(a.stdout, a.tty, points)
	}
	t := &table{headers: []string{"REGION", "PURCHASE", "VALID FROM", "VALID TO", "$/HR"}}
	for _, r := range rows {
		t.add(place(r.Region, r.Zone), r.Purchase, r.ValidFrom.Format(time.RFC3339), fmtOptTime(r.ValidTo, "current"), usd(r.PriceUSDHr))
	}
	return t.write(a.stdout, a.tty)
}

// writeModelHistory is the table of `picker history --gpu-model`: every offer of the
// model, so each row names its provider and instance, and the rows are grouped by
// offer (oldest change first within one). Ordered by time alone, as JSON is, rows of
// different providers interleave and read as one price falling or rising when they
// are only offers first seen on different days (the embedded snapshot dates each
// provider by its source). $/GPU-H compares instances of different sizes.
func writeModelHistory(w io.Writer, tty bool, points []store.PricePoint) error {
	points = slices.Clone(points)
	slices.SortStableFunc(points, func(a, b store.PricePoint) int {
		return cmp.Or(strings.Compare(a.Provider, b.Provider), strings.Compare(a.Region, b.Region), strings.Compare(a.Zone, b.Zone),
			strings.Compare(a.InstanceType, b.InstanceType), strings.Compare(string(a.Purchase), string(b.Purchase)), a.ValidFrom.Compare(b.ValidFrom))
	})
	t := &table{headers: []string{"PROVIDER", "REGION", "INSTANCE", "GPUS", "PURCHASE", "VALID FROM", "VALID TO", "$/HR", "$/GPU-H"}}
	for _, p := range points {
		perGPU := "-"
		if p.GPUCount > 0 {
			perGPU = usd(p.PriceUSDHr / p.GPUCount)
		}
		t.add(p.Provider, place(p.Region, p.Zone), p.InstanceType, num(p.GPUCount, 3), string(p.Purchase), p.ValidFrom.UTC().Format(time.RFC3339),
			fmtOptTime(p.ValidTo, "current"), usd(p.PriceUSDHr), perGPU)
	}
	return t.write(w, tty)
}

// place is a region with its zone, "us-east-1 (us-east-1a)".
func place(region, zone string) string {
	if zone != "" {
		return region + " (" + zone + ")"
	}
	return region
}

func fmtOptTime(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// gpuRow is one GPU model with its cheapest whole-GPU prices per provider.
type gpuRow struct {
	pricing.GPU
	Providers []gpuProviderPrice `json:"providers"`
	// Cheapest prices per GPU-hour over every provider; nil when none is offered.
	CheapestOnDemand *float64 `json:"cheapest_on_demand_usd_gpu_hr"`
	CheapestSpot     *float64 `json:"cheapest_spot_usd_gpu_hr"`
}

// gpuProviderPrice is a provider's cheapest price per GPU-hour for one GPU model, over
// whole-GPU offers (fractional slices are priced per slice and would mislead here).
type gpuProviderPrice struct {
	Provider string   `json:"provider"`
	OnDemand *float64 `json:"on_demand_usd_gpu_hr"`
	Spot     *float64 `json:"spot_usd_gpu_hr"`
}

func (a *app) gpusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gpus",
		Short: "List every GPU model with its memory and cheapest on-demand and spot price per provider",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runGPUs(cmd.Context())
		},
	}
}

func (a *app) runGPUs(ctx context.Context) error {
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	offers, err := st.Offers(ctx, store.Query{ExcludeFractional: true})
	if err != nil {
		return err
	}
	rows := gpuRows(offers)
	switch a.output {
	case "json":
		return writeJSON(a.stdout, rows)
	case "csv":
		var recs [][]string
		for _, r := range rows {
			for _, p := range r.Providers {
				recs = append(recs, []string{pricing.SpreadsheetSafe(r.Model), num(r.MemGB, 1), num(r.UsableGiB, 2), r.Architecture, fmt.Sprint(r.SupportsBF16), p.Provider, optUSD(p.OnDemand, ""), optUSD(p.Spot, "")})
			}
			if len(r.Providers) == 0 {
				recs = append(recs, []string{pricing.SpreadsheetSafe(r.Model), num(r.MemGB, 1), num(r.UsableGiB, 2), r.Architecture, fmt.Sprint(r.SupportsBF16), "", "", ""})
			}
		}
		return writeCSV(a.stdout, []string{"gpu_model", "memory_gb", "usable_gib", "architecture", "supports_bf16", "provider", "on_demand_usd_gpu_hr", "spot_usd_gpu_hr"}, recs)
	}
	t := &table{headers: []string{"GPU", "GB", "USABLE GiB", "ARCH", "BF16", "CHEAPEST $/GPU-HR", "SPOT $/GPU-HR", "ON-DEMAND / SPOT PER PROVIDER ($/GPU-HR)"}}
	for _, r := range rows {
		var parts []string
		for _, p := range r.Providers {
			parts = append(parts, fmt.Sprintf("%s %s/%s", p.Provider, optUSD(p.OnDemand, "-"), optUSD(p.Spot, "-")))
		}
		bf16 := "no"
		if r.SupportsBF16 {
			bf16 = "yes"
		}
		t.add(r.Model, num(r.MemGB, 0), num(r.UsableGiB, 1), r.Architecture, bf16, optUSD(r.CheapestOnDemand, "-"), optUSD(r.CheapestSpot, "-"), strings.Join(parts, ", "))
	}
	return t.write(a.stdout, a.tty)
}

func optUSD(v *float64, none string) string {
	if v == nil {
		return none
	}
	return usd(*v)
}

// gpuRows builds one row per catalog GPU (plus any unknown model seen in offers), with
// the cheapest per-GPU price per provider and purchase.
func gpuRows(offers []pricing.Offer) []gpuRow {
	byModel := map[string]map[string]*gpuProviderPrice{}
	for _, o := range offers {
		if o.Fractional() || o.GPUCount <= 0 {
			continue
		}
		pp := byModel[o.GPUModel]
		if pp == nil {
			pp = map[string]*gpuProviderPrice{}
			byModel[o.GPUModel] = pp
		}
		p := pp[o.Provider]
		if p == nil {
			p = &gpuProviderPrice{Provider: o.Provider}
			pp[o.Provider] = p
		}
		per := o.PricePerGPU()
		dst := &p.OnDemand
		if o.Purchase == pricing.Spot {
			dst = &p.Spot
		}
		if *dst == nil || per < **dst {
			v := per
			*dst = &v
		}
	}
	var rows []gpuRow
	gpus := pricing.GPUs()
	for model := range byModel {
		if _, ok := pricing.LookupGPU(model); !ok {
			gpus = append(gpus, pricing.GPU{Model: model, Architecture: "unknown"})
		}
	}
	for _, g := range gpus {
		r := gpuRow{GPU: g, Providers: []gpuProviderPrice{}}
		for _, p := range byModel[g.Model] {
			r.Providers = append(r.Providers, *p)
			r.CheapestOnDemand = minPtr(r.CheapestOnDemand, p.OnDemand)
			r.CheapestSpot = minPtr(r.CheapestSpot, p.Spot)
		}
		slices.SortFunc(r.Providers, func(x, y gpuProviderPrice) int {
			return cmpPtr(x.OnDemand, y.OnDemand, x.Provider, y.Provider)
		})
		rows = append(rows, r)
	}
	return rows
}

func minPtr(a, b *float64) *float64 {
	if b == nil || (a != nil && *a <= *b) {
		return a
	}
	return b
}

// cmpPtr orders known prices before unknown ones, then by name.
func cmpPtr(a, b *float64, an, bn string) int {
	switch {
	case a != nil && b != nil && *a != *b:
		if *a < *b {
			return -1
		}
		return 1
	case a != nil && b == nil:
		return -1
	case a == nil && b != nil:
		return 1
	}
	return strings.Compare(an, bn)
}

package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// offerFilters are the offer flags shared by offers, export and recommend.
type offerFilters struct {
	gpuModels     []string
	minVRAM       float64
	minTotalVRAM  float64
	providers     []string
	regions       []string
	purchase      string
	maxPrice      float64
	maxGPUs       float64
	sort          string
	withSortFlags bool
}

func (f *offerFilters) register(fs *pflag.FlagSet, purchaseDefault string) {
	fs.StringSliceVar(&f.gpuModels, "gpu-model", nil, "GPU models, comma list (e.g. H100,A100-80GB); see 'picker gpus'")
	fs.StringSliceVar(&f.providers, "provider", nil, "providers, comma list (e.g. aws,lambda)")
	fs.StringSliceVar(&f.regions, "region", nil, "regions, comma list")
	fs.StringVar(&f.purchase, "purchase", purchaseDefault, "on-demand, spot or any")
	fs.Float64Var(&f.maxPrice, "max-price", 0, "highest price in USD per instance-hour")
}

func (f *offerFilters) registerVRAM(fs *pflag.FlagSet) {
	fs.Float64Var(&f.minVRAM, "min-vram", 0, "least GPU memory per GPU, GiB")
	fs.Float64Var(&f.minTotalVRAM, "min-total-vram", 0, "least GPU memory of the whole instance, GiB")
	fs.StringVar(&f.sort, "sort", "price", "price, price-per-gpu or price-per-gib")
	f.withSortFlags = true
}

// query validates the flags and turns them into a store query.
func (f *offerFilters) query() (store.Query, error) {
	q := store.Query{
		Providers:       splitList(f.providers),
		Regions:         splitList(f.regions),
		MinVRAMGiB:      f.minVRAM,
		MinTotalVRAMGiB: f.minTotalVRAM,
		MaxPriceUSDHr:   f.maxPrice,
		MaxGPUs:         f.maxGPUs,
		Sort:            store.Sort(f.sort),
	}
	for _, g := range splitList(f.gpuModels) {
		canon, err := canonicalGPU(g)
		if err != nil {
			return q, err
		}
		q.GPUModels = append(q.GPUModels, canon)
	}
	switch f.purchase {
	case "any", "":
	default:
		p, err := pricing.ParsePurchase(f.purchase)
		if err != nil {
			return q, pricing.Errorf(pricing.Invalid, "--purchase %q: want on-demand, spot or any", f.purchase)
		}
		q.Purchase = p
	}
	for name, v := range map[string]float64{"--min-vram": f.minVRAM, "--min-total-vram": f.minTotalVRAM, "--max-price": f.maxPrice} {
		if v < 0 {
			return q, pricing.Errorf(pricing.Invalid, "%s %v: must not be negative", name, v)
		}
	}
	if f.withSortFlags {
		switch f.sort {
		case "price", "price-per-gpu", "price-per-gib":
		default:
			return q, pricing.Errorf(pricing.Invalid, "--sort %q: want price, price-per-gpu or price-per-gib", f.sort)
		}
	}
	return q, nil
}

// canonicalGPU resolves a user's GPU name (any spelling the normalisation table knows)
// to the catalog's name, or fails listing the closest names.
func canonicalGPU(name string) (string, error) {
	if canon, ok := pricing.NormalizeGPU(name, 0); ok {
		return canon, nil
	}
	var names []string
	for _, g := range pricing.GPUs() {
		names = append(names, g.Model)
	}
	return "", pricing.Errorf(pricing.Invalid, "--gpu-model %q: unknown GPU model; closest: %s (see 'picker gpus')", name, strings.Join(closest(name, names, 4), ", "))
}

// closest returns up to n names nearest to s by edit distance (case-insensitive),
// preferring names that contain s.
func closest(s string, names []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	ls := strings.ToLower(s)
	var cs []cand
	for _, name := range names {
		ln := strings.ToLower(name)
		d := levenshtein(ls, ln)
		if strings.Contains(ln, ls) || strings.Contains(ls, ln) {
			d -= len(ls)
		}
		cs = append(cs, cand{name, d})
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (a *app) offersCmd() *cobra.Command {
	var f offerFilters
	var limit int
	cmd := &cobra.Command{
		Use:   "offers",
		Short: "List current GPU instance offers, cheapest first",
		Example: `  picker offers --gpu-model H100
  picker offers --min-vram 40 --purchase spot --sort price-per-gpu -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := f.query()
			if err != nil {
				return err
			}
			q.Limit = limit
			return a.runOffers(cmd.Context(), q)
		},
	}
	f.register(cmd.Flags(), "any")
	f.registerVRAM(cmd.Flags())
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most N offers (0 = all)")
	return cmd
}

func (a *app) runOffers(ctx context.Context, q store.Query) error {
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	offers, err := st.Offers(ctx, q)
	if err != nil {
		return err
	}
	return a.writeOffers(a.stdout, offers)
}

// offerColumns are the CSV/JSON field names of an offer, in CONTRACT order.
var offerColumns = pricing.OfferCSVColumns

func offerCells(o pricing.Offer) []string { return pricing.OfferCSVRecord(o) }

func (a *app) writeOffers(w io.Writer, offers []pricing.Offer) error {
	switch a.output {
	case "json":
		if offers == nil {
			offers = []pricing.Offer{}
		}
		return writeJSON(w, offers)
	case "csv":
		rows := make([][]string, len(offers))
		for i, o := range offers {
			rows[i] = offerCells(o)
		}
		return writeCSV(w, offerColumns, rows)
	}
	if len(offers) == 0 {
		fmt.Fprintln(a.stderr, "no offers match")
		return nil
	}
	t := &table{headers: []string{"PROVIDER", "REGION", "INSTANCE", "GPU", "GPUS", "GiB/GPU", "PURCHASE", "$/HR", "$/GPU-HR", "AGE", "SOURCE"}}
	now := a.now()
	for _, o := range offers {
		region := o.Region
		if o.Zone != "" {
			region += " (" + o.Zone + ")"
		}
		t.add(o.Provider, region, o.InstanceType, o.GPUModel, num(o.GPUCount, 3), num(o.GPUMemGiB, 1), string(o.Purchase),
			usd(o.PriceUSDHr), usd(o.PricePerGPU()), pricing.FormatAge(now.Sub(o.ObservedAt)), o.Source)
	}
	if err := t.write(w, a.tty); err != nil {
		return err
	}
	if a.tty {
		fmt.Fprintf(a.stderr, "%d offers\n", len(offers))
	}
	return nil
}

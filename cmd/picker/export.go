package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

func (a *app) exportCmd() *cobra.Command {
	var f offerFilters
	var format, out string
	ps := f.params("any", true)
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export a comparison table of offers with per-GPU and per-GiB prices",
		Example: `  picker export --format csv --out offers.csv
  picker export --format json --gpu-model A100-80GB,H100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if format, err = exportFormat(cmd, format, a.output); err != nil {
				return err
			}
			if format != "csv" && format != "json" {
				return usageError{fmt.Errorf("--format %q: want csv or json", format)}
			}
			if err := BindParams(ps, FlagLookup(cmd.Flags())); err != nil {
				return err
			}
			return a.runExport(cmd.Context(), f.q, format, out)
		},
	}
	cmd.Flags().StringVar(&format, "format", "csv", "csv or json (-o json or -o csv says the same)")
	cmd.Flags().StringVar(&out, "out", "", "write to this file (atomically) instead of stdout (- is stdout)")
	registerParams(cmd.Flags(), ps)
	return cmd
}

// exportRow is an offer with the comparison columns.
type exportRow struct {
	pricing.Offer
	TotalGPUMemGiB float64 `json:"total_gpu_mem_gib"`
	PerGPU         float64 `json:"price_per_gpu_usd_hr"`
	PerGiB         float64 `json:"price_per_gib_usd_hr"`
	Fractional     bool    `json:"fractional"`
}

func (a *app) runExport(ctx context.Context, q store.Query, format, out string) error {
	if err := checkOutPath(out); out != "" && out != "-" && err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	if err := (&offerFilters{q: q}).checkNames(ctx, st); err != nil {
		return err // as offers refuses a --provider or --region no stored offer has
	}
	offers, err := st.Offers(ctx, q)
	if err != nil {
		return err
	}
	write := func(w io.Writer) error {
		if format == "json" {
			rows := make([]exportRow, len(offers))
			for i, o := range offers {
				rows[i] = exportRow{o, o.TotalGPUMemGiB(), roundTo(o.PricePerGPU(), 6), roundTo(o.PricePerGiB(), 6), o.Fractional()}
			}
			return writeJSON(w, rows)
		}
		return pricing.WriteExportCSV(w, offers)
	}
	if out == "" || out == "-" { // "-" is stdout, as for most Unix tools (issue 30)
		return write(a.stdout)
	}
	if err := writeFileAtomic(out, write); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "wrote %d offers to %s\n", len(offers), out)
	return nil
}

// exportFormat reconciles --format with the global -o: -o csv/json alone sets the format,
// the two given with different values is a usage error, and -o table is not an export
// format.
func exportFormat(cmd *cobra.Command, format, output string) (string, error) {
	o := cmd.Flag("output")
	if o == nil || !o.Changed {
		return format, nil
	}
	if output != "csv" && output != "json" {
		return "", usageError{fmt.Errorf("-o %s: export writes csv or json", output)}
	}
	if cmd.Flags().Changed("format") && format != output {
		return "", usageError{fmt.Errorf("--format %s and -o %s disagree; give one of them", format, output)}
	}
	return output, nil
}

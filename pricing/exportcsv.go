package pricing

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// OfferCSVColumns are the CSV columns of an offer (`picker offers -o csv`), in CONTRACT
// order; OfferCSVRecord renders one offer in them.
var OfferCSVColumns = []string{"provider", "region", "zone", "instance_type", "gpu_model", "gpu_count", "gpu_mem_gib",
	"vcpus", "ram_gib", "purchase", "price_usd_hr", "currency", "observed_at", "source"}

// ExportCSVColumns are `picker export --format csv`'s columns: an offer's columns plus the
// comparison columns. The CLI and the web page's CSV download both write them with
// WriteExportCSV, so the two files are byte for byte the same for the same offers.
var ExportCSVColumns = append(append([]string(nil), OfferCSVColumns...),
	"total_gpu_mem_gib", "price_per_gpu_usd_hr", "price_per_gib_usd_hr", "fractional")

// OfferCSVRecord is o in OfferCSVColumns. Numbers are compact (no trailing zeros) and
// rounded to what the sources carry: prices to 6 decimals, memory to 2.
func OfferCSVRecord(o Offer) []string {
	return []string{o.Provider, o.Region, o.Zone, o.InstanceType, o.GPUModel, FormatNum(o.GPUCount, 4), FormatNum(o.GPUMemGiB, 2),
		FormatNum(o.VCPUs, 2), FormatNum(o.RAMGiB, 2), string(o.Purchase), FormatNum(o.PriceUSDHr, 6), o.Currency,
		o.ObservedAt.UTC().Format("2006-01-02T15:04:05Z"), o.Source}
}

// ExportCSVRecord is o in ExportCSVColumns.
func ExportCSVRecord(o Offer) []string {
	return append(OfferCSVRecord(o), FormatNum(o.TotalGPUMemGiB(), 2), FormatNum(o.PricePerGPU(), 6),
		FormatNum(o.PricePerGiB(), 6), fmt.Sprint(o.Fractional()))
}

// WriteExportCSV writes a header and one ExportCSVRecord per offer, in the given order.
func WriteExportCSV(w io.Writer, offers []Offer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(ExportCSVColumns); err != nil {
		return err
	}
	for _, o := range offers {
		if err := cw.Write(ExportCSVRecord(o)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// FormatNum formats a float compactly: no trailing zeros, at most prec decimals.
func FormatNum(v float64, prec int) string {
	return strconv.FormatFloat(RoundTo(v, prec), 'f', -1, 64)
}

// RoundTo rounds v half away from zero to prec decimals.
func RoundTo(v float64, prec int) float64 {
	p := 1.0
	for range prec {
		p *= 10
	}
	if v < 0 {
		return -float64(int64(-v*p+0.5)) / p
	}
	return float64(int64(v*p+0.5)) / p
}

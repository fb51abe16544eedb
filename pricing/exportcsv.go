package pricing

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
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
// rounded to what the sources carry: prices to 6 decimals, memory to 2. Text is
// SpreadsheetSafe: a provider's string cannot become a formula.
func OfferCSVRecord(o Offer) []string {
	t := SpreadsheetSafe // text columns only (csvsafe.go)
	return []string{t(o.Provider), t(o.Region), t(o.Zone), t(o.InstanceType), t(o.GPUModel), FormatNum(o.GPUCount, 4), FormatNum(o.GPUMemGiB, 2),
		FormatNum(o.VCPUs, 2), FormatNum(o.RAMGiB, 2), t(string(o.Purchase)), FormatNum(o.PriceUSDHr, 6), t(o.Currency),
		o.ObservedAt.UTC().Format("2006-01-02T15:04:05Z"), t(o.Source)}
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

// FormatNum formats a float compactly: no trailing zeros, at most prec decimals. Values
// too large for fixed notation (1e21 and up) use an exponent, never a wrapped integer.
func FormatNum(v float64, prec int) string {
	r := RoundTo(v, prec)
	if math.Abs(r) >= 1e21 {
		return strconv.FormatFloat(r, 'g', -1, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// RoundTo rounds v half away from zero to prec decimals. A value whose scaled form does
// not fit the 2^53 integers a float64 holds exactly is returned as is (it has no decimals
// to round, and the int64 conversion would wrap: 1e308 printed negative).
func RoundTo(v float64, prec int) float64 {
	p := 1.0
	for range prec {
		p *= 10
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v*p) >= 1<<53 {
		return v
	}
	if v < 0 {
		return -float64(int64(-v*p+0.5)) / p
	}
	return float64(int64(v*p+0.5)) / p
}

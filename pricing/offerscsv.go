package pricing

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// OffersCSVColumns are the columns of the embedded price snapshot
// (shared/data/gpu_offers_snapshot.csv), which is also the format of a user's static
// price file. Prices are USD per hour for the whole instance; gpu_mem_gib is per GPU.
var OffersCSVColumns = []string{
	"provider", "region", "zone", "instance_type", "gpu_model", "gpu_count", "gpu_mem_gib",
	"vcpus", "ram_gib", "price_on_demand_usd_hr", "price_spot_usd_hr", "source_date",
}

// requiredOffersCSVColumns must be in the header; the others may be left out of a
// hand-written price file (no zone, no spot price, no date, no CPU/RAM facts).
var requiredOffersCSVColumns = []string{"provider", "instance_type", "gpu_model", "gpu_count", "gpu_mem_gib"}

// ParseOffersCSV reads offers in the snapshot's CSV format. name is used only in error
// messages ("prices.csv:17: ..."), so a user can find the bad cell.
//
// Columns are matched by header name, in any order; an unknown column is an error
// rather than ignored, because a misspelt price column would otherwise silently drop
// every price. Each row yields an on-demand offer and, when price_spot_usd_hr is set, a
// spot offer. An empty price means "not offered", never "free"; a row needs at least one
// price. GPU names go through NormalizeGPU; an unknown name is kept raw, never guessed
// or dropped (UnknownGPUs lists them). ObservedAt is source_date at UTC midnight,
// or defaultObserved when the cell is empty or the column absent. Currency is USD. Source
// is left empty for the caller to set (SourceSnapshot, SourceFile).
//
// Every error is a pricing Invalid error naming the file, the line and the column.
func ParseOffersCSV(r io.Reader, name string, defaultObserved time.Time) ([]Offer, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, Errorf(Invalid, "%s: empty file, want a header line: %s", name, strings.Join(OffersCSVColumns, ","))
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if !isOffersCSVColumn(h) && !isHostCSVColumn(h) {
			return nil, Errorf(Invalid, "%s:1: unknown column %q (want %s; host facts: %s)", name, h, strings.Join(OffersCSVColumns, ","), strings.Join(HostCSVColumns, ","))
		}
		if _, dup := col[h]; dup {
			return nil, Errorf(Invalid, "%s:1: column %q appears twice", name, h)
		}
		col[h] = i
	}
	for _, c := range requiredOffersCSVColumns {
		if _, ok := col[c]; !ok {
			return nil, Errorf(Invalid, "%s:1: missing column %q", name, c)
		}
	}
	_, hasOD := col["price_on_demand_usd_hr"]
	_, hasSpot := col["price_spot_usd_hr"]
	if !hasOD && !hasSpot {
		return nil, Errorf(Invalid, "%s:1: missing a price column (price_on_demand_usd_hr or price_spot_usd_hr)", name)
	}

	var offers []Offer
	firstLine := map[Key]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		row := csvRow{rec: rec, col: col, name: name, line: line}
		o := Offer{
			Provider:     strings.ToLower(row.text("provider")),
			Region:       row.text("region"),
			Zone:         row.text("zone"),
			InstanceType: row.text("instance_type"),
			Currency:     "USD",
			ObservedAt:   defaultObserved,
		}
		if o.Provider == "" {
			return nil, row.errorf("provider", "is empty")
		}
		if o.InstanceType == "" {
			return nil, row.errorf("instance_type", "is empty")
		}
		if o.GPUCount, err = row.number("gpu_count", true); err != nil {
			return nil, err
		}
		if o.GPUMemGiB, err = row.number("gpu_mem_gib", true); err != nil {
			return nil, err
		}
		if o.VCPUs, err = row.number("vcpus", false); err != nil {
			return nil, err
		}
		if o.RAMGiB, err = row.number("ram_gib", false); err != nil {
			return nil, err
		}
		raw := row.text("gpu_model")
		if raw == "" {
			return nil, row.errorf("gpu_model", "is empty")
		}
		o.GPUModel, _ = NormalizeGPU(raw, o.GPUMemGiB)
		if o.Host, err = row.host(); err != nil { // hostcsv.go
			return nil, err
		}
		if d := row.text("source_date"); d != "" {
			t, perr := time.Parse(time.DateOnly, d)
			if perr != nil {
				if t, perr = time.Parse(time.RFC3339, d); perr != nil {
					return nil, row.errorf("source_date", "%q: not a date (want YYYY-MM-DD)", d)
				}
			}
			if perr := CheckObservedDate(t); perr != nil {
				return nil, row.errorf("source_date", "%v", perr)
			}
			o.ObservedAt = t.UTC()
		}
		od, err := row.price("price_on_demand_usd_hr")
		if err != nil {
			return nil, err
		}
		spot, err := row.price("price_spot_usd_hr")
		if err != nil {
			return nil, err
		}
		if od == 0 && spot == 0 {
			return nil, Errorf(Invalid, "%s:%d: no price: set price_on_demand_usd_hr or price_spot_usd_hr", name, line)
		}
		for _, p := range []struct {
			purchase Purchase
			price    float64
		}{{OnDemand, od}, {Spot, spot}} {
			if p.price == 0 {
				continue // empty cell: this purchase option is not offered
			}
			o.Purchase, o.PriceUSDHr = p.purchase, p.price
			if first, dup := firstLine[o.Key()]; dup {
				return nil, Errorf(Invalid, "%s:%d: duplicate offer %s (first on line %d)", name, line, o.Key(), first)
			}
			firstLine[o.Key()] = line
			if err := o.Validate(); err != nil {
				return nil, Errorf(Invalid, "%s:%d: %w", name, line, err)
			}
			offers = append(offers, o)
		}
	}
	if len(offers) == 0 {
		return nil, Errorf(Invalid, "%s: no offers (only a header)", name)
	}
	return offers, nil
}

func isOffersCSVColumn(h string) bool {
	for _, c := range OffersCSVColumns {
		if c == h {
			return true
		}
	}
	return false
}

func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return Errorf(Invalid, "%s:%d: column %d: %v", name, pe.Line, pe.Column, pe.Err)
	}
	return Errorf(Invalid, "%s: %w", name, err)
}

// csvRow reads named cells of one record and words errors as "file:line: column ...".
type csvRow struct {
	rec  []string
	col  map[string]int
	name string
	line int
}

func (r csvRow) text(column string) string {
	i, ok := r.col[column]
	if !ok {
		return ""
	}
	return strings.TrimSpace(r.rec[i])
}

func (r csvRow) errorf(column, format string, args ...any) error {
	return Errorf(Invalid, "%s:%d: %s %s", r.name, r.line, column, fmt.Sprintf(format, args...))
}

// number parses a non-negative number; required cells must be present and positive.
func (r csvRow) number(column string, required bool) (float64, error) {
	s := r.text(column)
	if s == "" {
		if required {
			return 0, r.errorf(column, "is empty")
		}
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, r.errorf(column, "%q: not a number", s)
	}
	if v < 0 || (required && v == 0) {
		return 0, r.errorf(column, "%q: must be positive", s)
	}
	return v, nil
}

// price parses a price cell: empty means not offered (0), otherwise it must be > 0,
// because a listed price of zero is far more likely a broken file than a free GPU.
func (r csvRow) price(column string) (float64, error) {
	s := r.text(column)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(strings.TrimPrefix(s, "$"), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, r.errorf(column, "%q: not a number", s)
	}
	if v <= 0 {
		return 0, r.errorf(column, "%q: must be positive (leave the cell empty when not offered)", s)
	}
	return v, nil
}

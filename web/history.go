package web

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// chart is what app.js hands uPlot: shared x values (unix seconds) and one value array
// per series, null where the series has no point. A point marks a price change; the
// last x extends every current price to now so the final step is drawn.
type chart struct {
	Unit   string        `json:"unit"`
	X      []int64       `json:"x"`
	Series []chartSeries `json:"series"`
	// Changes is how many points the series hold in all (the stored changes), so a
	// test can check that the chart drew each one.
	Changes int `json:"changes"`
}

type chartSeries struct {
	Label  string     `json:"label"`
	Values []*float64 `json:"values"`
}

// historyRow is one row of the table of changes under a chart.
type historyRow struct {
	Series    string
	ValidFrom time.Time
	ValidTo   *time.Time
	Price     float64
}

type historyPage struct {
	Title     string
	Mode      string // "offer", "model" or "" (the form)
	Provider  string
	Instance  string
	Region    string
	Zone      string
	GPUModel  string
	GPUModels []string
	Chart     *chart
	Rows      []historyRow
	Unit      string
	Error     string
	OffersURL string
}

func (s *server) history(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 45*time.Second)
	defer cancel()
	q := r.URL.Query()
	p := historyPage{
		Provider: strings.TrimSpace(q.Get("provider")), Instance: strings.TrimSpace(q.Get("instance-type")),
		Region: strings.TrimSpace(q.Get("region")), Zone: q.Get("zone"), GPUModel: strings.TrimSpace(q.Get("gpu-model")),
		GPUModels: gpuModelNames(),
	}
	_, zoneGiven := q["zone"]
	status := http.StatusOK
	title := "Price history"
	switch {
	case p.Provider != "" && p.Instance != "":
		p.Mode, p.Unit = "offer", "$/h"
		p.Title = p.Provider + " " + p.Instance
		if p.Region != "" {
			p.Title += " in " + p.Region
			if p.Zone != "" {
				p.Title += " (" + p.Zone + ")"
			}
		}
		pts, err := s.b.History(ctx, store.HistoryQuery{Provider: p.Provider, InstanceType: p.Instance, Region: p.Region})
		if err == nil && zoneGiven {
			// The store reads an empty zone as "any"; a link from a table names the
			// offer's exact zone, empty included.
			pts = slices.DeleteFunc(pts, func(pt store.PricePoint) bool { return pt.Zone != p.Zone })
			if len(pts) == 0 {
				err = pricing.Errorf(pricing.NotFound, "no price history for %s", p.Title)
			}
		}
		if err != nil {
			status = statusOf(err)
			s.logFailure(r, status, err)
			p.Error = err.Error()
			break
		}
		p.Chart, p.Rows = offerChart(pts, s.o.Now())
		p.OffersURL = pageURL("/offers", map[string][]string{"provider": {p.Provider}, "region": {p.Region}})
		title = p.Title
	case p.GPUModel != "":
		p.Mode, p.Unit = "model", "$/GPU-h"
		canon, ok := pricing.NormalizeGPU(p.GPUModel, 0)
		if ok {
			p.GPUModel = canon
		}
		p.Title = "cheapest " + p.GPUModel + " per GPU-hour"
		pts, err := s.b.History(ctx, store.HistoryQuery{GPUModel: p.GPUModel})
		if err != nil {
			status = statusOf(err)
			s.logFailure(r, status, err)
			p.Error = err.Error()
			break
		}
		p.Chart, p.Rows = modelChart(pts, s.o.Now())
		p.OffersURL = pageURL("/offers", map[string][]string{"gpu-model": {p.GPUModel}, "sort": {"per-gpu"}})
		title = p.GPUModel + " price history"
	case p.Provider != "" || p.Instance != "":
		status = http.StatusBadRequest
		p.Error = "an offer's history needs both a provider and an instance type"
	}
	s.render(w, r, status, "history", title, p)
}

// seriesLabel names an offer's series: its purchase option, and where the query spans
// several places, the place.
func seriesLabel(pt store.PricePoint, places int) string {
	if places <= 1 {
		return string(pt.Purchase)
	}
	place := pt.Region
	if pt.Zone != "" {
		place += " " + pt.Zone
	}
	return place + " " + string(pt.Purchase)
}

// offerChart draws each stored interval as a point at its valid_from: one series per
// purchase option (and place, when several match).
func offerChart(pts []store.PricePoint, now time.Time) (*chart, []historyRow) {
	places := map[string]bool{}
	for _, pt := range pts {
		places[pt.Region+"\x00"+pt.Zone] = true
	}
	var points []chartPoint
	var rows []historyRow
	for _, pt := range pts {
		label := seriesLabel(pt, len(places))
		points = append(points, chartPoint{label, pt.ValidFrom.Unix(), pt.PriceUSDHr})
		rows = append(rows, historyRow{label, pt.ValidFrom, pt.ValidTo, pt.PriceUSDHr})
	}
	// The end of the chart: now while a price is current, else the last close.
	end := int64(0)
	for _, pt := range pts {
		e := now.Unix()
		if pt.ValidTo != nil {
			e = pt.ValidTo.Unix()
		}
		end = max(end, e)
	}
	c := buildChart("$/h", points, end)
	extendCurrent(c, pts, len(places))
	return c, rows
}

// extendCurrent repeats each still-current series' last price at the chart's end, so
// its final step is drawn up to now.
func extendCurrent(c *chart, pts []store.PricePoint, places int) {
	if len(c.X) == 0 {
		return
	}
	last := len(c.X) - 1
	for _, pt := range pts {
		if pt.ValidTo != nil {
			continue
		}
		label := seriesLabel(pt, places)
		for i := range c.Series {
			if c.Series[i].Label == label && c.Series[i].Values[last] == nil {
				v := pt.PriceUSDHr
				c.Series[i].Values[last] = &v
			}
		}
	}
}

// modelChart is a GPU model's cheapest price per GPU-hour over time, on demand and
// spot, across every offer of the model: at each stored change, the least per-GPU
// price among the intervals open then. A point is drawn where that cheapest price
// changes; fractional slices are left out (priced per slice, they would mislead).
func modelChart(pts []store.PricePoint, now time.Time) (*chart, []historyRow) {
	pts = slices.DeleteFunc(slices.Clone(pts), func(pt store.PricePoint) bool { return pt.GPUCount < 1 })
	var times []int64
	for _, pt := range pts {
		times = append(times, pt.ValidFrom.Unix())
		if pt.ValidTo != nil {
			times = append(times, pt.ValidTo.Unix())
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	var points []chartPoint
	var rows []historyRow
	for _, purchase := range []pricing.Purchase{pricing.OnDemand, pricing.Spot} {
		label := string(purchase)
		prev := -1.0
		var open *historyRow
		for _, t := range times {
			best := -1.0
			for _, pt := range pts {
				if pt.Purchase != purchase || pt.ValidFrom.Unix() > t || (pt.ValidTo != nil && pt.ValidTo.Unix() <= t) {
					continue
				}
				if per := pt.PriceUSDHr / pt.GPUCount; best < 0 || per < best {
					best = per
				}
			}
			if best == prev {
				continue
			}
			at := time.Unix(t, 0).UTC()
			if open != nil {
				open.ValidTo = &at
				rows = append(rows, *open)
				open = nil
			}
			if best >= 0 {
				points = append(points, chartPoint{label, t, best})
				open = &historyRow{Series: label, ValidFrom: at, Price: best}
			}
			prev = best
		}
		if open != nil {
			rows = append(rows, *open)
		}
	}
	slices.SortStableFunc(rows, func(a, b historyRow) int { return a.ValidFrom.Compare(b.ValidFrom) })
	c := buildChart("$/GPU-h", points, now.Unix())
	// Extend each series' final cheapest price, while still offered, to now.
	if n := len(c.X); n > 0 {
		for i := range c.Series {
			rs := rowsOf(rows, c.Series[i].Label)
			if len(rs) > 0 && rs[len(rs)-1].ValidTo == nil && c.Series[i].Values[n-1] == nil {
				v := rs[len(rs)-1].Price
				c.Series[i].Values[n-1] = &v
			}
		}
	}
	return c, rows
}

func rowsOf(rows []historyRow, series string) []historyRow {
	var out []historyRow
	for _, r := range rows {
		if r.Series == series {
			out = append(out, r)
		}
	}
	return out
}

// chartPoint is a price change: series, unix seconds, price.
type chartPoint struct {
	series string
	t      int64
	v      float64
}

// buildChart puts points on shared x values, one series per label in name order
// (on-demand before spot); end, when later than every point, is appended as the last
// x with no values, for the callers to carry current prices to.
func buildChart(unit string, points []chartPoint, end int64) *chart {
	c := &chart{Unit: unit, Changes: len(points)}
	var labels []string
	for _, p := range points {
		if !slices.Contains(labels, p.series) {
			labels = append(labels, p.series)
		}
		c.X = append(c.X, p.t)
	}
	slices.Sort(c.X)
	c.X = slices.Compact(c.X)
	if len(c.X) > 0 && end > c.X[len(c.X)-1] {
		c.X = append(c.X, end)
	}
	slices.Sort(labels)
	for _, l := range labels {
		c.Series = append(c.Series, chartSeries{Label: l, Values: make([]*float64, len(c.X))})
	}
	for _, p := range points {
		v := p.v
		i, _ := slices.BinarySearch(c.X, p.t)
		c.Series[slices.Index(labels, p.series)].Values[i] = &v
	}
	return c
}

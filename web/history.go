package web

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/snapshot"
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
	// Seeded: the price's start is the embedded snapshot's date for it, when its source
	// was read, not a change picker observed (seededAt).
	Seeded bool
	// A GPU model's rows: whose cheapest offer the price is.
	Provider, Purchase, Instance, Region string
}

type historyPage struct {
	Title     string
	Mode      string // "offer", "model" or "" (the form)
	Provider  string
	Instance  string
	Region    string
	Zone      string
	GPUModel  string
	Purchase  string // a GPU model's: on-demand, spot or "" (both)
	GPUModels []string
	// PurchaseError marks the purchase field.
	PurchaseError bool
	// Seeded: some row's price starts at the snapshot's date (the table says so).
	Seeded bool
	// Limited: the store holds more intervals than maxHistoryIntervals; the newest are
	// shown (historybound.go).
	Limited   bool
	Limit     int
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
		pts, err := s.b.History(ctx, boundedHistory(store.HistoryQuery{Provider: p.Provider, InstanceType: p.Instance, Region: p.Region}))
		pts, p.Limited = trimHistory(pts)
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
		p.Seeded = slices.ContainsFunc(p.Rows, func(r historyRow) bool { return r.Seeded })
		p.OffersURL = pageURL("/offers", map[string][]string{"provider": {p.Provider}, "region": {p.Region}})
		title = p.Title
	case p.GPUModel != "":
		p.Mode, p.Unit = "model", "$/GPU-h"
		canon, ok := pricing.NormalizeGPU(p.GPUModel, 0)
		if ok {
			p.GPUModel = canon
		}
		p.Title = p.GPUModel + " per GPU-hour, by provider"
		hq := store.HistoryQuery{GPUModel: p.GPUModel}
		if v := strings.TrimSpace(q.Get("purchase")); v != "" && v != "any" {
			pu, err := pricing.ParsePurchase(v)
			if err != nil {
				status, p.Error, p.PurchaseError = http.StatusBadRequest, err.Error(), true
				break
			}
			hq.Purchase, p.Purchase = pu, string(pu)
		}
		pts, err := s.b.History(ctx, boundedHistory(hq))
		pts, p.Limited = trimHistory(pts)
		if err != nil {
			status = statusOf(err)
			s.logFailure(r, status, err)
			p.Error = err.Error()
			break
		}
		p.Chart, p.Rows = modelChart(pts, s.o.Now())
		p.Seeded = slices.ContainsFunc(p.Rows, func(r historyRow) bool { return r.Seeded })
		p.OffersURL = pageURL("/offers", map[string][]string{"gpu-model": {p.GPUModel}, "sort": {"per-gpu"}})
		title = p.GPUModel + " price history"
	case p.Provider != "" || p.Instance != "":
		status = http.StatusBadRequest
		p.Error = "an offer's history needs both a provider and an instance type"
	}
	p.Limit = maxHistoryIntervals
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
		rows = append(rows, historyRow{Series: label, ValidFrom: pt.ValidFrom, ValidTo: pt.ValidTo, Price: pt.PriceUSDHr, Seeded: seededAt(pt.Provider, pt.ValidFrom)})
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

// modelChart is a GPU model's price per GPU-hour over time: one series per provider
// and purchase option, each the cheapest whole-GPU offer of that provider at each
// stored change (fractional slices are left out: priced per slice, they would
// mislead). There is no line across providers: picker observes each provider at its
// own times (the embedded snapshot's rows carry their sources' dates, days apart), so a
// cross-provider "cheapest" would show the day a cheaper provider was first read as a
// price drop. A point is drawn where a provider's cheapest price changes.
func modelChart(pts []store.PricePoint, now time.Time) (*chart, []historyRow) {
	pts = slices.DeleteFunc(slices.Clone(pts), func(pt store.PricePoint) bool { return pt.GPUCount < 1 })
	type seriesKey struct {
		provider string
		purchase pricing.Purchase
	}
	var keys []seriesKey
	bySeries := map[seriesKey][]store.PricePoint{}
	for _, pt := range pts {
		k := seriesKey{pt.Provider, pt.Purchase}
		if _, ok := bySeries[k]; !ok {
			keys = append(keys, k)
		}
		bySeries[k] = append(bySeries[k], pt)
	}
	slices.SortFunc(keys, func(a, b seriesKey) int {
		if c := strings.Compare(a.provider, b.provider); c != 0 {
			return c
		}
		return strings.Compare(string(a.purchase), string(b.purchase))
	})
	var points []chartPoint
	var rows []historyRow
	for _, k := range keys {
		sp := bySeries[k]
		label := k.provider + " " + string(k.purchase)
		var times []int64
		for _, pt := range sp {
			times = append(times, pt.ValidFrom.Unix())
			if pt.ValidTo != nil {
				times = append(times, pt.ValidTo.Unix())
			}
		}
		slices.Sort(times)
		times = slices.Compact(times)
		prev := -1.0
		var open *historyRow
		cheapestAt := cheapestOver(sp, times) // historybound.go
		for ti, t := range times {
			best := -1.0
			var cheapest store.PricePoint
			if i := cheapestAt[ti]; i >= 0 {
				cheapest = sp[i]
				best = cheapest.PriceUSDHr / cheapest.GPUCount
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
				open = &historyRow{Series: label, Provider: k.provider, Purchase: string(k.purchase), Instance: cheapest.InstanceType,
					Region: cheapest.Region, ValidFrom: at, Price: best, Seeded: seededAt(k.provider, at)}
			}
			prev = best
		}
		if open != nil {
			rows = append(rows, *open)
		}
	}
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

// snapshotDates is, per provider of the embedded price snapshot, the newest date its
// rows carry (snapshot.UndatedObserved for an undated row). Seeding writes each
// snapshot offer's first price from its row's date, so an interval of that provider
// that begins on or before this date is the snapshot's reading of its source, not a
// change picker saw: the page says so instead of showing it as a price change.
var snapshotDates = sync.OnceValue(func() map[string]time.Time {
	out := map[string]time.Time{}
	offers, err := pricing.ParseOffersCSV(bytes.NewReader(snapshot.CSV()), snapshot.FileName, snapshot.UndatedObserved)
	if err != nil {
		return out // the seed itself would have failed; nothing is marked
	}
	for _, o := range offers {
		if o.ObservedAt.After(out[o.Provider]) {
			out[o.Provider] = o.ObservedAt
		}
	}
	return out
})

// seededAt reports whether a price of provider that begins at t came from the
// embedded snapshot (see snapshotDates).
func seededAt(provider string, t time.Time) bool {
	d, ok := snapshotDates()[provider]
	return ok && !t.After(d)
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

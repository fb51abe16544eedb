package web

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// The instance page (/offers/{provider}/{instance}): one instance type's facts, its
// current price in every place it is sold, and its price over time. The Compare table
// links each instance name here, so a row grouped over 13 regions has a page that lists
// all 13.

// instanceURL is the page of one instance type.
func instanceURL(provider, instanceType string) string {
	return "/offers/" + url.PathEscape(provider) + "/" + url.PathEscape(instanceType)
}

// placePrice is one place's current prices, in the period shown.
type placePrice struct {
	Region, Zone string
	OnDemand     string // "" when not sold on demand there
	Spot         string
	Observed     time.Time
	Source       string
	HistoryURL   string
	low          float64
}

type instancePage struct {
	Provider     string
	InstanceType string
	Spec         *pricing.Offer // the cheapest current offer, whose facts the page shows
	Varies       bool           // the places do not all list the same facts
	GPU          *pricing.GPU   // the catalogue's entry, nil when the GPU is not in it
	ReportedGiB  float64
	GPULink      string
	Cluster      string
	Places       []placePrice
	Offers       int
	Monthly      bool
	Unit         string
	PeriodURL    string
	Chart        *chart
	Cheapest     bool // the chart is the cheapest place's price, not every place's
	HistoryURL   string
	CompareURL   string
	Error        string
}

func (s *server) instance(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 45*time.Second)
	defer cancel()
	p := instancePage{Provider: r.PathValue("provider"), InstanceType: r.PathValue("instance")}
	p.HistoryURL = "/history?" + url.Values{"provider": {p.Provider}, "instance-type": {p.InstanceType}}.Encode()
	monthly, err := parseSwitch(r.URL.Query(), "monthly")
	p.Monthly, p.Unit = monthly, "$/h"
	if monthly {
		p.Unit = "$/mo"
	}
	var offers []pricing.Offer
	if err == nil {
		// The backend has no instance-type filter: the search narrows the read to
		// names containing it, and the exact name is kept here.
		offers, err = s.b.Offers(ctx, url.Values{"provider": {p.Provider}, "search": {p.InstanceType}})
		offers = slices.DeleteFunc(offers, func(o pricing.Offer) bool { return !strings.EqualFold(o.InstanceType, p.InstanceType) })
		if err == nil && len(offers) == 0 {
			err = pricing.Errorf(pricing.NotFound, "no current offer of %s %s", p.Provider, p.InstanceType)
		}
	}
	status := http.StatusOK
	if err != nil {
		status = statusOf(err)
		if paramOf(err) == "provider" || paramOf(err) == "search" {
			status = http.StatusNotFound // the path names no instance; nothing to fix in a form
		}
		s.logFailure(r, status, err)
		p.Error = err.Error()
		s.render(w, r, status, "instance", p.Provider+" "+p.InstanceType, p)
		return
	}
	p.Offers = len(offers)
	spec := offers[0] // cheapest first: the backend's order
	p.Spec, p.InstanceType, p.Provider = &spec, spec.InstanceType, spec.Provider
	p.ReportedGiB = spec.GPUMemReportedGiB
	if p.ReportedGiB == 0 {
		p.ReportedGiB = spec.GPUMemGiB
	}
	if g, ok := pricing.LookupGPU(spec.GPUModel); ok {
		p.GPU = &g
	}
	for _, o := range offers[1:] {
		if o.GPUModel != spec.GPUModel || o.GPUCount != spec.GPUCount || o.GPUMemGiB != spec.GPUMemGiB || o.VCPUs != spec.VCPUs || o.RAMGiB != spec.RAMGiB {
			p.Varies = true
		}
	}
	p.GPULink, p.Cluster = linkText(interconnectOf(&spec), spec.GPUCount)
	p.Places = placePrices(offers, monthly)
	flip := url.Values{}
	if !monthly {
		flip.Set("monthly", "true")
	}
	p.PeriodURL = pageURL(instanceURL(p.Provider, p.InstanceType), flip)
	p.HistoryURL = "/history?" + url.Values{"provider": {p.Provider}, "instance-type": {p.InstanceType}}.Encode() // as the store spells them
	p.CompareURL = pageURL("/offers", url.Values{"provider": {p.Provider}, "q": {p.InstanceType}, "by-region": {"true"}})
	if pts, herr := s.b.History(ctx, boundedHistory(store.HistoryQuery{Provider: p.Provider, InstanceType: p.InstanceType})); herr == nil {
		pts, _ = trimHistory(pts)
		p.Chart, p.Cheapest = instanceChart(pts, s.o.Now())
	} else if statusOf(herr) >= 500 {
		s.logFailure(r, statusOf(herr), herr)
	}
	s.render(w, r, status, "instance", p.Provider+" "+p.InstanceType, p)
}

// linkText words an instance's interconnect for its page.
func linkText(ic interconnect, gpus float64) (gpuLink, cluster string) {
	switch {
	case gpus <= 1:
		gpuLink = "none (one GPU)"
	case ic.GPU == "PCIe":
		gpuLink = "PCIe, through the host"
		if gen := pcieGen(ic.HostGBs); gen != "" {
			gpuLink += " (" + gen + ", " + pricing.FormatNum(ic.HostGBs, 0) + " GB/s per direction)"
		}
	case ic.GPU != "":
		gpuLink = ic.GPU + ", " + pricing.FormatNum(ic.GPUGBs, 0) + " GB/s per GPU (both directions, datasheet)"
	default:
		gpuLink = "unknown"
	}
	cluster = "none listed"
	if ic.HasCluster {
		cluster = ic.Cluster.Name + ", " + pricing.FormatNum(ic.Cluster.GbpsPerNode, 0) + " Gbit/s per instance"
	}
	return gpuLink, cluster
}

// placePrices is one row per place (region and zone), cheapest first.
func placePrices(offers []pricing.Offer, monthly bool) []placePrice {
	f := 1.0
	if monthly {
		f = hoursPerMonth
	}
	idx := map[string]int{}
	var out []placePrice
	for _, o := range offers {
		k := o.Place()
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, placePrice{Region: o.Region, Zone: o.Zone, HistoryURL: offerHistoryURL(o), low: math.Inf(1)})
		}
		pp := &out[i]
		if o.Purchase == pricing.Spot {
			pp.Spot = usd(o.PriceUSDHr * f)
		} else {
			pp.OnDemand = usd(o.PriceUSDHr * f)
		}
		pp.low = min(pp.low, o.PriceUSDHr)
		if o.ObservedAt.After(pp.Observed) {
			pp.Observed, pp.Source = o.ObservedAt, o.Source
		}
	}
	slices.SortFunc(out, func(a, b placePrice) int {
		return cmp.Or(cmp.Compare(a.low, b.low), strings.Compare(a.Region, b.Region), strings.Compare(a.Zone, b.Zone))
	})
	return out
}

// maxChartBytes bounds the chart data a page embeds: every place's line (the History
// page's chart for the instance) while it is small, the cheapest place's otherwise.
const maxChartBytes = 32 << 10

// instanceChart is the History page's chart of the instance, one line per place and
// purchase option, when its data is within maxChartBytes; else the cheapest price per
// hour across the places, on demand and spot (cheapest reports which). That is the
// History page's model chart (the cheapest per GPU-hour at each stored change) over
// intervals of one GPU each, which is the price per instance-hour.
func instanceChart(pts []store.PricePoint, now time.Time) (c *chart, cheapest bool) {
	c, _ = offerChart(pts, now)
	if b, err := json.Marshal(c); err == nil && len(b) <= maxChartBytes {
		return c, false
	}
	one := slices.Clone(pts)
	for i := range one {
		one[i].GPUCount = 1
	}
	c, _ = modelChart(one, now)
	c.Unit = "$/h"
	return c, true
}

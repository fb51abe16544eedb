package gcp

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/sync/errgroup"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// gpuMetric matches the regional GPU quota metrics: NVIDIA_<MODEL>_GPUS (on-demand) and
// PREEMPTIBLE_NVIDIA_<MODEL>_GPUS (Spot and preemptible VMs, and DWS flex-start), as
// Compute Engine's "GPU quota" docs name them. COMMITTED_ (reservations) and _VWS_
// (virtual workstations) are other pools and are skipped.
var gpuMetric = regexp.MustCompile(`^(PREEMPTIBLE_)?NVIDIA_([A-Z0-9_]+)_GPUS$`)

// quotaConcurrency bounds the regions.get calls in flight.
const quotaConcurrency = 4

// readQuotas reads the GPU quotas of each region with one Compute regions.get (the
// Region resource carries every regional quota with its limit and usage): the
// configured regions, or else every region an offer was composed in. A region whose
// call fails is in Failed and keeps its stored quotas. A metric the answer does not list
// is unknown, not zero (some regions list only the GPUs they have; Compute Engine
// docs, "Allocation quotas"), so no quota is made up for it.
func (p *Provider) readQuotas(ctx context.Context, hc *http.Client, regions []string, now time.Time) *providers.QuotaReport {
	rep := &providers.QuotaReport{Account: p.cfg.Project}
	c, err := compute.NewRegionsRESTClient(ctx, p.clientOptions(hc)...)
	if err != nil {
		rep.Failed = map[string]error{"*": fmt.Errorf("gcp: regions client: %w", err)}
		return rep
	}
	defer c.Close()
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(quotaConcurrency)
	for _, region := range regions {
		g.Go(func() error {
			r, err := c.Get(ctx, &computepb.GetRegionRequest{Project: p.cfg.Project, Region: region}, listTimeout...)
			mu.Lock()
			defer mu.Unlock()
			rep.Requests++
			if err != nil {
				if rep.Failed == nil {
					rep.Failed = map[string]error{}
				}
				rep.Failed[region] = fmt.Errorf("gcp: %s: regions.get: %w", region, err)
				return nil
			}
			rep.Quotas = append(rep.Quotas, regionGPUQuotas(p.cfg.Project, region, r, now)...)
			rep.Regions = append(rep.Regions, region)
			return nil
		})
	}
	_ = g.Wait()
	slices.Sort(rep.Regions)
	slices.SortFunc(rep.Quotas, func(a, b pricing.Quota) int {
		return cmp.Or(strings.Compare(a.Region, b.Region), strings.Compare(a.Code, b.Code))
	})
	return rep
}

// regionGPUQuotas picks the GPU quotas out of a Region answer.
func regionGPUQuotas(project, region string, r *computepb.Region, now time.Time) []pricing.Quota {
	var out []pricing.Quota
	for _, q := range r.GetQuotas() {
		m := gpuMetric.FindStringSubmatch(q.GetMetric())
		if m == nil || q.Limit == nil {
			continue
		}
		model := m[2]
		if strings.HasSuffix(model, "_VWS") {
			continue
		}
		purchase := pricing.OnDemand
		if m[1] != "" {
			purchase = pricing.Spot
		}
		gq := pricing.Quota{Provider: Name, Account: project, Region: region, Code: q.GetMetric(), Name: q.GetMetric(),
			Family: model, Purchase: purchase, Unit: pricing.QuotaGPU, Limit: q.GetLimit(), ObservedAt: now}
		if q.Usage != nil {
			gq.Usage, gq.UsageKnown = q.GetUsage(), true
		}
		if gq.Validate() == nil {
			out = append(out, gq)
		}
	}
	return out
}

// quotaRegions are the regions whose quotas a fetch reads: the configured ones, else
// those of the offers composed.
func quotaRegions(configured []string, offers []pricing.Offer) []string {
	if len(configured) > 0 {
		return slices.Clone(configured)
	}
	var out []string
	for _, o := range offers {
		if !slices.Contains(out, o.Region) {
			out = append(out, o.Region)
		}
	}
	slices.Sort(out)
	return out
}

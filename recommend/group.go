package recommend

import (
	"slices"

	"github.com/pickergpu/picker/pricing"
)

// groupFetchFactor: Recommend ranks this many times --top offers before grouping, so
// that after folding one instance's regions together there are still --top rows.
const groupFetchFactor = 8

// groupKey is what makes two fits the same offer in all but region: a cloud's instance
// type priced the same in several regions fills the top of the list otherwise. The
// offer's part is the rule the Compare page groups by too (pricing.RegionGroupKey).
type groupKey struct {
	pricing.RegionGroupKey
	need float64
	// cost is the job's cost as shown: offers at one price whose regions bill the disk,
	// or interrupt spot, differently cost differently (allin.go) and stay apart.
	cost float64
}

// groupByRegion folds fits that differ only in region (or zone) into the best of them,
// listing the others in Regions, and keeps the first top groups, in rank order.
func groupByRegion(fits []Fit, top int) []Fit {
	var out []Fit
	idx := map[groupKey]int{}
	for _, f := range fits {
		k := groupKey{f.RegionGroupKey(), f.NeedPerGPUGiB, -1} // -1: no job cost
		if f.EstCostUSD != nil {
			k.cost = pricing.RoundUSD(*f.EstCostUSD)
		}
		if i, ok := idx[k]; ok {
			if r := f.Place(); !slices.Contains(out[i].Regions, r) {
				out[i].Regions = append(out[i].Regions, r)
			}
			continue
		}
		if len(out) == top {
			continue
		}
		idx[k] = len(out)
		f.Regions = []string{f.Place()}
		out = append(out, f)
	}
	for i := range out {
		if len(out[i].Regions) == 1 {
			out[i].Regions = nil // only its own region: nothing grouped
		}
	}
	return out
}

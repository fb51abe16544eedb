package recommend

import (
	"slices"

	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/pricing"
)

// The ladder's offers. Each rung and plan step asks for its one best offer, judged as
// Recommend judges (evaluator.better). Offers that the evaluation cannot tell apart but
// by price (one evaluation class) rank by price, then key, so a rung's best offer is the
// first of its class; only host RAM, which the offload check reads as a threshold, lets
// a dearer offer of a class fit where a cheaper one does not. The ladder is judged on
// each class's offers that no cheaper one matches on host RAM: on a catalogue of 100k
// offers a few thousand, whatever the ranking.

// classKey is everything evaluateAt reads of an offer but its price, key and host RAM.
type classKey struct {
	caps  int     // gpuCaps.idx
	count float64 // GPU count (a vGPU slice's fraction)
	mem   float64 // memory per device when the GPU model's usable figure is unknown
	bill  jobtime.Billing
	pcie  bool    // jobtime.InstanceGPULink says PCIe
	ic    float64 // cluster interconnect Gbit/s per node (multi-node jobs), -1 none
}

// ladderOffers returns the offers of in (and their caps) a rung's best offer can be
// among: per class, the offers no cheaper-or-equal one (by price, then key) matches on
// host RAM, in the input's order; and lean, those a job without CPU offload can pick:
// it never reads the host RAM, so of each class's offers, in price order, only those up
// to the first it can launch (not sold out, within the account's quota on one
// instance) can be its best. It fills in's offer facts as it goes (the billing rule and
// the GPU link are part of the class).
func ladderOffers(in *RecommendInput, caps []*gpuCaps) (full, lean ladderSet) {
	nodes := in.Job.Nodes > 1 || in.Job.NodesAuto
	// Most classes index a dense table (GPU model, whole GPU count up to 16, link, one of
	// a few billing rules); slices, unknown GPUs, larger counts, other billing rules and
	// cluster interconnects take the general key.
	const maxCount, maxBills = 16, 8
	var bills [maxBills][2]float32
	nb := 0
	var dense []int32 // list index + 1; 0 = none
	if in.nCaps <= 512 {
		dense = make([]int32, in.nCaps*maxCount*2*maxBills)
	}
	var lists [][]int
	general := map[classKey][]int{}
	for i := range in.Offers {
		o := &in.Offers[i]
		c := caps[i]
		f := in.factsOf(i)
		n := int(o.GPUCount)
		if dense != nil && c.known && c.spec.UsableGiB > 0 && !nodes && float64(n) == o.GPUCount && n >= 1 && n <= maxCount {
			b := -1
			for j := range nb {
				if bills[j] == [2]float32{f.inc, f.min} {
					b = j
					break
				}
			}
			if b < 0 && nb < maxBills {
				b, bills[nb] = nb, [2]float32{f.inc, f.min}
				nb++
			}
			if b >= 0 {
				slot := ((c.idx*maxCount+n-1)*2+boolInt(f.pcie))*maxBills + b
				if dense[slot] == 0 {
					lists = append(lists, nil)
					dense[slot] = int32(len(lists))
				}
				l := &lists[dense[slot]-1]
				*l = keepOnRAM(in.Offers, *l, i)
				continue
			}
		}
		k := classKey{caps: c.idx, count: o.GPUCount, bill: jobtime.Billing{Increment: float64(f.inc), Minimum: float64(f.min)}, pcie: f.pcie, ic: -1}
		if !c.known || c.spec.UsableGiB <= 0 {
			k.mem = o.MemPerDeviceGiB()
		}
		if nodes {
			if ic, ok := LookupInterconnect(o.Provider, o.InstanceType); ok {
				k.ic = ic.GbpsPerNode
			}
		}
		general[k] = keepOnRAM(in.Offers, general[k], i)
	}
	var idx, leanIdx []int
	for _, l := range general {
		lists = append(lists, l)
	}
	for _, l := range lists {
		idx = append(idx, l...)
		if nodes { // a cluster's quota depends on its node count: every offer
			leanIdx = append(leanIdx, l...)
			continue
		}
		slices.SortFunc(l, func(a, b int) int {
			if classBefore(&in.Offers[a], &in.Offers[b]) {
				return -1
			}
			return 1
		})
		for _, i := range l {
			leanIdx = append(leanIdx, i)
			if !in.soldOut(i) && in.quotaAllows(i, 1) {
				break
			}
		}
	}
	pick := func(idx []int) ladderSet {
		slices.Sort(idx) // the input's order, whatever the maps'
		s := ladderSet{make([]pricing.Offer, len(idx)), make([]*gpuCaps, len(idx)), make([]offerFacts, len(idx))}
		for j, i := range idx {
			s.offers[j], s.caps[j], s.facts[j] = in.Offers[i], caps[i], *in.factsOf(i)
		}
		return s
	}
	return pick(idx), pick(leanIdx)
}

// ladderSet is offers with their caps and facts (ladderOffers): the facts computed
// while classifying them travel along.
type ladderSet struct {
	offers []pricing.Offer
	caps   []*gpuCaps
	facts  []offerFacts
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// keepOnRAM adds offer i to a class's kept offers unless one of them is no dearer (price,
// then key) with at least its host RAM, and drops those it so beats.
func keepOnRAM(offers []pricing.Offer, list []int, i int) []int {
	o := &offers[i]
	if len(list) == 1 { // the usual case: one kept, dearer or equal and with no more RAM
		if p := &offers[list[0]]; p.PriceUSDHr < o.PriceUSDHr && p.RAMGiB >= o.RAMGiB {
			return list
		}
	}
	for _, j := range list {
		if p := &offers[j]; classBefore(p, o) && p.RAMGiB >= o.RAMGiB {
			return list
		}
	}
	out := list[:0]
	for _, j := range list {
		if p := &offers[j]; !(classBefore(o, p) && o.RAMGiB >= p.RAMGiB) {
			out = append(out, j)
		}
	}
	return append(out, i)
}

// classBefore reports whether a ranks before b within a class: by price, then key.
func classBefore(a, b *pricing.Offer) bool {
	if a.PriceUSDHr != b.PriceUSDHr {
		return a.PriceUSDHr < b.PriceUSDHr
	}
	return keyLess(a, b)
}

package recommend

import (
	"fmt"
	"math"

	"github.com/pickergpu/picker/pricing"
)

// Launchability (issue 24): an offer the account's quota does not allow is left out
// (ExclNoQuota), and one its provider says is sold out ranks after every launchable one.

// ExclNoQuota is the exclusion code of offers whose instance (or --nodes cluster) needs
// more than the remaining quota.
const ExclNoQuota = "no-quota"

// quotaKey finds an offer's quota: provider, region, family, purchase.
type quotaKey struct {
	provider, region, family string
	purchase                 pricing.Purchase
}

// quotaIndex is the input's quotas by what they bound, and per offer the quota it draws
// from (-1: none known), filled on first use. It is keyed by the offer's address, not
// its index: the ladder's and the shape plan's copies of the input share the index
// over other offer slices.
type quotaIndex struct {
	by map[quotaKey]int
	qs []pricing.Quota
	of map[*pricing.Offer]int32
}

func newQuotaIndex(qs []pricing.Quota) *quotaIndex {
	x := &quotaIndex{by: make(map[quotaKey]int, len(qs)), qs: qs, of: map[*pricing.Offer]int32{}}
	for i, q := range qs {
		x.by[quotaKey{q.Provider, q.Region, q.Family, q.Purchase}] = i
	}
	return x
}

// quotaFor returns the quota offer i draws from and what one instance takes of it;
// nil when none is known (no quotas given, --ignore-quota, or none for the offer).
func (in *RecommendInput) quotaFor(i int) (*pricing.Quota, float64) {
	if in.IgnoreQuota || len(in.Quotas) == 0 {
		return nil, 0
	}
	if in.quotas == nil {
		in.quotas = newQuotaIndex(in.Quotas)
	}
	x := in.quotas
	o := &in.Offers[i]
	k, seen := x.of[o]
	if !seen {
		k = -1
		if family, _, _, ok := pricing.QuotaScope(o); ok {
			if j, found := x.by[quotaKey{o.Provider, o.Region, family, o.Purchase}]; found {
				k = int32(j)
			}
		}
		x.of[o] = k
	}
	if k < 0 {
		return nil, 0
	}
	_, _, per, _ := pricing.QuotaScope(o)
	return &x.qs[k], per
}

// quotaAllows reports whether n instances of offer i fit in the remaining quota (true
// when no quota is known for it).
func (in *RecommendInput) quotaAllows(i, n int) bool {
	q, per := in.quotaFor(i)
	return q == nil || per*float64(max(n, 1)) <= q.Remaining()+1e-9
}

// quotaMiss is an offer the quota left out: its best candidate had the quota allowed it.
type quotaMiss struct {
	cd    cand
	q     *pricing.Quota
	need  float64
	model string
}

// quotaMisses evaluates, with the quota check off, every offer a quota bounds and
// returns those that would run the job but the quota does not allow, and the best of
// them (nil when none).
func quotaMisses(in *RecommendInput, ev *evaluator) ([]quotaMiss, *quotaMiss) {
	if in.IgnoreQuota || len(in.Quotas) == 0 {
		return nil, nil
	}
	var out []quotaMiss
	var best *quotaMiss
	ev.noQuota = true
	defer func() { ev.noQuota = false }()
	for i := range in.Offers {
		q, per := in.quotaFor(i)
		if q == nil {
			continue
		}
		cd, ok := ev.evaluate(i)
		if !ok {
			continue
		}
		need := per * float64(max(cd.vk.nodes, 1))
		if need <= q.Remaining()+1e-9 {
			continue
		}
		out = append(out, quotaMiss{cd: cd, q: q, need: need, model: in.Offers[i].GPUModel})
		if m := &out[len(out)-1]; best == nil || ev.better(&m.cd, &best.cd) {
			best = m
		}
	}
	if best != nil {
		b := *best
		best = &b
	}
	return out, best
}

// quotaExclusions groups the quota misses per GPU model, each reason naming the quota
// of its best offer and the increase that would let it run.
func quotaExclusions(in *RecommendInput, ev *evaluator, misses []quotaMiss) []Exclusion {
	var out []Exclusion
	at := map[string]int{}
	bestOf := map[string]*quotaMiss{}
	for k := range misses {
		m := &misses[k]
		j, ok := at[m.model]
		if !ok {
			j = len(out)
			at[m.model] = j
			out = append(out, Exclusion{GPUModel: m.model, Code: ExclNoQuota})
		}
		out[j].Offers++
		if b := bestOf[m.model]; b == nil || ev.better(&m.cd, &b.cd) {
			bestOf[m.model] = m
		}
	}
	for j := range out {
		out[j].Reason = quotaIncrease(in, bestOf[out[j].GPUModel])
	}
	return out
}

// quotaIncrease says what a miss needs: "p4d.24xlarge in us-east-1 needs 96 vCPUs of aws
// us-east-1 Running On-Demand P instances (L-417A185B): limit 0 vCPUs; request an
// increase to 96".
func quotaIncrease(in *RecommendInput, m *quotaMiss) string {
	o := &in.Offers[m.cd.i]
	what := o.InstanceType
	if n := m.cd.vk.nodes; n > 1 {
		what = fmt.Sprintf("%d x %s", n, o.InstanceType)
	}
	want := m.need
	if m.q.UsageKnown {
		want += math.Ceil(m.q.Usage - 1e-9)
	}
	unit := m.q.Unit
	if m.need != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%s in %s needs %s %s of %s; request an increase to %s", what, o.Region, trimFloat(m.need), unit,
		m.q.Describe(), trimFloat(math.Ceil(want-1e-9)))
}

func trimFloat(v float64) string { return fmt.Sprintf("%g", math.Round(v*100)/100) }

// launchReport adds to rec what the launch data changed: the quota exclusions; when a
// quota left out an offer that would rank first, a warning naming the increase that
// would let it run (the nearest miss, when nothing else fits); the sold-out fits'
// notes and a warning counting them.
func launchReport(in *RecommendInput, ev *evaluator, rec *Recommendation) {
	misses, best := quotaMisses(in, ev)
	rec.Excluded = append(rec.Excluded, quotaExclusions(in, ev, misses)...)
	if best != nil {
		inc := quotaIncrease(in, best)
		if len(rec.Offers) == 0 {
			rec.NearestMiss = "every offer that fits needs more quota than the account has: " + inc
		} else if j := offerIndex(in, rec.Offers[0].Offer); j >= 0 {
			if first, ok := ev.evaluate(j); ok && ev.better(&best.cd, &first) {
				rec.Warnings = append(rec.Warnings, "the best offer is out of quota: "+inc)
			}
		}
	}
	sold := 0
	for k := range rec.Offers {
		f := &rec.Offers[k]
		if f.Available != pricing.SoldOut && in.SoldOut[f.Key()] {
			f.Available = pricing.SoldOut
		}
		if f.Available == pricing.SoldOut {
			f.Notes = append(f.Notes, soldOutNote)
			sold++
		}
	}
	if sold > 0 {
		verb := "are"
		if sold == 1 {
			verb = "is"
		}
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s shown %s sold out (its provider reports no capacity): ranked after every launchable offer", plural(sold, "offer"), verb))
	}
}

// offerIndex finds o among in.Offers by key (-1 when absent).
func offerIndex(in *RecommendInput, o pricing.Offer) int {
	k := o.Key()
	for i := range in.Offers {
		if in.Offers[i].Key() == k {
			return i
		}
	}
	return -1
}

// soldOutNote is a sold-out fit's note.
const soldOutNote = "sold out: its provider reports no capacity for it now; ranked after every launchable offer"

// soldOut reports whether offer i is sold out: its own word, or the input's SoldOut set
// (the store's capacity word, which offers read from the tables do not carry).
func (in *RecommendInput) soldOut(i int) bool {
	o := &in.Offers[i]
	return o.Available == pricing.SoldOut || (len(in.SoldOut) > 0 && in.SoldOut[o.Key()])
}

// launchRegional reports whether launch data can set one offer of a shape apart from
// the others (a quota per region, a sold-out word per offer): ShapePlan then reads on
// past a shape's first offers, as it does for regional prices (allin.go).
func (in *RecommendInput) launchRegional() bool {
	return (!in.IgnoreQuota && len(in.Quotas) > 0) || len(in.SoldOut) > 0
}

// floorAfter reports whether every further offer of cd's shape at cd's price or dearer
// ranks after t: its floor (floorOf) made launchable (a sold-out word is the offer's,
// not the shape's) ranks after t. The floor is a copy on the stack: the plan asks this
// of every shape each round.
func floorAfter(ev *evaluator, cd, t *cand) bool {
	f := floorOf(ev, cd)
	f.soldOut = false
	return rankAfter(ev, &f, t)
}

// markAllowed records that an offer of shape i (of n) the quota allows was read.
func (p *ShapePlan) markAllowed(i, n int) {
	if len(p.allowed) < n {
		p.allowed = append(p.allowed, make([]bool, n-len(p.allowed))...)
	}
	p.allowed[i] = true
}

// launchNeeds asks, for the time-cost frontier (which wants each shape's cheapest offer
// the answer can show), for more offers of a shape whose offers read the quota all
// leaves out, until one it allows is read or the shape has no more.
func (p *ShapePlan) launchNeeds(needs []ShapeNeed, more [][]pricing.Offer, exhausted []bool) {
	rin := p.rin
	if !rin.launchRegional() || rin.Rank != RankJob || rin.work() <= 0 {
		return
	}
	for i := range needs {
		if !p.ok[i] || (i < len(p.allowed) && p.allowed[i]) {
			continue
		}
		if rin.quotaAllows(i, p.cands[p.at[i]-1].vk.nodes) {
			p.markAllowed(i, len(needs))
			continue
		}
		have := 1
		if i < len(more) {
			have += len(more[i])
		}
		if i < len(exhausted) && exhausted[i] {
			continue
		}
		needs[i].Limit = max(needs[i].Limit, shapeProbe, shapeGrowth*have)
		needs[i].MaxPriceUSDHr = math.Inf(1)
	}
}

package recommend

import (
	"math"
	"slices"

	"github.com/pickergpu/picker/pricing"
)

// ShapeNeed says how many of one shape's cheapest offers (cheapest first, then by key)
// Recommend can use, and the highest price among them worth reading. See ShapeNeeds.
type ShapeNeed struct {
	Limit         int
	MaxPriceUSDHr float64 // +Inf: no bound
}

// ShapeNeeds lets a caller read only the offers that can appear in Recommend's answer.
// in.Offers holds the cheapest offer of each offer shape (pricing.Shape) that passed the
// caller's filters; the result, index-aligned with it, says how many offers of each
// shape, in price order, Recommend needs: Recommend over the union of those (every
// shape's cheapest included) answers exactly as over every offer.
//
// Why that holds: everything the evaluation reads of an offer is in its shape
// (TestEvaluationDependsOnlyOnShape), so offers of one shape fit alike and rank by price
// and then key, the order the caller reads them in. A shape whose cheapest offer ranks
// below the Top-th best cheapest-of-shape cannot place an offer in the top Top (those
// Top shapes' cheapest already beat it), nor can its offers beyond its Top-th. Every
// ladder rung wants one best offer, and nearestMiss the first largest offer: both are
// some shape's cheapest. So the shapes that can still win are read up to Top offers,
// the others not at all, and the read stops once all of that is decided.
//
// The time-cost frontier (Frontier) needs only each shape's cheapest offer too: offers of
// one shape take the same time, so a dearer one is beaten on cost at equal time.
//
// Exclusions (Recommendation.Excluded: fp8, software stack) count every excluded offer
// per GPU model. A GPU model is excluded or not as a whole, and every GPU model among the
// matching offers has some shape's cheapest offer in the shape read, so an answer over the
// shape read lists the same exclusions in the same order; only their counts need every
// matching offer's GPU model: RecountExclusions sets them.
func ShapeNeeds(in RecommendInput) ([]ShapeNeed, error) {
	rin, ev, err := prepare(in)
	if err != nil {
		return nil, err
	}
	needs := make([]ShapeNeed, len(rin.Offers))
	for i := range needs {
		needs[i] = ShapeNeed{Limit: 1, MaxPriceUSDHr: math.Inf(1)}
	}
	// Offers that differ only in region are grouped into one row (ByRegion false) from
	// the top Top x groupFetchFactor fits: those are what the shapes must decide.
	// in.Top as asked: prepare caps rin.Top at the offers it sees, here one per shape.
	top := in.Top
	if top <= 0 {
		top = 10
	}
	if !rin.ByRegion {
		top *= groupFetchFactor
	}
	if top <= 1 {
		return needs, nil
	}
	var cands []cand
	for i := range rin.Offers {
		if cd, ok := ev.evaluate(i); ok {
			cands = append(cands, cd)
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		switch {
		case ev.better(&a, &b):
			return -1
		case ev.better(&b, &a):
			return 1
		}
		return 0
	})
	var t *cand // the Top-th best cheapest-of-shape; nil when fewer shapes fit
	if len(cands) >= top {
		t = &cands[top-1]
	}
	for _, cd := range cands {
		if t != nil && rankAfter(ev, &cd, t) {
			break // this shape's best already ranks below Top others
		}
		needs[cd.i] = ShapeNeed{Limit: top, MaxPriceUSDHr: priceBound(ev, &cd, t)}
	}
	return needs, nil
}

// rankAfter reports whether a ranks strictly after t on everything but the offer key
// (ties on the rest are kept: the key of another offer of a's shape may win them), in
// evaluator.better's order.
func rankAfter(ev *evaluator, a, t *cand) bool {
	oa, ot := &ev.in.Offers[a.i], &ev.in.Offers[t.i]
	switch {
	case a.shown != t.shown:
		return a.shown > t.shown
	case a.speed != t.speed:
		return a.speed > t.speed
	case a.primary != t.primary:
		return a.primary > t.primary
	case oa.PriceUSDHr != ot.PriceUSDHr:
		return oa.PriceUSDHr > ot.PriceUSDHr
	}
	return a.spare > t.spare
}

// priceBound is the highest price at which an offer of cd's shape can still rank no
// later than t: primary grows in proportion to price within a shape (it is the price,
// or the price times the shape's billed hours or seconds per unit of work), and an offer
// whose figure shows as t's may still win on speed, so the bound is the top of t's
// rounding bucket (pricing.USDBucketTop). A small relative slack absorbs rounding;
// reading an extra offer changes nothing.
func priceBound(ev *evaluator, cd, t *cand) float64 {
	if t == nil {
		return math.Inf(1)
	}
	o := &ev.in.Offers[cd.i]
	switch {
	case math.IsInf(t.primary, 1) && math.IsInf(cd.primary, 1):
		return ev.in.Offers[t.i].PriceUSDHr * (1 + 1e-9)
	case math.IsInf(t.primary, 1):
		return math.Inf(1)
	case cd.primary <= 0 || o.PriceUSDHr <= 0:
		return math.Inf(1)
	}
	return pricing.USDBucketTop(t.primary) / (cd.primary / o.PriceUSDHr) * (1 + 1e-9)
}

// RecountExclusions sets each exclusion's offer count to counts[its GPU model] (matching
// offers of that model, all of them, where rec was computed over the shape read) and
// rewrites the exclusion warnings in place.
func RecountExclusions(rec *Recommendation, counts map[string]int) {
	old := exclusionWarnings(rec.Excluded)
	rec.Excluded = slices.Clone(rec.Excluded)
	for i := range rec.Excluded {
		rec.Excluded[i].Offers = counts[rec.Excluded[i].GPUModel]
	}
	w := slices.Clone(rec.Warnings)
	for i := 0; len(old) > 0 && i+len(old) <= len(w); i++ {
		if slices.Equal(w[i:i+len(old)], old) {
			copy(w[i:], exclusionWarnings(rec.Excluded))
			break
		}
	}
	rec.Warnings = w
}

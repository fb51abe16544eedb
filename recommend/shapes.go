package recommend

import (
	"math"
	"slices"

	"github.com/pickergpu/picker/pricing"
)

// ShapeNeed says how many of one shape's cheapest offers (cheapest first, then by key)
// Recommend can use, and the highest price among them worth reading. See ShapePlan.Needs.
type ShapeNeed struct {
	Limit         int
	MaxPriceUSDHr float64 // +Inf: no bound
}

// ShapePlan plans one read of the offers Recommend needs (store.ReadShapes' rounds): it
// judges the cheapest offers once and prices each further offer from its shape's cheapest
// (offers of one shape differ only in what evaluator.price sets).
type ShapePlan struct {
	in  RecommendInput
	rin *RecommendInput
	ev  *evaluator
	ok  []bool // per cheapest offer: it fits
	// cands are the candidates of every offer read (the cheapest first, then further
	// offers as they come); at[j] is offer j's index in cands + 1 (0: does not fit).
	cands []cand
	at    []int32
	added []int // per shape: how many of its further offers are in rin.Offers
	last  []int // per shape: rin.Offers index of its dearest offer read
	// minCost is per shape the least job cost among its offers read (frontierNeeds).
	minCost []float64
	// rankBound is per shape the price bound the ranking set this round (NaN: none).
	rankBound []float64
	// allowed is per shape whether an offer the account's quota allows was read
	// (launchNeeds, quota.go).
	allowed []bool
	// best is the top of cands[:seen] the quota allows, kept across rounds: cands only
	// grow, so each round inserts the new ones. after is per shape whether its cheapest
	// offer's floor ranked after the top-th best in some round: the top-th best only
	// improves, so it still does (and is not judged again).
	best  []cand
	seen  int
	after []bool
}

// NewShapePlan returns the planner of in's read; in.Offers is ignored (Needs gets them).
func NewShapePlan(in RecommendInput) *ShapePlan { return &ShapePlan{in: in} }

// Needs lets a caller read only the offers that can appear in Recommend's answer.
// cheapest holds the cheapest offer of each offer shape (pricing.Shape) that passed the
// caller's filters, more[i] the further offers of shape i read so far (cheapest
// excluded, in price order; nil at first) and exhausted[i] whether shape i has no more
// within the bound last asked; the result, index-aligned with cheapest, says
// how many offers of each shape, in price order, Recommend needs. Asked again with what
// it asked for until it asks no more (store.ReadShapes does), Recommend over the union of
// those (every shape's cheapest included) answers exactly as over every offer.
//
// Why that holds: everything the evaluation reads of an offer is in its shape
// (TestEvaluationDependsOnlyOnShape), so offers of one shape fit alike and rank by price
// and then key, the order the caller reads them in. A shape whose cheapest offer ranks
// below the Top-th best cheapest-of-shape cannot place an offer in the top Top (those
// Top shapes' cheapest already beat it), nor can its offers beyond its Top-th; and once
// Top offers are read, the Top-th best of them bounds the rest the same way, so a shape
// whose dearest offer read ranks below it needs no more. Every
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
// cheapest is the same slice in every round.
func (p *ShapePlan) Needs(cheapest []pricing.Offer, more [][]pricing.Offer, exhausted []bool) ([]ShapeNeed, error) {
	n := len(cheapest)
	if p.ev == nil {
		in := p.in
		// A copy with room for the further offers the rounds read (a few hundred on a
		// marketplace), so appending them does not copy every offer again.
		in.Offers = append(make([]pricing.Offer, 0, n+n/4+64), cheapest...)
		rin, ev, err := prepare(in)
		if err != nil {
			return nil, err
		}
		p.rin, p.ev = rin, ev
		// The plan judges shapes as if no quota bound them: a quota is per region, so
		// one offer of a shape may be left out and another not (quota.go); the offers
		// the quota leaves out are kept out of t below.
		ev.noQuota = true
		p.ok, p.at, p.after = make([]bool, n), make([]int32, n), make([]bool, n)
		p.cands = make([]cand, 0, n)
		p.added, p.last, p.minCost = make([]int, n), make([]int, n), make([]float64, n)
		for i := range n {
			p.last[i] = i
			var cd cand
			if cd, p.ok[i] = ev.evaluate(i); p.ok[i] {
				p.cands = append(p.cands, cd)
				p.at[i] = int32(len(p.cands))
				p.minCost[i] = cd.cost
				if !rin.quotaAllows(i, cd.vk.nodes) {
					p.minCost[i] = math.Inf(1) // out of quota: not a cost the answer can show (quota.go)
				}
			}
		}
	}
	rin, ev := p.rin, p.ev
	// The further offers read since the last call: each is priced from its shape's
	// cheapest, with the same caps and facts.
	for i := 0; i < n && i < len(more); i++ {
		for _, o := range more[i][p.added[i]:] {
			j := len(rin.Offers)
			rin.Offers, ev.caps, rin.facts = append(rin.Offers, o), append(ev.caps, ev.caps[i]), append(rin.facts, rin.facts[i])
			p.at = append(p.at, 0)
			if p.ok[i] {
				cd := p.cands[p.at[i]-1]
				cd.i = j
				cd.soldOut = rin.soldOut(j) // the capacity word is per offer, not per shape (quota.go)
				ev.price(&cd)
				if rin.quotaAllows(j, cd.vk.nodes) {
					p.minCost[i] = min(p.minCost[i], cd.cost)
					p.markAllowed(i, n)
				}
				p.cands = append(p.cands, cd)
				p.at[j] = int32(len(p.cands))
			}
			p.last[i] = j
		}
		p.added[i] = len(more[i])
	}
	needs := make([]ShapeNeed, n)
	for i := range needs {
		needs[i] = ShapeNeed{Limit: 1, MaxPriceUSDHr: math.Inf(1)}
	}
	p.rankBound = slices.Grow(p.rankBound[:0], n)[:n]
	for i := range p.rankBound {
		p.rankBound[i] = math.NaN()
	}
	defer p.frontierNeeds(needs, cheapest, more, exhausted) // after the ranking's needs
	defer p.launchNeeds(needs, more, exhausted)             // quota.go
	// Offers that differ only in region are grouped into one row (ByRegion false) from
	// the top Top x groupFetchFactor fits: those are what the shapes must decide.
	// in.Top as asked: prepare caps rin.Top at the offers it sees.
	top := p.in.Top
	if top <= 0 {
		top = 10
	}
	if !rin.ByRegion {
		top *= groupFetchFactor
	}
	if top <= 1 && !rin.launchRegional() { // with launch data a shape's cheapest may be left out or sold out
		return needs, nil
	}
	// t is the top-th best offer read so far: the top-th best of all offers is no worse,
	// so an offer ranking after t cannot place. nil when fewer offers fit. The best top
	// are kept in a short sorted list, as rankFitsFrontier does.
	if p.best == nil {
		p.best = make([]cand, 0, min(top, len(p.cands))+1) // a huge --top costs nothing
	}
	for k := p.seen; k < len(p.cands); k++ {
		if !rin.quotaAllows(p.cands[k].i, p.cands[k].vk.nodes) {
			continue // out of quota: it cannot place (quota.go)
		}
		p.best = keepTop(ev, p.best, &p.cands[k], top)
	}
	p.seen = len(p.cands)
	var t *cand
	if len(p.best) >= top {
		t = &p.best[top-1]
	}
	// The shapes that can still place more than read, best dearest-offer first: a round
	// asks about top more offers of the first of them, so the next t is tighter.
	type open struct {
		i, have int
		dear    cand
	}
	var opens []open
	for i := range cheapest {
		if !p.ok[i] || p.after[i] {
			continue
		}
		if t != nil && floorAfter(ev, &p.cands[p.at[i]-1], t) {
			p.after[i] = true
			continue // this shape's best already ranks below top others
		}
		cd := p.cands[p.at[i]-1]
		have := 1
		if i < len(more) {
			have += len(more[i])
		}
		needs[i] = ShapeNeed{Limit: have, MaxPriceUSDHr: priceBound(ev, &cd, t)}
		p.rankBound[i] = needs[i].MaxPriceUSDHr
		dear := p.cands[p.at[p.last[i]]-1]
		// Where an offer's extras differ by region (allin.go), a dearer offer of the shape
		// may still rank before the ones read: only the floor of its figure decides.
		regional := rin.regional() || rin.launchRegional()
		if (have >= top && !regional) || (i < len(exhausted) && exhausted[i]) || ((have > 1 || regional) && t != nil && floorAfter(ev, &dear, t)) {
			continue // it has no more, or its dearest offer read already ranks below
		}
		opens = append(opens, open{i, have, dear})
	}
	slices.SortStableFunc(opens, func(a, b open) int {
		switch {
		case ev.better(&a.dear, &b.dear):
			return -1
		case ev.better(&b.dear, &a.dear):
			return 1
		}
		return 0
	})
	for budget, k := top, 0; k < len(opens) && budget > 0; k++ {
		o := opens[k]
		// Asks take few distinct sizes (shapeProbe x shapeGrowth^k, top): the store reads
		// each size with one statement.
		want := max(shapeProbe, shapeGrowth*o.have)
		if !rin.regional() && !rin.launchRegional() {
			want = min(top, want)
		}
		needs[o.i].Limit = want
		budget -= want - o.have
	}
	return needs, nil
}

// frontierNeeds widens needs for the time-cost frontier where an offer's extras differ by
// region (RecommendInput.regional): offers of one shape take the same time, so the
// frontier holds at most the least costly of each, which need not be the cheapest by
// the hour. An offer at price p costs at least p x perPrice + add (floorTerms), so none
// dearer than (least cost read - add) / perPrice can be that one; up to that price the
// shape is read. Every ask of the shape bounds the price by the larger of that and the
// ranking's bound: both only fall from round to round (the least cost read and the
// top-th offer only improve), so a shape exhausted under an earlier ask stays exhausted
// for either.
func (p *ShapePlan) frontierNeeds(needs []ShapeNeed, cheapest []pricing.Offer, more [][]pricing.Offer, exhausted []bool) {
	rin, ev := p.rin, p.ev
	if !rin.regional() || rin.Rank != RankJob || rin.work() <= 0 {
		return
	}
	for i := range cheapest {
		if !p.ok[i] || (i < len(exhausted) && exhausted[i]) {
			continue
		}
		cd := p.cands[p.at[i]-1]
		if cd.hours < 0 {
			continue
		}
		perPrice, add := ev.floorTerms(&cd)
		bound := (p.minCost[i] - add) / perPrice * (1 + 1e-9)
		if rb := p.rankBound[i]; !math.IsNaN(rb) {
			bound = max(bound, rb)
		}
		have := 1
		if i < len(more) {
			have += len(more[i])
		}
		wantMore := rin.Offers[p.last[i]].PriceUSDHr <= bound
		if needs[i].Limit > have || wantMore {
			needs[i].MaxPriceUSDHr = bound
		}
		if wantMore {
			needs[i].Limit = max(needs[i].Limit, shapeProbe, shapeGrowth*have)
		}
	}
}

// shapeProbe is how many offers of a shape that can still place ShapePlan.Needs asks for
// first; it asks shapeGrowth times as many while the dearest one read can still place.
// Each ask is read from the shape's cheapest, so a shape that needs n offers costs
// about n x (1 + 1/shapeGrowth + ...) rows and a round or two.
const (
	shapeProbe  = 8
	shapeGrowth = 4
)

// rankAfter reports whether a ranks strictly after t on everything but the offer key
// (ties on the rest are kept: the key of another offer of a's shape may win them), in
// evaluator.better's order.
func rankAfter(ev *evaluator, a, t *cand) bool {
	oa, ot := &ev.in.Offers[a.i], &ev.in.Offers[t.i]
	switch {
	case a.soldOut != t.soldOut:
		return a.soldOut
	case a.shown != t.shown:
		return a.shown > t.shown
	}
	ev.time(a)
	ev.time(t)
	switch {
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
	if t == nil || t.soldOut { // a launchable offer beats a sold-out t at any price (quota.go)
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
	if cd.hours >= 0 && ev.in.Rank == RankJob {
		// The job's cost: per-price billed hours (at least the uninterrupted run's) and
		// extras no less than the egress (floorOf).
		perPrice, add := ev.floorTerms(cd)
		return (pricing.USDBucketTop(t.primary) - add) / perPrice * (1 + 1e-9)
	}
	return pricing.USDBucketTop(t.primary) / (cd.primary / o.PriceUSDHr) * (1 + 1e-9)
}

// floorTerms bound the job cost of any offer of cd's shape at price p from below, as
// p x perPrice + add: the billed hours of the uninterrupted run (setup plus run; spot
// only adds to it) per dollar of the hourly price, and the egress (the disk costs at
// least nothing). Offers of one shape share the provider, so the billing rule and the
// egress price.
func (ev *evaluator) floorTerms(cd *cand) (perPrice, add float64) {
	o := &ev.in.Offers[cd.i]
	nodes := float64(max(cd.vk.nodes, 1))
	perPrice = ev.in.billing(o.Provider).BilledHours(ev.setup+cd.hours) * nodes
	add = ev.uploadGB(ev.variant(cd.vk)) * ev.in.factsOf(cd.i).egress
	return perPrice, add
}

// floorOf is cd with its figure, as shown, and its speed at their floor over every offer
// of its shape at cd's price or dearer (floorTerms, and the uninterrupted run's hours):
// when the floor ranks after t (rankAfter), so does every such offer, since rankAfter
// compares figure, speed, figure, price and spare in turn and the floor is no more than
// the offer in each. Without a job size (or by the hour) the figure is proportional to
// the price and cd is its own floor.
func floorOf(ev *evaluator, cd *cand) cand {
	if cd.hours < 0 || ev.in.Rank != RankJob {
		return *cd
	}
	ev.time(cd)
	f := *cd
	perPrice, add := ev.floorTerms(cd)
	f.primary = ev.in.Offers[cd.i].PriceUSDHr*perPrice + add
	f.shown = pricing.RoundUSD(f.primary)
	f.speed = ev.setup + cd.hours
	return f
}

// RecountExclusions sets each exclusion's offer count to counts[its GPU model] (matching
// offers of that model, all of them, where rec was computed over the shape read).
func RecountExclusions(rec *Recommendation, counts map[string]int) {
	rec.Excluded = slices.Clone(rec.Excluded)
	for i := range rec.Excluded {
		if rec.Excluded[i].Code == ExclNoQuota {
			continue // per offer and region, not per GPU model: the offers read are counted (quota.go)
		}
		rec.Excluded[i].Offers = counts[rec.Excluded[i].GPUModel]
	}
}

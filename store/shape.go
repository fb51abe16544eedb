package store

import (
	"context"
	"database/sql"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// ShapeNeed is how many of one shape's cheapest offers a reader still needs after seeing
// the shape's cheapest one, and the highest price worth reading (an optimisation: the
// reader may get fewer rows, never different ones).
type ShapeNeed struct {
	Limit    int     // 0 or 1: the cheapest offer (already read) is enough
	MaxPrice float64 // per instance-hour; 0 or +Inf: no bound
}

// priceBound is MaxPrice as the further reads compare it: no bound is the largest float.
func (n ShapeNeed) priceBound() float64 {
	if n.MaxPrice <= 0 || math.IsInf(n.MaxPrice, 1) {
		return math.MaxFloat64
	}
	return n.MaxPrice
}

// ShapePlanner decides, from the cheapest matching offer of each shape (cheapest first,
// in the store's order), how many offers of each shape to read; the result is
// index-aligned with cheapest. ReadShapes calls it again with the further offers read
// (more[i]: shape i's, cheapest excluded, in store order; nil in the first call) and which
// shapes have no more within the bound asked (exhausted[i]) until it asks for no offer
// that can still be read: a planner may ask a few offers of the shapes likeliest to
// matter, look at their prices, and ask more where they can. recommend.ShapePlan is the
// recommender's.
type ShapePlanner func(cheapest []pricing.Offer, more [][]pricing.Offer, exhausted []bool) ([]ShapeNeed, error)

// ReadShapes returns the current offers matching q that plan says can matter, in the
// order Offers would return them (SortPrice; q.Sort and q.Limit are ignored): the
// cheapest offer of every shape (pricing.Shape) with a matching offer, and for each
// shape plan asks more of, its next cheapest up to the need. Reads are one snapshot:
// a refresh committing meanwhile is seen entirely or not at all.
//
// Plans: the first read is one statement over the shapes table, each shape one probe of
// offers_current_shape (EXPLAIN QUERY PLAN is pinned by TestShapeQueryPlans); each
// further read walks one shape's entries of that index, cheapest first.
func (s *Store) ReadShapes(ctx context.Context, q Query, plan ShapePlanner) ([]pricing.Offer, error) {
	// The offers image is one row: one statement reads a consistent snapshot.
	if img, ok, err := s.image(ctx); err != nil {
		return nil, err
	} else if ok {
		return readShapesImage(img, q, plan)
	}
	// One read snapshot (a deferred transaction, not the DSN's BEGIN IMMEDIATE, which
	// takes the write lock) across the statements below, prepared once (readtx.go).
	conn, err := s.beginRead(ctx)
	if err != nil {
		return nil, s.dbError("read shapes", err)
	}
	defer conn.end()

	var version int64
	if s.cache != nil {
		if err := conn.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM refresh_runs").Scan(&version); err != nil {
			return nil, s.dbError("data version", err)
		}
	}
	// By fit-fact set when the sets are ready (facts.go), else by shape: both group
	// offers that the recommender judges alike, a shape only where no offer states host
	// facts (its offers may differ in their hosts' CUDA, a set's may not). With host
	// facts and no sets, until the next write classifies them, every matching offer.
	ready, err := cached(s, version, "facts-ready", func() ([]bool, error) {
		ok, err := factsReady(ctx, conn)
		hosts := false
		if err == nil && !ok {
			hosts, err = hasHostFacts(ctx, conn)
		}
		return []bool{ok, hosts}, s.dbError("read shapes", err)
	})
	if err != nil {
		return nil, err
	}
	if ready[1] {
		all := q
		all.Sort, all.Desc, all.After, all.Limit = "", false, "", 0
		return s.Offers(ctx, all)
	}
	g := byShape
	if ready[0] {
		g = byFacts
	}
	qk := queryKey(q)
	// With offer filters, the daemon takes each set's first matching offer from the sets'
	// offers in memory (setoffers.go), not cached per query: a filter that differs with
	// every request would fill the cache with answers never asked again.
	cheap, ok, err := s.cheapestFromMemory(ctx, conn, q, version, g)
	if err == nil && !ok {
		cheap, err = cached(s, version, g.table+"|"+qk, func() ([]shapeOffer, error) { return s.cheapestPerGroup(ctx, conn, q, g) })
	}
	if err != nil {
		return nil, err
	}
	reps := make([]pricing.Offer, len(cheap))
	for i, c := range cheap {
		reps[i] = c.Offer
	}
	// The further reads, one statement per round for every shape plan asks more of
	// (issue 17: 80 one-shape statements cost 4.4 ms of a 3k-offer recommend, this one
	// ~1 ms). A round reads each asked shape's offers after the last one read.
	fromSQL := func(asks []shapeAsk) ([][]pricing.Offer, error) {
		var key strings.Builder
		key.WriteString(g.table + "+|" + qk)
		for _, a := range asks {
			key.WriteString("|" + fmtKey(a.shape, a.limit, a.maxPrice) + "|" + strconv.FormatFloat(a.after.PriceUSDHr, 'g', -1, 64) + "|" + a.after.Region + "|" + a.after.Zone + "|" + a.after.InstanceType)
		}
		got, err := cached(s, version, key.String(), func() ([]shapeOffer, error) { return s.moreShapeOffers(ctx, conn, q, asks, g) })
		if err != nil {
			return nil, err
		}
		at := make(map[int64]int, len(asks))
		for k, a := range asks {
			at[a.shape] = k
		}
		out := make([][]pricing.Offer, len(asks))
		for _, m := range got {
			if k, ok := at[m.shape]; ok {
				out[k] = append(out[k], m.Offer)
			}
		}
		// In store order: the join on o.id IN (...) returns a group's rows as SQLite
		// walks the IN list (by offer id), and the next round's cursor is the last one
		// (out of order, a later round read some again: TestReadShapesOneSnapshot).
		for _, m := range out {
			slices.SortFunc(m, storeOrder)
		}
		return out, nil
	}
	return planRounds(reps, plan, func(asked []int, limits []int, after []pricing.Offer, bounds []float64) ([][]pricing.Offer, error) {
		asks := make([]shapeAsk, len(asked))
		for k, i := range asked {
			asks[k] = shapeAsk{shape: cheap[i].shape, limit: limits[k], maxPrice: bounds[k], after: after[k]}
		}
		if s.cache == nil {
			return fromSQL(asks)
		}
		// The daemon: cut from each group's offers in memory (setoffers.go).
		out, rest, err := s.furtherFromMemory(ctx, conn, q, version, g, asks)
		if err != nil || len(rest) == 0 {
			return out, err
		}
		sub := make([]shapeAsk, len(rest))
		for j, k := range rest {
			sub[j] = asks[k]
		}
		got, err := fromSQL(sub)
		if err != nil {
			return nil, err
		}
		for j, k := range rest {
			out[k] = got[j]
		}
		return out, nil
	})
}

// planRounds runs a ShapePlanner to its end over the cheapest offers reps: each round
// asks read, for the shapes (indexes into reps) plan wants more of than were read, up to
// limits[k] further offers each after the last one read (after[k]: store order) priced
// at most bounds[k], and appends them. A shape that yields fewer than asked has no more
// within its bound, and is not asked again: the rounds end when plan asks nothing new.
// The result is reps and every further offer read, in store order.
func planRounds(reps []pricing.Offer, plan ShapePlanner, read func(asked, limits []int, after []pricing.Offer, bounds []float64) ([][]pricing.Offer, error)) ([]pricing.Offer, error) {
	more := make([][]pricing.Offer, len(reps))
	done := make([]bool, len(reps))
	for first := true; ; first = false {
		arg, ex := more, done
		if first {
			arg, ex = nil, nil
		}
		needs, err := plan(reps, arg, ex)
		if err != nil {
			return nil, err
		}
		var asked, limits []int
		var after []pricing.Offer
		var bounds []float64
		for i, n := range needs {
			if i < len(reps) && !done[i] && n.Limit > 1+len(more[i]) {
				last := reps[i]
				if m := more[i]; len(m) > 0 {
					last = m[len(m)-1]
				}
				asked, limits = append(asked, i), append(limits, n.Limit-1-len(more[i]))
				after, bounds = append(after, last), append(bounds, n.priceBound())
			}
		}
		if len(asked) == 0 {
			break
		}
		got, err := read(asked, limits, after, bounds)
		if err != nil {
			return nil, err
		}
		for k, i := range asked {
			if len(got[k]) < limits[k] {
				done[i] = true
			}
			more[i] = append(more[i], got[k]...)
		}
	}
	n := len(reps)
	for _, m := range more {
		n += len(m)
	}
	if n == len(reps) {
		return reps, nil
	}
	// Sorted by pointer: an Offer is a few hundred bytes. The cheapest offers come in
	// store order (the first read's): only the few hundred further ones are sorted, then
	// merged with them, not a marketplace's few thousand sorted again.
	further := make([]*pricing.Offer, 0, n-len(reps))
	for _, m := range more {
		for i := range m {
			further = append(further, &m[i])
		}
	}
	slices.SortFunc(further, offerOrder)
	out := make([]pricing.Offer, 0, n)
	sorted := true // every reader's are; checked, not assumed
	for k := 1; k < len(reps) && sorted; k++ {
		sorted = offerOrder(&reps[k-1], &reps[k]) <= 0
	}
	if !sorted {
		reps = slices.Clone(reps)
		slices.SortFunc(reps, storeOrder)
	}
	i := 0
	for _, p := range further {
		for i < len(reps) && offerOrder(&reps[i], p) < 0 {
			out = append(out, reps[i])
			i++
		}
		out = append(out, *p)
	}
	return append(out, reps[i:]...), nil
}

// storeOrder is the ORDER BY of a SortPrice query (offerOrder).
func storeOrder(a, b pricing.Offer) int { return offerOrder(&a, &b) }

// shapeOffer is an offer and its shape's id.
type shapeOffer struct {
	shape int64
	pricing.Offer
}

// shapeFilters splits q into conditions on the shapes table (alias s: every filter on
// a shape fact) and on the offers (region, price), with their arguments.
func shapeFilters(q Query) (shapeWhere []string, shapeArgs []any, offerWhere []string, offerArgs []any, err error) {
	in := func(where *[]string, args *[]any, expr string, vals []string, norm func(string) string) {
		if len(vals) == 0 {
			return
		}
		ph := make([]string, len(vals))
		for i, v := range vals {
			ph[i] = "?"
			*args = append(*args, norm(v))
		}
		*where = append(*where, expr+" IN ("+strings.Join(ph, ", ")+")")
	}
	in(&shapeWhere, &shapeArgs, "s.provider", q.Providers, func(v string) string { return strings.ToLower(strings.TrimSpace(v)) })
	in(&shapeWhere, &shapeArgs, "s.gpu_model COLLATE NOCASE", q.GPUModels, normGPU)
	if p := strings.ToLower(string(q.Purchase)); p != "" && p != "any" {
		pur, err := pricing.ParsePurchase(p)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		shapeWhere, shapeArgs = append(shapeWhere, "s.purchase = ?"), append(shapeArgs, string(pur))
	}
	cond := func(ok bool, expr string, v any) {
		if ok {
			shapeWhere, shapeArgs = append(shapeWhere, expr), append(shapeArgs, v)
		}
	}
	cond(q.MinVRAMGiB > 0, "(CASE WHEN s.gpu_count < 1 THEN s.gpu_count * s.gpu_mem_gib ELSE s.gpu_mem_gib END) >= ?", q.MinVRAMGiB)
	cond(q.MinTotalVRAMGiB > 0, "s.gpu_count * s.gpu_mem_gib >= ?", q.MinTotalVRAMGiB)
	cond(q.MaxGPUs > 0, "s.gpu_count <= ?", q.MaxGPUs)
	if q.ExcludeFractional {
		shapeWhere = append(shapeWhere, "s.gpu_count >= 1")
	}
	in(&offerWhere, &offerArgs, "region COLLATE NOCASE", q.Regions, strings.TrimSpace)
	if q.MaxPriceUSDHr > 0 {
		offerWhere, offerArgs = append(offerWhere, "price <= ?"), append(offerArgs, q.MaxPriceUSDHr)
	}
	if q.MinReliability > 0 { // a host fact of the offer's row, as queryOffers filters it
		offerWhere, offerArgs = append(offerWhere, "(host_reliability = 0 OR host_reliability >= ?)"), append(offerArgs, q.MinReliability)
	}
	return shapeWhere, shapeArgs, offerWhere, offerArgs, nil
}

func normGPU(v string) string { // offers.gpu_model's canonical spelling, as queryOffers does
	if m, ok := pricing.NormalizeGPU(v, 0); ok {
		return m
	}
	return strings.TrimSpace(v)
}

func and(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " AND " + strings.Join(conds, " AND ")
}

// cheapestPerShapeSQL is the first read: for every shape passing the shape filters, its
// cheapest current offer passing the offer filters (none: the shape is left out). With
// no offer filter, that is the copy the refresh keeps in the shapes row.
func cheapestPerShapeSQL(q Query) (string, []any, error) { return cheapestSQL(q, byShape) }

// cheapestSQL is the first read by the groups g (shapes or fit-fact sets; their table
// has the columns the shape filters name).
func cheapestSQL(q Query, g groupTable) (string, []any, error) {
	sw, sa, ow, oa, err := shapeFilters(q)
	if err != nil {
		return "", nil, err
	}
	if len(ow) == 0 {
		return "SELECT s.id, s.provider, s.c_region, s.c_zone, " + g.copied + ", s.c_currency, s.c_source, s.c_price, " +
			"max(s.c_last_seen, coalesce((SELECT seen.last_seen FROM seen WHERE seen.provider = s.provider AND seen.region = s.c_region), 0)), " + g.hosts + " " +
			"FROM " + g.table + " s WHERE s.c_price IS NOT NULL" + and(sw), sa, nil
	}
	where := ""
	if len(sw) > 0 {
		where = " WHERE " + strings.Join(sw, " AND ")
	}
	query := "SELECT s.id, " + shapeOfferCols("o") + " FROM " + g.table + ` s JOIN offers o ON o.id = (
		SELECT id FROM offers INDEXED BY ` + g.index + ` WHERE ` + g.column + ` = s.id AND price IS NOT NULL` + and(ow) + `
		ORDER BY ` + g.order + ` LIMIT 1)` + where
	return query, append(oa, sa...), nil
}

// shapeAsk is one shape plan asks more of: up to limit of its offers after after (the
// last one read, in store order) priced at most maxPrice.
type shapeAsk struct {
	shape    int64
	limit    int
	maxPrice float64
	after    pricing.Offer
}

// shapeOffersSQL is the further read: for each shape asked (a JSON array of [shape id,
// max price, and the last offer read's price, region, zone] arrays, bound as the first
// argument), its cheapest matching offers after that one up to that price, at most limit
// (the last argument) of them. One statement serves any number of shapes, with one plan:
// a walk of offers_current_shape per shape (TestShapeQueryPlans).
func shapeOffersSQL(q Query) (string, []any, error) { return groupOffersSQL(q, byShape) }

// moreShapeOffers runs the further reads of asks: one statement per distinct limit
// (recommend.ShapePlan asks few distinct sizes).
func (s *Store) moreShapeOffers(ctx context.Context, db queryer, q Query, asks []shapeAsk, g groupTable) ([]shapeOffer, error) {
	query, oa, err := groupOffersSQL(q, g)
	if err != nil {
		return nil, err
	}
	byLimit := map[int][]string{}
	var limits []int
	for _, a := range asks {
		if _, ok := byLimit[a.limit]; !ok {
			limits = append(limits, a.limit)
		}
		cursor, err := askCursor(a)
		if err != nil {
			return nil, err
		}
		byLimit[a.limit] = append(byLimit[a.limit], string(cursor))
	}
	var out []shapeOffer
	for _, lim := range limits {
		args := append(append([]any{"[" + strings.Join(byLimit[lim], ",") + "]"}, oa...), lim)
		got, err := s.scanShapeOffers(ctx, db, q, query, args)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// cheapestPerGroup is the first read, by shape or by fit-fact set (from the facts image
// when no filter is per offer).
func (s *Store) cheapestPerGroup(ctx context.Context, db queryer, q Query, g groupTable) ([]shapeOffer, error) {
	if _, _, ow, _, err := shapeFilters(q); err == nil && len(ow) == 0 && g == byFacts {
		if out, ok, err := s.cheapestFromImage(ctx, db, q); err != nil {
			return nil, s.dbError("read shapes", err)
		} else if ok {
			return out, nil
		}
	}
	query, args, err := cheapestSQL(q, g)
	if err != nil {
		return nil, err
	}
	out, err := s.scanShapeOffers(ctx, db, q, query, args)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b shapeOffer) int { return storeOrder(a.Offer, b.Offer) })
	return out, nil
}

// shapeOfferCols are the columns of a shape read's offer of table t (an alias of
// offers), after its group's id: offerCols then hostCols, scanShapeOffer's order.
func shapeOfferCols(t string) string { return offerCols(t) + ", " + hostCols(t) }

// scanShapeOffer scans a row of shape_id then shapeOfferCols: the offer as stored, its
// host facts included (as Offers returns it).
func scanShapeOffer(rows *sql.Rows) (shapeOffer, error) {
	var so shapeOffer
	o := &so.Offer
	var seen int64
	err := rows.Scan(append([]any{&so.shape, &o.Provider, &o.Region, &o.Zone, &o.InstanceType, &o.Purchase, &o.GPUModel, &o.GPUCount,
		&o.GPUMemGiB, &o.VCPUs, &o.RAMGiB, &o.Currency, &o.Source, &o.PriceUSDHr, &seen}, hostDest(&o.Host)...)...)
	o.ObservedAt = fromUnix(seen)
	return so, err
}

func (s *Store) scanShapeOffers(ctx context.Context, db queryer, q Query, query string, args []any) ([]shapeOffer, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.dbError("read shapes", err)
	}
	defer rows.Close()
	var out []shapeOffer
	for rows.Next() {
		so, err := scanShapeOffer(rows)
		if err != nil {
			return nil, s.dbError("read shapes", err)
		}
		o := &so.Offer
		// As queryOffers: the usable memory, and the VRAM filters applied to it. Both
		// are functions of the shape, so a shape passes or fails as a whole.
		*o = o.WithUsableMemory()
		if (q.MinVRAMGiB > 0 && o.MemPerDeviceGiB() < q.MinVRAMGiB) || (q.MinTotalVRAMGiB > 0 && o.TotalGPUMemGiB() < q.MinTotalVRAMGiB) || !q.classOKOffer(o) {
			continue
		}
		out = append(out, so)
	}
	return out, s.dbError("read shapes", rows.Err())
}

// CountByGPU counts the current offers matching q (as Offers would return them) of each
// of the GPU models named (exact names), reading only those models' shapes: recommend's
// exclusion counts (recommend.RecountExclusions) without reading every offer.
func (s *Store) CountByGPU(ctx context.Context, q Query, models []string) (map[string]int, error) {
	c, err := s.CountByGPUCUDA(ctx, q, models)
	return c.Totals(), err
}

// CountByGPUCUDA is CountByGPU per host CUDA class (recommend.CUDAClass of
// pricing.Host.MaxCUDA, 0 where the host states none): recommend's old-cuda exclusion
// counts the offers of hosts too old for the job (recommend.RecountExclusionsByHost). A
// model with no matching offer is absent.
func (s *Store) CountByGPUCUDA(ctx context.Context, q Query, models []string) (recommend.GPUCounts, error) {
	sw, sa, ow, oa, err := shapeFilters(q)
	if err != nil {
		return nil, err
	}
	out := recommend.GPUCounts{}
	if len(models) == 0 {
		return out, nil
	}
	if img, ok, err := s.image(ctx); err != nil {
		return nil, err
	} else if ok {
		return countByGPUImage(img, q, models)
	}
	if s.cache != nil { // the daemon: one count per data version, query and models
		v, err := s.dataVersion(ctx)
		if err != nil {
			return nil, err
		}
		got, err := cached(s, v, "count|"+queryKey(q)+"|"+strings.Join(models, "\x00"), func() ([]recommend.GPUCounts, error) {
			m, err := s.countByGPU(ctx, q, models, sw, sa, ow, oa)
			return []recommend.GPUCounts{m}, err
		})
		if err != nil {
			return nil, err
		}
		return got[0].Clone(), nil
	}
	return s.countByGPU(ctx, q, models, sw, sa, ow, oa)
}

// countByGPU is CountByGPUCUDA over the tables, with q's filters split (shapeFilters):
// by fit-fact set (each is of one CUDA class) when the sets are ready, else by shape and
// the CUDA classes of its offers.
func (s *Store) countByGPU(ctx context.Context, q Query, models []string, sw []string, sa []any, ow []string, oa []any) (recommend.GPUCounts, error) {
	out := recommend.GPUCounts{}
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(models)), ", ")
	sw = append(sw, "s.gpu_model IN ("+ph+")")
	for _, m := range models {
		sa = append(sa, m)
	}
	ready, err := factsReady(ctx, s.db) // a marketplace's shapes are one per offer
	if err != nil {
		return nil, s.dbError("count offers", err)
	}
	var query string
	args := append(oa, sa...)
	if ready {
		count := `(SELECT count(*) FROM offers INDEXED BY offers_current_facts WHERE facts_id = s.id AND price IS NOT NULL` + and(ow) + `)`
		if len(ow) == 0 {
			count = "coalesce(s.c_count, 0)" // kept by the write
		}
		// Summed in SQL over the narrow index facts_counts (0010): a marketplace's excluded
		// models have thousands of sets, and stepping each wide row into Go cost a fifth
		// of a cold recommend at 100k offers with host facts (issue 29).
		query = `SELECT s.gpu_model, s.gpu_count, s.gpu_mem_gib, s.max_cuda, sum(` + count + `) FROM facts s WHERE ` + strings.Join(sw, " AND ") + ` GROUP BY 1, 2, 3, 4`
	} else {
		class, ca := cudaClassSQL("o.host_max_cuda")
		query = `SELECT s.gpu_model, s.gpu_count, s.gpu_mem_gib, ` + class + `, count(*) FROM shapes s
			JOIN offers o INDEXED BY offers_current_shape ON o.shape_id = s.id AND o.price IS NOT NULL` + and(ow) + `
			WHERE ` + strings.Join(sw, " AND ") + ` GROUP BY 1, 2, 3, 4`
		args = slices.Concat(ca, oa, sa)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.dbError("count offers", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o pricing.Offer
		var cuda float64
		var n int
		if err := rows.Scan(&o.GPUModel, &o.GPUCount, &o.GPUMemGiB, &cuda, &n); err != nil {
			return nil, s.dbError("count offers", err)
		}
		// The VRAM filters on the usable memory, as queryOffers applies them.
		o = o.WithUsableMemory()
		if (q.MinVRAMGiB > 0 && o.MemPerDeviceGiB() < q.MinVRAMGiB) || (q.MinTotalVRAMGiB > 0 && o.TotalGPUMemGiB() < q.MinTotalVRAMGiB) || !q.classOKOffer(&o) {
			continue
		}
		if n > 0 { // a model with no matching offer is absent, as from the image
			out.Add(o.GPUModel, cuda, n)
		}
	}
	return out, s.dbError("count offers", rows.Err())
}

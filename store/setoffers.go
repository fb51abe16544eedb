package store

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// The daemon's further reads from memory. recommend's plan asks, round by round, for a
// few more offers of the groups (fit-fact sets or shapes) that can still place, each
// after the last one read and under a price bound that differs with every job: on a
// marketplace three or four statements a request, about a fifth of the daemon's CPU
// per answer, and never the same ask twice, so the cache of whole asks missed. The
// groups asked are the same few hundred from one request to the next, so with the
// cache on (CacheOffers) a group's current offers are read once per data version, in
// store order, whatever the query, and each ask is cut from them with the query's offer
// filters applied as SQLite applies them (offerFilter): the same offers the statement
// returns (TestFurtherReadsFromMemory compares them). A group past groupMemoryMax
// offers is asked of SQLite as before: one full listing must not flush the cache.

// groupMemoryMax bounds the offers of one group kept in memory for the further reads.
var groupMemoryMax = 4096 // a variable for the tests

// groupAllSQL reads every current offer of one group (its id the argument), in store
// order, at most groupMemoryMax+1 of them.
func groupAllSQL(g groupTable) string {
	return "SELECT o." + g.column + ", " + shapeOfferCols("o") + " FROM offers o INDEXED BY " + g.index + `
		WHERE o.` + g.column + ` = ? AND o.price IS NOT NULL
		ORDER BY ` + g.order + " LIMIT " + strconv.Itoa(groupMemoryMax+1)
}

// groupAll is group id's current offers (groupAllSQL), in store order; nil with more
// than groupMemoryMax. Every offer of a group the first read returned passes the
// query's shape filters (they are the group's facts), so none is read with them.
func (s *Store) groupAll(ctx context.Context, db queryer, g groupTable, id int64) ([]shapeOffer, error) {
	out, err := s.scanShapeOffers(ctx, db, Query{}, groupAllSQL(g), []any{id})
	if err != nil || len(out) > groupMemoryMax {
		return nil, err
	}
	slices.SortFunc(out, func(a, b shapeOffer) int { return offerOrder(&a.Offer, &b.Offer) })
	return slices.Clip(out), nil
}

// offerFilter is q's offer filters (shapeFilters' offer conditions) as a predicate that
// decides as SQLite does: the region compared under NOCASE (ASCII letters only) with
// each value trimmed, the price at most MaxPriceUSDHr, a host reliability of 0 (unstated)
// or at least MinReliability.
func offerFilter(q Query) func(o *pricing.Offer) bool {
	regions := make([]string, len(q.Regions))
	for i, r := range q.Regions {
		regions[i] = strings.TrimSpace(r)
	}
	return func(o *pricing.Offer) bool {
		if len(regions) > 0 && !slices.ContainsFunc(regions, func(r string) bool { return nocaseEqual(o.Region, r) }) {
			return false
		}
		if q.MaxPriceUSDHr > 0 && !(o.PriceUSDHr <= q.MaxPriceUSDHr) {
			return false
		}
		return q.MinReliability <= 0 || o.Host.Reliability == 0 || o.Host.Reliability >= q.MinReliability
	}
}

// nocaseEqual is SQLite's NOCASE collation's equality: ASCII letters fold, nothing else
// (sqlite.org/datatype3.html, "Collating Sequences").
func nocaseEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// cutAsk is ask a's answer from its group's offers all (in store order): those passing
// match after a.after priced at most a.maxPrice, at most a.limit of them, as the further
// read's statement selects them.
func cutAsk(all []shapeOffer, a shapeAsk, match func(*pricing.Offer) bool) []pricing.Offer {
	k := sort.Search(len(all), func(i int) bool { return offerOrder(&all[i].Offer, &a.after) > 0 })
	var out []pricing.Offer
	for i := k; i < len(all) && len(out) < a.limit; i++ {
		o := &all[i].Offer
		if o.PriceUSDHr > a.maxPrice {
			break // in store order the price only rises
		}
		if match(o) {
			out = append(out, *o)
		}
	}
	return out
}

// groupOffers is group id's offers in memory at version (groupAll, cached): empty for a
// group past groupMemoryMax (a group asked has an offer).
func (s *Store) groupOffers(ctx context.Context, db queryer, version int64, g groupTable, id int64) ([]shapeOffer, error) {
	return cached(s, version, "all|"+g.table+"|"+strconv.FormatInt(id, 10), func() ([]shapeOffer, error) {
		return s.groupAll(ctx, db, g, id)
	})
}

// cheapestFromMemory is the first read of a query with offer filters, in the daemon:
// each set's cheapest offer passing them, from the sets' offers in memory, where the
// statement probes every set (one correlated lookup each, ~10 ms at a marketplace's
// few thousand sets, every request when every request filters otherwise). The sets
// are the query's without its offer filters (cached, from the facts image); ok false
// (SQLite answers) without the cache or an offer filter, by shape, with a group past
// groupMemoryMax, or when the current offers would fill more than 3/4 of the cache.
func (s *Store) cheapestFromMemory(ctx context.Context, db queryer, q Query, version int64, g groupTable) ([]shapeOffer, bool, error) {
	if s.cache == nil || g != byFacts {
		return nil, false, nil
	}
	base := q
	base.Regions, base.MaxPriceUSDHr, base.MinReliability = nil, 0, 0 // offerFilter's
	_, _, ow, _, err := shapeFilters(q)
	if err != nil || len(ow) == 0 {
		return nil, false, err
	}
	if _, _, bw, _, err := shapeFilters(base); err != nil || len(bw) > 0 {
		return nil, false, err // an offer filter offerFilter does not apply
	}
	n, err := cached(s, version, "current-offers", func() ([]int, error) {
		rows, err := db.QueryContext(ctx, "SELECT count(*) FROM offers WHERE price IS NOT NULL")
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var n int
		if rows.Next() {
			err = rows.Scan(&n)
		}
		return []int{n}, errors.Join(err, rows.Err())
	})
	if err != nil || n[0] > s.cache.maxOffers*3/4 { // the rest for the other entries
		return nil, false, err
	}
	sets, err := cached(s, version, g.table+"|"+queryKey(base), func() ([]shapeOffer, error) { return s.cheapestPerGroup(ctx, db, base, g) })
	if err != nil {
		return nil, false, err
	}
	match := offerFilter(q)
	var out []shapeOffer
	for _, set := range sets {
		all, err := s.groupOffers(ctx, db, version, g, set.shape)
		if err != nil || len(all) == 0 {
			return nil, false, err
		}
		for i := range all {
			if match(&all[i].Offer) {
				out = append(out, all[i])
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b shapeOffer) int { return offerOrder(&a.Offer, &b.Offer) })
	return out, true, nil
}

// furtherFromMemory answers the asks from each group's offers in memory (groupAll,
// cached at version); the asks it cannot (a group past groupMemoryMax) are left nil and
// listed in rest.
func (s *Store) furtherFromMemory(ctx context.Context, db queryer, q Query, version int64, g groupTable, asks []shapeAsk) (out [][]pricing.Offer, rest []int, err error) {
	match := offerFilter(q)
	out = make([][]pricing.Offer, len(asks))
	for k, a := range asks {
		all, err := s.groupOffers(ctx, db, version, g, a.shape)
		if err != nil {
			return nil, nil, err
		}
		// A group asked has an offer (its cheapest, read first): none means more than
		// groupMemoryMax, remembered as such.
		if len(all) == 0 {
			rest = append(rest, k)
			continue
		}
		out[k] = cutAsk(all, a, match)
	}
	return out, rest, nil
}

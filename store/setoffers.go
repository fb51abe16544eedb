package store

import (
	"context"
	"slices"
	"sort"
	"strconv"

	"github.com/pickergpu/picker/pricing"
)

// The daemon's further reads from memory. recommend's plan asks, round by round, for a
// few more offers of the groups (fit-fact sets or shapes) that can still place, each
// after the last one read and under a price bound that differs with every job: on a
// marketplace three or four statements a request, about a fifth of the daemon's CPU
// per answer, and never the same ask twice, so the cache of whole asks missed. The
// groups asked are the same few hundred from one request to the next, so with the
// cache on (CacheOffers) a group's current offers passing the query's offer filters are
// read once per data version, in store order, and each ask is cut from them: the same
// offers the statement returns (TestFurtherReadsFromMemory compares them). A group
// past groupMemoryMax offers is asked of SQLite as before: one full listing must not
// flush the cache.

// groupMemoryMax bounds the offers of one group kept in memory for the further reads.
var groupMemoryMax = 4096 // a variable for the tests

// groupAllSQL reads every current offer of one group (its id the first argument)
// passing q's offer filters, in store order, at most groupMemoryMax+1 of them.
func groupAllSQL(q Query, g groupTable) (string, []any, error) {
	_, _, ow, oa, err := shapeFilters(q)
	if err != nil {
		return "", nil, err
	}
	return "SELECT o." + g.column + ", " + shapeOfferCols("o") + " FROM offers o INDEXED BY " + g.index + `
		WHERE o.` + g.column + ` = ? AND o.price IS NOT NULL` + and(ow) + `
		ORDER BY ` + g.order + " LIMIT " + strconv.Itoa(groupMemoryMax+1), oa, nil
}

// groupAll is group id's current offers passing q (groupAllSQL), in store order; nil
// with more than groupMemoryMax.
func (s *Store) groupAll(ctx context.Context, db queryer, q Query, g groupTable, id int64) ([]shapeOffer, error) {
	query, oa, err := groupAllSQL(q, g)
	if err != nil {
		return nil, err
	}
	out, err := s.scanShapeOffers(ctx, db, q, query, append([]any{id}, oa...))
	if err != nil || len(out) > groupMemoryMax {
		return nil, err
	}
	slices.SortFunc(out, func(a, b shapeOffer) int { return offerOrder(&a.Offer, &b.Offer) })
	return slices.Clip(out), nil
}

// cutAsk is ask a's answer from its group's offers all (in store order): those after
// a.after priced at most a.maxPrice, at most a.limit of them, as the further read's
// statement selects them.
func cutAsk(all []shapeOffer, a shapeAsk) []pricing.Offer {
	k := sort.Search(len(all), func(i int) bool { return offerOrder(&all[i].Offer, &a.after) > 0 })
	var out []pricing.Offer
	for _, so := range all[k:] {
		if len(out) == a.limit || so.PriceUSDHr > a.maxPrice {
			break // in store order the price only rises
		}
		out = append(out, so.Offer)
	}
	return out
}

// furtherFromMemory answers the asks from each group's offers in memory (groupAll,
// cached at version under the query key qk); the asks it cannot (a group past
// groupMemoryMax) are left nil and listed in rest.
func (s *Store) furtherFromMemory(ctx context.Context, db queryer, q Query, qk string, version int64, g groupTable, asks []shapeAsk) (out [][]pricing.Offer, rest []int, err error) {
	out = make([][]pricing.Offer, len(asks))
	for k, a := range asks {
		all, err := cached(s, version, "all|"+g.table+"|"+qk+"|"+strconv.FormatInt(a.shape, 10), func() ([]shapeOffer, error) {
			return s.groupAll(ctx, db, q, g, a.shape)
		})
		if err != nil {
			return nil, nil, err
		}
		// A group asked has a matching offer (its cheapest, read first): none means
		// more than groupMemoryMax, remembered as such.
		if len(all) == 0 {
			rest = append(rest, k)
			continue
		}
		out[k] = cutAsk(all, a)
	}
	return out, rest, nil
}

package store

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// explain returns EXPLAIN QUERY PLAN's detail lines for query.
func explain(t *testing.T, s *Store, query string, args []any) []string {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	return out
}

// TestShapeQueryPlans pins the plans of recommend's reads, so a planner (or index)
// change cannot turn them back into a pass over every offer: the shapes table is the
// only table scanned, offers are reached through offers_current_shape (a probe per
// shape, or one shape's walk) and by primary key, and no temporary sort is built.
func TestShapeQueryPlans(t *testing.T) {
	s := openTest(t)
	queries := []Query{
		{},
		{Purchase: pricing.OnDemand, MaxGPUs: 8, ExcludeFractional: true},
		{Providers: []string{"aws"}, Regions: []string{"us-east-1", "eu-west-1"}, GPUModels: []string{"h100"}, MaxPriceUSDHr: 50, MinVRAMGiB: 40, MinTotalVRAMGiB: 80},
	}
	for _, q := range queries {
		query, args, err := cheapestPerShapeSQL(q)
		if err != nil {
			t.Fatal(err)
		}
		plan := explain(t, s, query, args)
		joined := strings.Join(plan, "\n")
		wants := []string{"CORRELATED SCALAR SUBQUERY", "SEARCH offers USING COVERING INDEX offers_current_shape (shape_id=?", "SEARCH o USING INTEGER PRIMARY KEY (rowid=?)"}
		if len(q.Regions) == 0 && q.MaxPriceUSDHr == 0 {
			// No offer filter: the shapes rows' copies of their cheapest offer, no offers read.
			wants = []string{"SCAN s", "SEARCH seen USING PRIMARY KEY (provider=? AND region=?)"}
			if strings.Contains(joined, "offers") {
				t.Errorf("cheapest per shape %+v reads offers:\n%s", q, joined)
			}
		}
		for _, want := range wants {
			if !strings.Contains(joined, want) {
				t.Errorf("cheapest per shape %+v: plan lacks %q:\n%s", q, want, joined)
			}
		}
		for _, bad := range []string{"SCAN o", "SCAN offers", "TEMP B-TREE"} {
			if strings.Contains(joined, bad) {
				t.Errorf("cheapest per shape %+v: plan has %q:\n%s", q, bad, joined)
			}
		}

		// The further reads of several shapes, one statement: a walk of
		// offers_current_shape per shape, reaching offers by primary key.
		query, args, err = shapeOffersSQL(q)
		if err != nil {
			t.Fatal(err)
		}
		plan = explain(t, s, query, append(append([]any{`[[1,10,1,"r",""],[2,20,1.5,"r","z"],[3,1e308,2,"",""]]`}, args...), 10))
		joined = strings.Join(plan, "\n")
		// Each shape's walk starts after the last offer read (the index's own order).
		for _, want := range []string{"SEARCH offers USING COVERING INDEX offers_current_shape (shape_id=? AND (price,region,zone)>(?,?,?) AND price<?)", "SEARCH o USING INTEGER PRIMARY KEY (rowid=?)"} {
			if !strings.Contains(joined, want) {
				t.Errorf("shape offers %+v: plan lacks %q:\n%s", q, want, joined)
			}
		}
		if strings.Contains(joined, "TEMP B-TREE") || strings.Contains(joined, "SCAN o") {
			t.Errorf("shape offers %+v: plan sorts or scans:\n%s", q, joined)
		}
	}
}

// TestShapesFollowFacts: every offer's shape_id names the shape of its current facts,
// through inserts, fact changes and reopening, and Prune drops shapes no offer has.
func TestShapesFollowFacts(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	a := mk("aws", "us-east-1", "p4d", pricing.OnDemand, 32)
	b := mk("aws", "us-west-2", "p4d", pricing.OnDemand, 33) // same shape as a
	c := mk("aws", "us-west-2", "p5", pricing.Spot, 40)
	c.GPUModel, c.GPUMemGiB = "H100", 80
	write := func(h int, offers ...pricing.Offer) {
		t.Helper()
		if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: observed(at(h), offers...), Finished: at(h)}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, wantShapes int) {
		t.Helper()
		var bad, n int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM offers o LEFT JOIN shapes s ON s.id = o.shape_id
			WHERE s.id IS NULL OR s.provider != o.provider OR s.instance_type != o.instance_type OR s.purchase != o.purchase
			OR s.gpu_model != o.gpu_model COLLATE BINARY OR s.gpu_count != o.gpu_count OR s.gpu_mem_gib != o.gpu_mem_gib
			OR s.vcpus != o.vcpus OR s.ram_gib != o.ram_gib`).Scan(&bad); err != nil {
			t.Fatal(err)
		}
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM shapes`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if bad != 0 || n != wantShapes {
			t.Errorf("%s: %d offers with a wrong shape, %d shapes (want 0, %d)", when, bad, n, wantShapes)
		}
		// Each shape's copy of its cheapest current offer is that offer.
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM shapes s WHERE s.c_price IS NOT (SELECT min(price) FROM offers
			WHERE shape_id = s.id AND price IS NOT NULL) OR s.c_region IS NOT (SELECT region FROM offers WHERE shape_id = s.id
			AND price IS NOT NULL ORDER BY price, region, zone LIMIT 1)`).Scan(&bad); err != nil {
			t.Fatal(err)
		}
		if bad != 0 {
			t.Errorf("%s: %d shapes whose cheapest-offer copy is wrong", when, bad)
		}
	}
	write(0, a, b, c)
	check("first write", 2)
	a.RAMGiB = 2048 // a corrected fact moves a to a new shape
	write(1, a, b, c)
	check("fact changed", 3)
	write(2, a) // b and c closed
	check("closed", 3)
	if _, err := s.Prune(ctx, at(100)); err != nil {
		t.Fatal(err)
	}
	check("pruned", 1)
}

// TestReadShapesAll: asking every shape for everything gives exactly Offers' answer (the
// same offers in the same order); asking nothing more gives each shape's cheapest.
func TestReadShapesAll(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	offers := syntheticOffers("aws", 3000, at(0))
	for i := range offers { // fewer shapes than offers, and price ties
		offers[i].InstanceType = "type-" + offers[i].GPUModel + "-" + ftoa(offers[i].GPUCount)
		offers[i].Zone = offers[i].Region + "-" + ftoa(float64(i%7))
		offers[i].PriceUSDHr = math.Round(offers[i].PriceUSDHr)/4 + 0.25
	}
	seen := map[pricing.Key]bool{}
	var uniq []pricing.Offer
	for _, o := range offers {
		if !seen[o.Key()] {
			seen[o.Key()] = true
			uniq = append(uniq, o)
		}
	}
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: uniq, Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	for i, cache := range []bool{false, true, false, true} {
		if cache {
			s.CacheOffers(100_000)
		}
		s.UseImage(i < 2) // the offers image, then the tables
		for _, q := range []Query{{}, {Purchase: pricing.Spot, Regions: []string{"R03", "r04"}}, {GPUModels: []string{"h100"}, MaxPriceUSDHr: 30}, {MinVRAMGiB: 24}} {
			want, err := s.queryOffers(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var shapes int
			all, err := s.ReadShapes(ctx, q, func(cheapest []pricing.Offer, _ [][]pricing.Offer, _ []bool) ([]ShapeNeed, error) {
				shapes = len(cheapest)
				return needEvery(len(cheapest), len(want)), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(all, want) {
				t.Errorf("cache %v, %+v: ReadShapes asking everything gave %d offers, Offers %d", cache, q, len(all), len(want))
			}
			wantCounts, models := map[string]int{}, []string{}
			for _, o := range want {
				if wantCounts[o.GPUModel] == 0 {
					models = append(models, o.GPUModel)
				}
				wantCounts[o.GPUModel]++
			}
			counts, err := s.CountByGPU(ctx, q, append(models, "no-such-gpu"))
			if err != nil || !reflect.DeepEqual(counts, wantCounts) {
				t.Errorf("cache %v, %+v: CountByGPU = %v, %v; want %v", cache, q, counts, err, wantCounts)
			}
			cheapest, err := s.ReadShapes(ctx, q, func(c []pricing.Offer, _ [][]pricing.Offer, _ []bool) ([]ShapeNeed, error) { return nil, nil })
			if err != nil {
				t.Fatal(err)
			}
			if len(cheapest) != shapes || shapes == 0 || shapes > len(want) || (q.Purchase == "" && shapes >= len(want)) {
				t.Errorf("cache %v, %+v: %d cheapest-of-shape offers, %d shapes, %d offers", cache, q, len(cheapest), shapes, len(want))
			}
		}
	}
}

// needEvery asks each of n shapes for more offers than the want the query matches: a
// planner reading everything.
func needEvery(n, want int) []ShapeNeed {
	needs := make([]ShapeNeed, n)
	for i := range needs {
		needs[i] = ShapeNeed{Limit: want + 1}
	}
	return needs
}

// planRounds merges the further offers into the cheapest ones in store order, whether or
// not the cheapest come sorted: the result is every offer read, sorted, once each.
func TestPlanRoundsMergesInStoreOrder(t *testing.T) {
	offers := syntheticOffers("aws", 60, at(0))
	for i := range offers {
		offers[i].InstanceType = fmt.Sprintf("t%02d", i)
		offers[i].PriceUSDHr = float64(i%7) + 0.5 // ties: the key orders them
	}
	want := slices.Clone(offers)
	slices.SortFunc(want, storeOrder)
	for _, sortedReps := range []bool{true, false} {
		reps, rest := slices.Clone(want[:20]), slices.Clone(want[20:])
		if !sortedReps {
			slices.Reverse(reps)
		}
		got, err := planRounds(reps, func(cheapest []pricing.Offer, more [][]pricing.Offer, _ []bool) ([]ShapeNeed, error) {
			needs := make([]ShapeNeed, len(cheapest))
			needs[3] = ShapeNeed{Limit: 1 + len(rest)} // one shape holds every further offer
			return needs, nil
		}, func(asked, limits []int, _ []pricing.Offer, _ []float64) ([][]pricing.Offer, error) {
			return [][]pricing.Offer{rest}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("sorted cheapest %v: planRounds gave %d offers out of store order (want %d)", sortedReps, len(got), len(want))
		}
	}
}

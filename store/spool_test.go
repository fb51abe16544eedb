package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// dump is every row of the tables a refresh writes, in a canonical order, and the
// schema: two stores that hold the same rows dump equal.
func dump(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT 'schema', type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name`,
		`SELECT 'offer', id, provider, region, zone, instance_type, purchase, gpu_model, gpu_count, gpu_mem_gib, vcpus, ram_gib,
			currency, source, price, last_seen, shape_id FROM offers ORDER BY id`,
		`SELECT 'price', id, offer_id, price, valid_from, valid_to FROM prices ORDER BY id`,
		`SELECT 'shape', * FROM shapes ORDER BY id`,
		`SELECT 'seen', * FROM seen ORDER BY provider, region`,
		`SELECT 'run', id, provider, started, finished, status, error, offers_seen, prices_changed, offers_closed FROM refresh_runs ORDER BY id`,
	} {
		rows, err := s.db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(vals...))
		}
		rows.Close()
	}
	return out
}

// spoolWrite writes offers through a spool, split into parts of at most part offers.
func spoolWrite(t *testing.T, s *Store, provider string, offers []pricing.Offer, part int, in WriteInput) (WriteResult, error) {
	t.Helper()
	sp, err := s.NewSpool(provider)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for start := 0; start < len(offers); start += part {
		if err := sp.Add(slices.Clone(offers[start:min(start+part, len(offers))])); err != nil {
			t.Fatal(err)
		}
	}
	return s.WriteSpool(context.Background(), provider, sp, in)
}

// randomRefreshes is a history of refreshes of one provider over three regions: prices
// that move, offers that come and go, partial coverage, observed times set, unset or
// mixed.
func randomRefreshes(seed uint64, n int) []WriteInput {
	r := rand.New(rand.NewPCG(seed, seed))
	regions := []string{"r1", "r2", "r3"}
	var out []WriteInput
	for h := range n {
		var in WriteInput
		in.Finished = at(h + 1)
		in.Started = at(h)
		if r.IntN(3) == 0 {
			in.Regions = regions[:1+r.IntN(2)]
		}
		for _, region := range regions {
			for typ := range 12 {
				if r.IntN(5) == 0 {
					continue // not listed this time
				}
				o := mk("aws", region, fmt.Sprintf("t%02d", typ), pricing.OnDemand, float64(1+r.IntN(4)))
				if typ%3 == 0 {
					o.Purchase, o.Zone = pricing.Spot, region+"a"
				}
				switch r.IntN(4) {
				case 0: // unset: the refresh time
				case 1:
					o.ObservedAt = at(h).Add(-time.Duration(r.IntN(3)) * time.Minute)
				default:
					o.ObservedAt = at(h)
				}
				o.VCPUs = float64(8 * (1 + r.IntN(2))) // facts move too: a new shape
				in.Offers = append(in.Offers, o)
			}
		}
		out = append(out, in)
	}
	return out
}

// TestWriteSpoolSameAsWriteSnapshot: a history of refreshes written through spools (in
// parts of various sizes) leaves exactly the rows, ids included, that the same history
// written by WriteSnapshot leaves, and the same results.
func TestWriteSpoolSameAsWriteSnapshot(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		a, b := openTest(t), openTest(t)
		for i, in := range randomRefreshes(seed, 12) {
			ra, erra := a.WriteSnapshot(ctx, "aws", in)
			offers := in.Offers
			in.Offers = nil
			rb, errb := spoolWrite(t, b, "aws", offers, 1+int(seed)*5, in)
			if erra != nil || errb != nil {
				t.Fatalf("seed %d refresh %d: %v / %v", seed, i, erra, errb)
			}
			if ra != rb {
				t.Errorf("seed %d refresh %d: WriteSnapshot %+v, WriteSpool %+v", seed, i, ra, rb)
			}
		}
		da, db := dump(t, a), dump(t, b)
		if !slices.Equal(da, db) {
			t.Errorf("seed %d: rows differ:\nWriteSnapshot %d rows\nWriteSpool %d rows\nfirst difference: %s", seed, len(da), len(db), firstDiff(da, db))
		}
		if len(da) < 50 {
			t.Errorf("seed %d: only %d rows; the history wrote too little to compare", seed, len(da))
		}
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + "  vs  " + b[i]
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}

// TestWriteSpoolClosesOnlyCoveredRegions: offers missing from a spooled refresh are
// closed in the regions it covers; another region's current prices stay.
func TestWriteSpoolClosesOnlyCoveredRegions(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	first := observed(at(0),
		mk("aws", "r1", "a", pricing.OnDemand, 1), mk("aws", "r1", "b", pricing.OnDemand, 2),
		mk("aws", "r2", "a", pricing.OnDemand, 3), mk("aws", "r2", "b", pricing.OnDemand, 4))
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: first, Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	// r2 failed this time: only r1 covered, and r1 no longer lists b.
	r, err := spoolWrite(t, s, "aws", observed(at(1), mk("aws", "r1", "a", pricing.OnDemand, 1)), 1, WriteInput{Regions: []string{"r1"}, Finished: at(1)})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "closed", r.Closed, 1)
	got := current(t, s, Query{})
	want := map[string]float64{}
	for _, o := range first {
		if o.Region == "r1" && o.InstanceType == "b" {
			continue
		}
		want[o.Key().String()] = o.PriceUSDHr
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("current offers %v; want %v", got, want)
	}
}

// TestWriteSpoolRejects: a spooled refresh that lists an offer twice (within a part or
// across parts, new or stored) or carries another provider's offer writes nothing.
func TestWriteSpoolRejects(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	a := mk("aws", "r1", "a", pricing.OnDemand, 1)
	b := mk("aws", "r1", "b", pricing.OnDemand, 2)
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: []pricing.Offer{b}, Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	before := dump(t, s)
	for _, tt := range []struct {
		name   string
		offers []pricing.Offer
		part   int
		want   string
	}{
		{"new twice in a part", []pricing.Offer{a, a}, 2, "listed twice"},
		{"new twice across parts", []pricing.Offer{a, b, a}, 1, "listed twice"},
		{"stored twice", []pricing.Offer{b, b}, 1, "listed twice"},
		{"other provider", []pricing.Offer{a, mk("gcp", "r1", "x", pricing.OnDemand, 1)}, 1, `belongs to provider "gcp"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := spoolWrite(t, s, "aws", tt.offers, tt.part, WriteInput{Finished: at(1)})
			if pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want Invalid containing %q", err, tt.want)
			}
			if after := dump(t, s); !slices.Equal(before, after) {
				t.Errorf("a rejected write changed the store: %s", firstDiff(before, after))
			}
		})
	}
	sp, err := s.NewSpool("aws")
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if _, err := s.WriteSpool(ctx, "aws", sp, WriteInput{}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("empty spool: %v; want Invalid (an empty refresh would close every offer)", err)
	}
	if _, err := s.WriteSpool(ctx, "gcp", sp, WriteInput{}); err == nil {
		t.Error("aws's spool written as gcp's")
	}
}

// TestBulkWriteSameRows: a write large enough to rebuild the offers table's indexes
// (dropForBulk) leaves the same rows and schema as one that keeps them, and the
// query plans that name those indexes still work.
func TestBulkWriteSameRows(t *testing.T) {
	ctx := context.Background()
	defer func(v int) { bulkMinNew = v }(bulkMinNew)
	write := func(min int) (*Store, []string) {
		bulkMinNew = min
		s := openTest(t)
		if _, err := s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: syntheticOffers("lambda", 50, at(0)), Finished: at(0)}); err != nil {
			t.Fatal(err)
		}
		// 400 new offers over 50 stored rows: bulk when the threshold allows.
		if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: syntheticOffers("aws", 400, at(1)), Finished: at(1)}); err != nil {
			t.Fatal(err)
		}
		return s, dump(t, s)
	}
	_, kept := write(1 << 30)
	s, rebuilt := write(1)
	if !slices.Equal(kept, rebuilt) {
		t.Errorf("bulk write differs: %s", firstDiff(kept, rebuilt))
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'offers' AND sql IS NOT NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 8 {
		t.Errorf("%d named indexes on offers after a bulk write; want the schema's 8+", n)
	}
	for _, sort := range []Sort{SortPrice, SortPricePerGPU, SortPricePerGiB} {
		if _, err := s.Offers(ctx, Query{Sort: sort, Limit: 5}); err != nil {
			t.Errorf("%s query after a bulk write: %v", sort, err)
		}
	}
	// The threshold is what decides: a write of fewer new offers than stored keeps them.
	bulkMinNew = 1
	before := schemaVersion(t, s)
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: syntheticOffers("aws", 420, at(2)), Finished: at(2)}); err != nil {
		t.Fatal(err)
	}
	if schemaVersion(t, s) != before {
		t.Error("a write of 20 new offers over 450 stored rebuilt the indexes")
	}
	// …and one that brings more new offers than stored rebuilds them (the check sees it).
	if _, err := s.WriteSnapshot(ctx, "gcp", WriteInput{Offers: syntheticOffers("gcp", 500, at(2)), Finished: at(2)}); err != nil {
		t.Fatal(err)
	}
	if schemaVersion(t, s) == before {
		t.Error("a write of 500 new offers over 470 stored kept the indexes")
	}
}

func schemaVersion(t *testing.T, s *Store) int {
	t.Helper()
	var v int
	if err := s.db.QueryRow(`PRAGMA schema_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSpoolLeavesNoFile: the spool lives in the temporary directory and nothing of it
// stays there once closed (on Unix its name is gone from the start).
func TestSpoolLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	s := openTest(t)
	sp, err := s.NewSpool("aws")
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Add([]pricing.Offer{mk("aws", "r1", "a", pricing.OnDemand, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteSpool(context.Background(), "aws", sp, WriteInput{Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sp.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("spool left %v in the temporary directory", left)
	}
	if _, err := s.WriteSpool(context.Background(), "aws", sp, WriteInput{}); err == nil {
		t.Error("a closed spool was written")
	}
}

// TestBulkMidWriteSameRows: a write that turns out to change most prices drops the
// indexes part-way (bulkIndexes.consider after 1,024 written rows) and leaves the same
// rows as one that keeps them.
func TestBulkMidWriteSameRows(t *testing.T) {
	ctx := context.Background()
	defer func(v int) { bulkMinNew = v }(bulkMinNew)
	write := func(min int) (rows []string, rebuilt bool) {
		bulkMinNew = 1 << 30
		s := openTest(t)
		offers := syntheticOffers("aws", 3000, at(0))
		if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Finished: at(0)}); err != nil {
			t.Fatal(err)
		}
		for i := range offers {
			offers[i].PriceUSDHr *= 1.5
			offers[i].ObservedAt = at(1)
		}
		bulkMinNew = min
		before := schemaVersion(t, s)
		r, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Finished: at(1)})
		if err != nil {
			t.Fatal(err)
		}
		if r.Changed != 3000 {
			t.Fatalf("%+v; want every price changed", r)
		}
		return dump(t, s), schemaVersion(t, s) != before
	}
	kept, keptRebuilt := write(1 << 30)
	got, rebuilt := write(1000)
	if keptRebuilt || !rebuilt {
		t.Errorf("indexes rebuilt: %v with the threshold out of reach, %v within it; want false, true", keptRebuilt, rebuilt)
	}
	if !slices.Equal(kept, got) {
		t.Errorf("rows differ: %s", firstDiff(kept, got))
	}
}

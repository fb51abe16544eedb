package store

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// checkFacts asserts the fit-fact sets' invariants against the offers and shapes as
// stored: every shape's class is its recommend.FactsKey, every current offer is in the
// set of its shape's class and its host's CUDA class, every set's row holds a copy of its
// cheapest current offer in store order, its host facts included (read without the sets'
// index), and the sets
// are ready for readers.
func checkFacts(t *testing.T, s *Store, when string) {
	t.Helper()
	ctx := context.Background()
	rows, err := s.db.QueryContext(ctx, `SELECT s.provider, s.instance_type, s.purchase, s.gpu_model, s.gpu_count, s.gpu_mem_gib, s.vcpus, s.ram_gib,
		coalesce(c.key, '') FROM shapes s LEFT JOIN fact_classes c ON c.id = s.class_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var sh pricing.Shape
		var key string
		if err := rows.Scan(&sh.Provider, &sh.InstanceType, &sh.Purchase, &sh.GPUModel, &sh.GPUCount, &sh.GPUMemGiB, &sh.VCPUs, &sh.RAMGiB, &key); err != nil {
			t.Fatal(err)
		}
		if want := recommend.FactsKey(sh); key != want {
			t.Errorf("%s: shape %+v is in class %q, want %q", when, sh, key, want)
		}
	}
	rows.Close()
	var misplaced, wrongCheapest int
	class, args := cudaClassSQL("o.host_max_cuda")
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM offers o NOT INDEXED JOIN shapes s ON s.id = o.shape_id
		LEFT JOIN facts f ON f.id = o.facts_id WHERE o.price IS NOT NULL AND (f.id IS NULL OR f.class_id IS NOT s.class_id
		OR f.max_cuda != `+class+` OR f.provider != s.provider OR f.purchase != s.purchase OR f.gpu_model != s.gpu_model
		OR f.gpu_count != s.gpu_count OR f.gpu_mem_gib != s.gpu_mem_gib)`, args...).Scan(&misplaced); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM facts f LEFT JOIN offers o ON o.id = (SELECT id FROM offers NOT INDEXED
		WHERE facts_id = f.id AND price IS NOT NULL ORDER BY price, region, zone, instance_type LIMIT 1)
		WHERE (f.c_price, f.c_region, f.c_zone, f.c_instance_type, f.c_vcpus, f.c_currency, f.c_source, f.c_last_seen, f.ram_gib, `+factsHostCopy+`, f.c_count)
			IS NOT (o.price, o.region, o.zone, o.instance_type, o.vcpus, o.currency, o.source, o.last_seen, coalesce(o.ram_gib, f.ram_gib), `+hostCols("o")+`,
				(SELECT count(*) FROM offers NOT INDEXED WHERE facts_id = f.id AND price IS NOT NULL))`).Scan(&wrongCheapest); err != nil {
		t.Fatal(err)
	}
	if misplaced > 0 || wrongCheapest > 0 {
		t.Errorf("%s: %d current offers outside their set, %d sets with a wrong cheapest offer", when, misplaced, wrongCheapest)
	}
	if ok, err := factsReady(ctx, s.db); err != nil || !ok {
		t.Errorf("%s: sets not ready (%v)", when, err)
	}
}

// TestFactsFollowOffers: the sets follow the offers through inserts, price and fact
// changes, closing and reopening, a host's new CUDA ceiling, and a reclassification
// when the stored rules are not this picker's.
func TestFactsFollowOffers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	host := func(region, typ string, price, cuda float64) pricing.Offer {
		o := mk("vast", region, typ, pricing.OnDemand, price)
		o.GPUModel, o.GPUCount, o.GPUMemGiB, o.RAMGiB, o.VCPUs = "RTX4090", 1, 24, 64, float64(8+len(typ))
		o.Host.MaxCUDA = cuda
		return o
	}
	write := func(h int, offers ...pricing.Offer) {
		t.Helper()
		if _, err := s.WriteSnapshot(ctx, "vast", WriteInput{Offers: observed(at(h), offers...), Finished: at(h)}); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := host("us", "1x_RTX4090_m1", 0.4, 12.2), host("eu", "1x_RTX4090_m2", 0.3, 12.2), host("us", "1x_RTX4090_m3", 0.35, 12.8)
	pcie := host("us", "1x_RTX4090_PCIE_m4", 0.2, 12.2)
	d := host("eu", "1x_RTX4090_m5", 0.45, 12.4) // another ceiling of a's CUDA class
	write(1, a, b, c, pcie, d)
	checkFacts(t, s, "first write")
	var sets int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM facts").Scan(&sets); err != nil || sets != 3 {
		t.Errorf("5 hosts (three alike, two of them by CUDA class, one of another class, one PCIe) in %d sets (%v), want 3", sets, err)
	}
	b.PriceUSDHr = 0.5    // a's the cheapest of their set now
	c.Host.MaxCUDA = 12.2 // c joins a and b
	pcie.RAMGiB = 128     // another shape, another class
	write(2, a, b, c, pcie)
	checkFacts(t, s, "facts changed")
	write(3, b, pcie) // a and c close
	checkFacts(t, s, "offers closed")
	write(4, a, b, c, pcie)
	checkFacts(t, s, "offers reopened")
	if _, err := s.db.ExecContext(ctx, "UPDATE facts_meta SET version = 'other rules'"); err != nil {
		t.Fatal(err)
	}
	if ok, err := factsReady(ctx, s.db); err != nil || ok {
		t.Errorf("sets of other rules read as ready (%v)", err)
	}
	aws := mk("aws", "us-east-1", "p4d.24xlarge", pricing.OnDemand, 32)
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: observed(at(5), aws), Finished: at(5)}); err != nil {
		t.Fatal(err)
	}
	checkFacts(t, s, "another provider's write under new rules")
}

// TestFactsQueryPlans pins the plans of the reads by set, as TestShapeQueryPlans does
// for shapes: the facts table is the only table scanned, offers are reached through
// offers_current_facts or by primary key, and nothing is sorted in a temporary tree.
func TestFactsQueryPlans(t *testing.T) {
	s := openTest(t)
	for _, q := range []Query{
		{},
		{Purchase: pricing.OnDemand, MaxGPUs: 8, ExcludeFractional: true, GPUModels: []string{"h100"}},
		{Providers: []string{"vast"}, Regions: []string{"us", "eu"}, MaxPriceUSDHr: 5, MinVRAMGiB: 40},
	} {
		query, args, err := cheapestPerFactsSQL(q)
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(explain(t, s, query, args), "\n")
		wants := []string{" s", "SEARCH offers USING COVERING INDEX offers_current_facts (facts_id=?", "SEARCH o USING INTEGER PRIMARY KEY (rowid=?)"}
		if len(q.Regions) == 0 && q.MaxPriceUSDHr == 0 {
			wants = []string{"SCAN s", "SEARCH seen USING PRIMARY KEY (provider=? AND region=?)"} // the rows' copies
			if strings.Contains(joined, "offers") {
				t.Errorf("cheapest per set %+v reads offers:\n%s", q, joined)
			}
		}
		for _, want := range wants {
			if !strings.Contains(joined, want) {
				t.Errorf("cheapest per set %+v: plan lacks %q:\n%s", q, want, joined)
			}
		}
		for _, bad := range []string{"SCAN o", "SCAN offers", "TEMP B-TREE"} {
			if strings.Contains(joined, bad) {
				t.Errorf("cheapest per set %+v: plan has %q:\n%s", q, bad, joined)
			}
		}
		query, args, err = groupOffersSQL(q, byFacts)
		if err != nil {
			t.Fatal(err)
		}
		joined = strings.Join(explain(t, s, query, append(append([]any{`[[1,10,1,"r","","t"],[3,1e308,2,"","",""]]`}, args...), 10)), "\n")
		want := "SEARCH offers USING COVERING INDEX offers_current_facts (facts_id=? AND (price,region,zone,instance_type)>(?,?,?,?) AND price<?)"
		if !strings.Contains(joined, want) || strings.Contains(joined, "TEMP B-TREE") || strings.Contains(joined, "SCAN o") {
			t.Errorf("set offers %+v: plan lacks %q, or sorts or scans:\n%s", q, want, joined)
		}
	}
}

// TestFactsImageReadsAsTable: the first read by set from the facts image returns what
// the facts table's does, across the shape filters, and a write that moves a price
// leaves no stale image behind.
func TestFactsImageReadsAsTable(t *testing.T) {
	defer func(n int) { imageMaxOffers = n }(imageMaxOffers)
	imageMaxOffers = 0 // no offers image: the facts image is the first read
	ctx := context.Background()
	s := openTest(t)
	var offers []pricing.Offer
	for i, g := range []string{"H100", "A100", "RTX4090", "L4", "Mystery-GPU"} {
		for k := range 40 {
			o := mk("vast", []string{"us", "eu", "asia"}[k%3], g+"-m"+string(rune('a'+k)), []pricing.Purchase{pricing.OnDemand, pricing.Spot}[k%2], float64(1+(k*7+i)%13)/4)
			o.GPUModel, o.GPUCount, o.GPUMemGiB, o.RAMGiB = g, []float64{0.5, 1, 2, 8}[k%4], 24+float64(i*8), float64(int(64)<<(k%3))
			offers = append(offers, o)
		}
	}
	queries := []Query{{}, {Purchase: pricing.Spot}, {GPUModels: []string{"h100", "l4"}}, {Providers: []string{"VAST"}, MaxGPUs: 2},
		{ExcludeFractional: true, MinVRAMGiB: 30}, {MinTotalVRAMGiB: 100}}
	compare := func(when string) {
		t.Helper()
		for _, q := range queries {
			img, ok, err := s.cheapestFromImage(ctx, s.db, q)
			if err != nil || !ok {
				t.Fatalf("%s %+v: no facts image (%v)", when, q, err)
			}
			query, args, err := cheapestPerFactsSQL(q)
			if err != nil {
				t.Fatal(err)
			}
			table, err := s.scanShapeOffers(ctx, s.db, q, query, args)
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(table, func(a, b shapeOffer) int { return offerOrder(&a.Offer, &b.Offer) })
			if len(table) == 0 || !reflect.DeepEqual(img, table) {
				t.Errorf("%s %+v: from the image\n%+v\nfrom the table\n%+v", when, q, img, table)
			}
		}
	}
	if _, err := s.WriteSnapshot(ctx, "vast", WriteInput{Offers: observed(at(1), offers...), Finished: at(1)}); err != nil {
		t.Fatal(err)
	}
	compare("first write")
	offers[0].PriceUSDHr, offers[7].PriceUSDHr = 0.01, 99
	if _, err := s.WriteSnapshot(ctx, "vast", WriteInput{Offers: observed(at(2), offers[:150]...), Finished: at(2)}); err != nil {
		t.Fatal(err)
	}
	compare("prices moved, offers closed")
}

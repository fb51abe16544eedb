package store

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// imageStore writes a few providers' synthetic offers (shared shapes, price ties,
// fractional slices, spot and on-demand) and returns the store.
func imageStore(t testing.TB, r *rand.Rand) *Store {
	t.Helper()
	ctx := context.Background()
	s := openTest(t)
	for _, prov := range []string{"aws", "gcp", "runpod"} {
		offers := syntheticOffers(prov, 400+r.IntN(400), at(0))
		seen := map[pricing.Key]bool{}
		var uniq []pricing.Offer
		for i, o := range offers {
			o.InstanceType = "type-" + o.GPUModel + "-" + ftoa(o.GPUCount)
			o.Zone = []string{"", o.Region + "-a", o.Region + "-b"}[i%3]
			o.PriceUSDHr = math.Round(o.PriceUSDHr)/4 + 0.25
			if i%11 == 0 {
				o.GPUCount = 0.5
			}
			if !seen[o.Key()] {
				seen[o.Key()] = true
				uniq = append(uniq, o)
			}
		}
		if _, err := s.WriteSnapshot(ctx, prov, WriteInput{Offers: uniq, Finished: at(r.IntN(5))}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestImageMatchesTables: over random queries and random plans, ReadShapes and
// CountByGPU answer from the offers image exactly as from the tables.
func TestImageMatchesTables(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 7))
	s := imageStore(t, r)
	if img, ok, err := s.image(ctx); err != nil || !ok || img.n == 0 {
		t.Fatalf("no current image after the writes: %v, %v", ok, err)
	}
	pick := func(vals ...[]string) []string {
		if r.IntN(3) > 0 {
			return nil
		}
		return vals[r.IntN(len(vals))]
	}
	for i := range 200 {
		q := Query{
			Providers: pick([]string{"aws"}, []string{" GCP", "runpod"}),
			Regions:   pick([]string{"R01"}, []string{"r02", "R05 "}),
			GPUModels: pick([]string{"h100"}, []string{"A100-SXM4-80GB", "L4"}),
		}
		if r.IntN(3) == 0 {
			q.Purchase = []pricing.Purchase{pricing.Spot, pricing.OnDemand, "any"}[r.IntN(3)]
		}
		if r.IntN(3) == 0 {
			q.MinVRAMGiB = float64(8 * (1 + r.IntN(10)))
		}
		if r.IntN(4) == 0 {
			q.MinTotalVRAMGiB = float64(40 * (1 + r.IntN(8)))
		}
		if r.IntN(4) == 0 {
			q.MinVRAMGB = float64(8 * (1 + r.IntN(12)))
		}
		if r.IntN(6) == 0 {
			q.MinTotalVRAMGB = float64(40 * (1 + r.IntN(16)))
		}
		if r.IntN(3) == 0 {
			q.MaxPriceUSDHr = float64(1 + r.IntN(40))
		}
		if r.IntN(3) == 0 {
			q.MaxGPUs = float64(1 + r.IntN(8))
		}
		q.ExcludeFractional = r.IntN(3) == 0
		// A random plan: some shapes asked for more, up to a random price.
		seed := r.Uint64()
		plan := func(cheapest []pricing.Offer, _ [][]pricing.Offer, _ []bool) ([]ShapeNeed, error) {
			pr := rand.New(rand.NewPCG(seed, 1))
			needs := make([]ShapeNeed, len(cheapest))
			for j, c := range cheapest {
				if pr.IntN(2) == 0 {
					needs[j] = ShapeNeed{Limit: 1 + pr.IntN(12), MaxPrice: []float64{0, math.Inf(1), c.PriceUSDHr * (1 + pr.Float64())}[pr.IntN(3)]}
				}
			}
			return needs, nil
		}
		answer := func(image bool) ([]pricing.Offer, map[string]int) {
			s.UseImage(image)
			got, err := s.ReadShapes(ctx, q, plan)
			if err != nil {
				t.Fatal(err)
			}
			counts, err := s.CountByGPU(ctx, q, []string{"H100", "A100-80GB", "L4", "T4"})
			if err != nil {
				t.Fatal(err)
			}
			return got, counts
		}
		fromImage, imageCounts := answer(true)
		fromTables, tableCounts := answer(false)
		if !reflect.DeepEqual(fromImage, fromTables) {
			t.Fatalf("query %d %+v: image gave %d offers, tables %d", i, q, len(fromImage), len(fromTables))
		}
		// A planner that asks in rounds (two offers of each shape, then, having seen
		// them, the plan's own) reads what the plan asks in one round, on both paths.
		rounds := 0
		inRounds := func(cheapest []pricing.Offer, more [][]pricing.Offer, _ []bool) ([]ShapeNeed, error) {
			rounds++
			if more == nil {
				needs := make([]ShapeNeed, len(cheapest))
				for j := range needs {
					needs[j] = ShapeNeed{Limit: 2}
				}
				return needs, nil
			}
			return plan(cheapest, nil, nil)
		}
		for _, image := range []bool{true, false} {
			s.UseImage(image)
			got, err := s.ReadShapes(ctx, q, inRounds)
			if err != nil {
				t.Fatal(err)
			}
			// Every offer the plan reads in one round is read (the two-offer probe may
			// add a second offer of a shape the plan does not ask more of).
			for _, w := range fromTables {
				if !slices.ContainsFunc(got, func(o pricing.Offer) bool { return w.Key() == o.Key() }) {
					t.Fatalf("query %d, image %v: reading in rounds lost %s", i, image, w.Key())
				}
			}
			if !slices.IsSortedFunc(got, storeOrder) {
				t.Fatalf("query %d, image %v: rounds' offers out of store order", i, image)
			}
		}
		if rounds < 2 && len(fromTables) > 0 {
			t.Fatalf("query %d: the planner was called %d times; want a second round", i, rounds)
		}
		if !reflect.DeepEqual(imageCounts, tableCounts) {
			t.Fatalf("query %d %+v: counts from the image %v, from the tables %v", i, q, imageCounts, tableCounts)
		}
	}
}

// TestImageLifecycle: each write rebuilds the image; a failed run leaves it current; a
// successful run it did not see (an older picker's write) makes readers use the
// tables until the next write; a catalogue over imageMaxOffers keeps none.
func TestImageLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	current := func() int {
		t.Helper()
		img, ok, err := s.image(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return -1
		}
		return img.n
	}
	offers := []pricing.Offer{mk("aws", "us-east-1", "p4d", pricing.OnDemand, 32), mk("aws", "us-west-2", "p4d", pricing.OnDemand, 33)}
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Finished: at(1)}); err != nil {
		t.Fatal(err)
	}
	if n := current(); n != 2 {
		t.Fatalf("after a write the image holds %d offers, want 2", n)
	}
	if err := s.RecordFailure(ctx, "gcp", at(2), at(2), context.DeadlineExceeded); err != nil {
		t.Fatal(err)
	}
	if n := current(); n != 2 {
		t.Fatalf("after a failed run the image holds %d offers (-1: not current), want 2", n)
	}
	if _, err := s.db.ExecContext(ctx, "INSERT INTO refresh_runs (provider, started, finished, status) VALUES ('lambda', 1, 1, 'ok')"); err != nil {
		t.Fatal(err)
	}
	if n := current(); n != -1 {
		t.Fatalf("after a write the image did not see, it is still used (%d offers)", n)
	}
	got, err := s.ReadShapes(ctx, Query{}, func(c []pricing.Offer, _ [][]pricing.Offer, _ []bool) ([]ShapeNeed, error) { return nil, nil })
	if err != nil || len(got) != 1 {
		t.Fatalf("ReadShapes from the tables: %d offers, %v; want the one shape's cheapest", len(got), err)
	}
	offers = append(offers, mk("aws", "eu-west-1", "p5", pricing.Spot, 40))
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Finished: at(3)}); err != nil {
		t.Fatal(err)
	}
	if n := current(); n != 3 {
		t.Fatalf("after the next write the image holds %d offers, want 3", n)
	}

	defer func(n int) { imageMaxOffers = n }(imageMaxOffers)
	imageMaxOffers = 2
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Finished: at(4)}); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM offers_image").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("3 offers over a limit of 2: %d image rows, %v; want none", rows, err)
	}
}

// TestImageCodec: encode then decode gives the offers back (usable memory applied as
// the tables' reads apply it); truncated or foreign data is refused, never misread.
func TestImageCodec(t *testing.T) {
	var in []shapeOffer
	ids := map[pricing.Shape]int64{} // as the shapes table numbers them: one id per shape
	for i, o := range syntheticOffers("aws", 600, at(2)) {
		o.Zone = []string{"", "z"}[i%2]
		o.InstanceType = "type-" + o.GPUModel + "-" + ftoa(o.GPUCount) // fewer shapes than offers
		id, ok := ids[o.Shape()]
		if !ok {
			id = int64(100 + len(ids))
			ids[o.Shape()] = id
		}
		in = append(in, shapeOffer{id, o})
	}
	data := encodeImage(in)
	img, err := decodeImage(data)
	if err != nil {
		t.Fatal(err)
	}
	if img.n != len(in) || len(img.shapes) != len(ids) || len(ids) >= len(in) {
		t.Fatalf("decoded %d offers of %d shapes, want %d of %d (fewer than offers)", img.n, len(img.shapes), len(in), len(ids))
	}
	i := 0
	img.each(func(r *imageRow) {
		want := in[i].Offer.WithUsableMemory()
		sh := img.shapes[r.shape]
		if got := img.offer(r); sh.id != in[i].shape || !reflect.DeepEqual(got, want) || sh.mem != in[i].GPUMemGiB {
			t.Fatalf("offer %d: decoded shape %d %+v (stored memory %v), want shape %d %+v", i, sh.id, got, sh.mem, in[i].shape, want)
		}
		i++
	})
	for _, bad := range [][]byte{nil, {imageFormat + 1}, data[:len(data)-1], append(append([]byte(nil), data...), 0)} {
		if _, err := decodeImage(bad); err == nil {
			t.Errorf("decodeImage accepted %d bytes of malformed data", len(bad))
		}
	}
}

// BenchmarkReadShapesImage: recommend's reads (ReadShapes asking 80 shapes for up to
// 80 more offers, as recommend.ShapePlan may for --top 10, then CountByGPU) over a ~2k-offer
// catalogue, from the offers image as a one-shot command reads it (nothing decoded
// yet), from the image as the daemon holds it, and from the tables.
func BenchmarkReadShapesImage(b *testing.B) {
	ctx := context.Background()
	s := imageStore(b, rand.New(rand.NewPCG(5, 7)))
	plan := func(cheapest []pricing.Offer, _ [][]pricing.Offer, _ []bool) ([]ShapeNeed, error) {
		needs := make([]ShapeNeed, len(cheapest))
		for i := range min(80, len(needs)) {
			needs[i] = ShapeNeed{Limit: 80, MaxPrice: math.Inf(1)}
		}
		return needs, nil
	}
	q := Query{Purchase: pricing.OnDemand}
	for _, tt := range []struct {
		name  string
		image bool
		cold  bool
	}{{"image-cold", true, true}, {"image-held", true, false}, {"tables", false, false}} {
		b.Run(tt.name, func(b *testing.B) {
			s.UseImage(tt.image)
			n := 0
			for b.Loop() {
				if tt.cold {
					s.img = imageCache{}
				}
				out, err := s.ReadShapes(ctx, q, plan)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.CountByGPU(ctx, q, []string{"H100", "T4"}); err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.ReportMetric(float64(n), "offers")
		})
	}
}

package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// TestUnchangedOffersAreNotRewritten: a refresh that sees the same prices and facts,
// observed at a new time, updates no offer row; the offers read back carry the new time.
func TestUnchangedOffersAreNotRewritten(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	offers := syntheticOffers("aws", 2000, time.Time{})
	if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: observed(at(0), offers...), Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE updates (n INTEGER);
		CREATE TRIGGER count_updates AFTER UPDATE ON offers BEGIN INSERT INTO updates VALUES (1); END`); err != nil {
		t.Fatal(err)
	}
	offers[7].PriceUSDHr *= 2 // one price change: one row rewritten
	r, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: observed(at(5), offers...), Finished: at(5)})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM updates").Scan(&n); err != nil {
		t.Fatal(err)
	}
	equal(t, "unchanged", r.Unchanged, 1999)
	equal(t, "offer rows rewritten", n, 1)
	got, err := s.Offers(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range got {
		if !o.ObservedAt.Equal(at(5)) {
			t.Fatalf("%s observed %v; want %v", o.Key(), o.ObservedAt, at(5))
		}
	}
}

// TestObservedTimesExact: over random refreshes (uniform and mixed observed times, dates
// going backwards, partial regions, price changes, closing and reopening), every current
// offer's observed time is what rewriting every row would have stored: the newest time
// it was listed at since its price interval opened, or the interval's start.
func TestObservedTimesExact(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	r := rand.New(rand.NewPCG(7, 7))
	regions := []string{"r1", "r2", "r3"}
	type model struct {
		price    float64
		last, vf int64
		open     bool
	}
	want := map[pricing.Key]*model{}
	for round := range 40 {
		fin := at(10 * round)
		var covered []string
		if r.IntN(3) == 0 {
			covered = []string{regions[r.IntN(3)]}
		}
		var offers []pricing.Offer
		for _, reg := range regions {
			mode := r.IntN(3) // 0 uniform, 1 mixed, 2 unset (the refresh time)
			base := at(10*round - 15 + r.IntN(20))
			for i := range 6 {
				if r.IntN(5) == 0 {
					continue // not listed this time
				}
				o := mk("aws", reg, fmt.Sprintf("t%d", i), pricing.OnDemand, float64(10+r.IntN(3)))
				switch mode {
				case 0:
					o.ObservedAt = base
				case 1:
					o.ObservedAt = base.Add(time.Duration(r.IntN(5)) * time.Hour)
				}
				offers = append(offers, o)
			}
		}
		if len(offers) == 0 {
			continue
		}
		if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Regions: covered, Finished: fin}); err != nil {
			t.Fatal(err)
		}
		listed := map[pricing.Key]bool{}
		for _, o := range offers {
			obs := unix(fin)
			if !o.ObservedAt.IsZero() {
				obs = unix(o.ObservedAt)
			}
			k := o.Key()
			listed[k] = true
			m := want[k]
			switch {
			case m == nil || !m.open:
				want[k] = &model{price: o.PriceUSDHr, last: obs, vf: obs, open: true}
			case m.price != o.PriceUSDHr:
				m.vf = max(obs, m.vf)
				m.last, m.price = m.vf, o.PriceUSDHr
			default:
				m.last = max(m.last, obs)
			}
		}
		for k, m := range want {
			if m.open && !listed[k] && (covered == nil || k.Region == covered[0]) {
				m.open = false
			}
		}
		got, err := s.Offers(ctx, Query{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range want {
			if m.open {
				n++
			}
		}
		if len(got) != n {
			t.Fatalf("round %d: %d current offers; want %d", round, len(got), n)
		}
		for _, o := range got {
			m := want[o.Key()]
			if m == nil || !m.open || unix(o.ObservedAt) != m.last || o.PriceUSDHr != m.price {
				t.Fatalf("round %d: %s observed %v at $%v; want %+v", round, o.Key(), o.ObservedAt, o.PriceUSDHr, m)
			}
		}
	}
}

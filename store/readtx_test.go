package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// TestReadShapesOneSnapshot: ReadShapes' statements (the first read and every further
// round) read one snapshot, on prepared statements (readtx.go). The planner's first
// call commits a refresh doubling every price before the further reads run: they must
// still see the snapshot of the first read, whole; the next ReadShapes sees the
// refresh, whole. Statements that each took their own snapshot would mix the two; a
// round's cursor out of store order would read some offers twice (more than there are).
func TestReadShapesOneSnapshot(t *testing.T) {
	for _, cache := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t)
			s.UseImage(false) // the tables' reads, several statements
			if cache {
				s.CacheOffers(1 << 20)
			}
			offers, doubled := writeDoubled(t, s, 600)
			refreshed := false
			// Every group asked for everything, in two rounds (2, then the rest).
			plan := func(cheapest []pricing.Offer, more [][]pricing.Offer, _ []bool) ([]ShapeNeed, error) {
				if !refreshed {
					refreshed = true
					if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: doubled, Finished: at(1)}); err != nil {
						return nil, err
					}
				}
				needs := make([]ShapeNeed, len(cheapest))
				for i := range needs {
					needs[i].Limit = 1 << 20
					if more == nil {
						needs[i].Limit = 3
					}
				}
				return needs, nil
			}
			got, err := s.ReadShapes(ctx, Query{}, plan)
			if err != nil {
				t.Fatal(err)
			}
			if !refreshed {
				t.Fatal("the planner never ran")
			}
			if old, new := bySnapshot(got); old != len(offers) || new != 0 {
				t.Errorf("read across a refresh: %d offers of the first snapshot, %d of the refresh; want all %d of the first", old, new, len(offers))
			}
			got, err = s.ReadShapes(ctx, Query{}, plan)
			if err != nil {
				t.Fatal(err)
			}
			if old, new := bySnapshot(got); new != len(offers) || old != 0 {
				t.Errorf("read after the refresh: %d offers of the first snapshot, %d of the refresh; want all %d of the refresh", old, new, len(offers))
			}
		})
	}
}

// writeDoubled writes n synthetic offers observed at(0) (the first snapshot) and
// returns them and the refresh that doubles every price, for a caller to write at(1).
func writeDoubled(t *testing.T, s *Store, n int) (offers, doubled []pricing.Offer) {
	t.Helper()
	offers = syntheticOffers("aws", n, time.Time{})
	if _, err := s.WriteSnapshot(context.Background(), "aws", WriteInput{Offers: offers, Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	doubled = slices.Clone(offers)
	for i := range doubled {
		doubled[i].PriceUSDHr *= 2
	}
	return offers, doubled
}

// bySnapshot counts the offers of the first snapshot (at(0)) and of the refresh (at(1)).
func bySnapshot(got []pricing.Offer) (old, new int) {
	for _, o := range got {
		switch o.ObservedAt {
		case at(0):
			old++
		case at(1):
			new++
		}
	}
	return old, new
}

// TestPreparedStatementsBounded: past maxStmts texts the least recently used statement
// is evicted, and one evicted while a caller holds it still runs for that caller (it
// is closed after).
func TestPreparedStatementsBounded(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := pooled{s}
	one := func(query string, arg int) int {
		t.Helper()
		var n int
		if err := p.QueryRowContext(ctx, query, arg).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	held := "SELECT ? + 1000"
	if err := s.withStmt(ctx, held, func(st *sql.Stmt) {
		for k := range maxStmts + 10 {
			if got := one(fmt.Sprintf("SELECT ? + %d", k), 1); got != k+1 {
				t.Fatalf("SELECT 1 + %d = %d", k, got)
			}
		}
		if _, ok := s.stmts.m[held]; ok {
			t.Errorf("%q still cached after %d newer texts", held, maxStmts+10)
		}
		var n int
		if err := st.QueryRowContext(ctx, 1).Scan(&n); err != nil || n != 1001 {
			t.Errorf("evicted statement while held: %d, %v; want 1001", n, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if n := s.stmts.lru.Len(); n != maxStmts || len(s.stmts.m) != maxStmts {
		t.Errorf("cache holds %d (%d keyed) statements, want %d", n, len(s.stmts.m), maxStmts)
	}
	if got := one(held, 2); got != 1002 {
		t.Errorf("%q prepared again: %d, want 1002", held, got)
	}
	s.Close()
	if err := s.withStmt(ctx, held, func(*sql.Stmt) {}); err == nil {
		t.Error("a statement after Close: no error")
	}
}

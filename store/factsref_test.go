package store

import (
	"context"
	"strings"
	"testing"
)

// A reclassification deletes every fit-fact set and class (classifyFacts under new
// rules), and SQLite checks each deleted parent's foreign keys by looking its children
// up by the referencing column: those lookups search an index (0011), never scan the
// offers or shapes table once per set. The sets survive the reset: a write under other
// rules classifies every offer again.
func TestReclassifyLooksReferencesUp(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	for _, c := range []struct{ query, want string }{
		{"SELECT rowid FROM offers WHERE facts_id = ?", "SEARCH offers USING COVERING INDEX offers_facts_ref (facts_id=?)"},
		{"SELECT rowid FROM shapes WHERE class_id = ?", "SEARCH shapes USING COVERING INDEX shapes_class_ref (class_id=?)"},
	} {
		if plan := strings.Join(explain(t, s, c.query, []any{1}), "\n"); !strings.Contains(plan, c.want) {
			t.Errorf("%s: plan %q, want %q", c.query, plan, c.want)
		}
	}
	offers := marketOffers(2000)
	if _, err := s.WriteSnapshot(ctx, "vast", WriteInput{Offers: offers, Finished: at(0)}); err != nil {
		t.Fatal(err)
	}
	var sets int
	if err := s.db.QueryRow("SELECT count(*) FROM facts").Scan(&sets); err != nil || sets == 0 {
		t.Fatalf("%d sets, %v", sets, err)
	}
	if _, err := s.db.Exec("UPDATE facts_meta SET version = 'other rules'"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteSnapshot(ctx, "vast", WriteInput{Offers: offers, Finished: at(1)}); err != nil {
		t.Fatal(err)
	}
	var again, missing int
	if err := s.db.QueryRow("SELECT (SELECT count(*) FROM facts), (SELECT count(*) FROM offers WHERE price IS NOT NULL AND facts_id IS NULL)").Scan(&again, &missing); err != nil {
		t.Fatal(err)
	}
	if again != sets || missing != 0 {
		t.Errorf("after reclassifying: %d sets (was %d), %d current offers without one", again, sets, missing)
	}
	if ok, err := factsReady(ctx, s.db); err != nil || !ok {
		t.Errorf("facts ready %v, %v", ok, err)
	}
}

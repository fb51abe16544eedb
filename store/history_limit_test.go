package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestHistoryLimit: a HistoryQuery with Limit returns the Limit newest intervals, oldest
// first, the same as the tail of the unlimited answer (issue 30: a page read every
// interval of a GPU model, 1.6M of them).
func TestHistoryLimit(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for i := range 12 {
		at := t0.Add(time.Duration(i) * time.Hour)
		offers := observed(at, mk("aws", "us-east-1", "p4d.24xlarge", "on-demand", 30+float64(i)), mk("aws", "us-west-2", "p4d.24xlarge", "spot", 10+float64(i)))
		if _, err := s.WriteSnapshot(ctx, "aws", WriteInput{Offers: offers, Started: at, Finished: at}); err != nil {
			t.Fatal(err)
		}
	}
	q := HistoryQuery{GPUModel: "A100"}
	all := history(t, s, q)
	if len(all) != 24 {
		t.Fatalf("%d intervals; want 24", len(all))
	}
	q.Limit = 5
	got := history(t, s, q)
	if !slices.Equal(got, all[len(all)-5:]) {
		t.Errorf("Limit 5:\n%q\nwant the newest five, oldest first:\n%q", got, all[len(all)-5:])
	}
}

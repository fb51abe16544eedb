package providers

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// A Tracker reports every step in order, one at a time, with counts that add up, from
// any number of goroutines; without a progress function it does nothing.
func TestTracker(t *testing.T) {
	if NewTracker(context.Background(), "regions", 3) != nil || WantsProgress(context.Background()) {
		t.Fatal("a context without a progress function got a tracker")
	}
	var none *Tracker
	none.Page("r", 1) // a nil tracker is a no-op
	none.Done("r", 1)
	if ctx := WithProgress(context.Background(), nil); WantsProgress(ctx) {
		t.Error("WithProgress(nil) set a progress function")
	}

	for _, tt := range []struct {
		name                 string
		workers, pages, per  int
		wantDone, wantOffers int
	}{
		{"one region", 1, 3, 5, 1, 15},
		{"13 regions at once", 13, 4, 7, 13, 13 * 4 * 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var steps []Progress // unguarded: the tracker never reports two steps at once
			var inside atomic.Bool
			ctx := WithProgress(context.Background(), func(p Progress) {
				if !inside.CompareAndSwap(false, true) {
					t.Error("reports overlapped")
				}
				steps = append(steps, p)
				inside.Store(false)
			})
			if !WantsProgress(ctx) {
				t.Fatal("WantsProgress is false under WithProgress")
			}
			tr := NewTracker(ctx, "regions", tt.workers)
			var wg sync.WaitGroup
			for w := range tt.workers {
				wg.Go(func() {
					part := string(rune('a' + w))
					for range tt.pages {
						tr.Page(part, tt.per)
					}
					tr.Done(part, 0)
				})
			}
			wg.Wait()
			if want := 1 + tt.workers*(tt.pages+1); len(steps) != want {
				t.Fatalf("%d reports; want %d (the start, each page, each part done)", len(steps), want)
			}
			for i := 1; i < len(steps); i++ {
				if steps[i].Offers < steps[i-1].Offers || steps[i].Done < steps[i-1].Done || steps[i].Pages != steps[i-1].Pages+1 && steps[i].Done == steps[i-1].Done {
					t.Errorf("report %d %+v does not follow %+v by one step", i, steps[i], steps[i-1])
				}
			}
			last := steps[len(steps)-1]
			if last.Done != tt.wantDone || last.Offers != tt.wantOffers || last.Pages != tt.workers*tt.pages || last.Total != tt.workers || last.Unit != "regions" {
				t.Errorf("last report %+v; want %d/%d regions, %d pages, %d offers", last, tt.wantDone, tt.workers, tt.workers*tt.pages, tt.wantOffers)
			}
		})
	}
}

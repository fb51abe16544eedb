package providertest

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pickergpu/picker/providers"
)

// ProgressLog records the progress a fetch reports (providers.WithProgress), and
// whether two reports ever overlapped (the contract says they never do).
type ProgressLog struct {
	mu         sync.Mutex
	steps      []providers.Progress
	inCall     atomic.Bool
	overlapped atomic.Bool
}

// RecordProgress returns ctx with a progress function that records into the log.
func RecordProgress(ctx context.Context) (context.Context, *ProgressLog) {
	l := &ProgressLog{}
	return providers.WithProgress(ctx, func(p providers.Progress) {
		if !l.inCall.CompareAndSwap(false, true) {
			l.overlapped.Store(true)
		}
		defer l.inCall.Store(false)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.steps = append(l.steps, p)
	}), l
}

// Steps are the reports, in order.
func (l *ProgressLog) Steps() []providers.Progress {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.steps)
}

// DoneParts are the parts in the order the reports said they completed.
func (l *ProgressLog) DoneParts() []string {
	var out []string
	prev := providers.Progress{}
	for _, s := range l.Steps() {
		if s.Done > prev.Done {
			out = append(out, s.Part)
		}
		prev = s
	}
	return out
}

// Pages is how many pages the reports said each part had.
func (l *ProgressLog) Pages() map[string]int {
	out := map[string]int{}
	prev := providers.Progress{}
	for _, s := range l.Steps() {
		if s.Pages > prev.Pages {
			out[s.Part] += s.Pages - prev.Pages
		}
		prev = s
	}
	return out
}

// Check holds the reports of a fetch that succeeded to the contract: at least one (the
// start), none overlapping, one unit and total throughout, counts that never go back,
// at most total parts done and, with a total, all of them at the end.
func (l *ProgressLog) Check(t testing.TB) {
	t.Helper()
	steps := l.Steps()
	if len(steps) == 0 {
		t.Fatal("the fetch reported no progress")
	}
	if l.overlapped.Load() {
		t.Error("two progress reports overlapped")
	}
	first, last := steps[0], steps[len(steps)-1]
	if first.Done != 0 || first.Pages != 0 || first.Offers != 0 {
		t.Errorf("first report %+v: want the start, nothing done", first)
	}
	for i := 1; i < len(steps); i++ {
		p, s := steps[i-1], steps[i]
		if s.Unit != first.Unit || s.Total != first.Total {
			t.Errorf("report %d %+v changes the unit or total of %+v", i, s, first)
		}
		if s.Done < p.Done || s.Pages < p.Pages || s.Offers < p.Offers {
			t.Errorf("report %d %+v goes back from %+v", i, s, p)
		}
		if s.Total > 0 && s.Done > s.Total {
			t.Errorf("report %d %+v: more done than the total", i, s)
		}
	}
	if last.Total > 0 && last.Done != last.Total {
		t.Errorf("last report %+v: want all %d %s done", last, last.Total, last.Unit)
	}
}

// FetchProgress fetches from p with a recorder, holds the reports to Check, and checks
// that they count unit, total of them (0: not known ahead), and end at the offers the
// snapshot has.
func FetchProgress(t testing.TB, p providers.Provider, unit string, total int) (*providers.Snapshot, *ProgressLog) {
	t.Helper()
	ctx, log := RecordProgress(context.Background())
	snap, err := p.Fetch(ctx)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	log.Check(t)
	steps := log.Steps()
	if first := steps[0]; first.Unit != unit || first.Total != total {
		t.Errorf("first report %+v; want 0/%d %s", first, total, unit)
	}
	if last := steps[len(steps)-1]; last.Offers != len(snap.Offers) {
		t.Errorf("last report counts %d offers; the snapshot has %d", last.Offers, len(snap.Offers))
	}
	return snap, log
}

package providers

import (
	"context"
	"sync"
)

// Progress is how far one fetch has got, for a refresh to show while it runs (an AWS
// fetch over 13 regions takes minutes). Adapters report it through a Tracker; the
// numbers are the adapter's own count as it goes (offers found so far, before the
// final dedupe), not the refresh's result.
type Progress struct {
	// Unit is what Done and Total count: "regions", "files", "lists", "requests".
	Unit string `json:"unit"`
	// Done is how many are complete, Total how many there are (0: not known yet).
	Done  int `json:"done"`
	Total int `json:"total,omitempty"`
	// Pages is how many answer pages were read so far, where a part has several.
	Pages int `json:"pages,omitempty"`
	// Part is the one last worked on: a region, a file, "SKUs".
	Part string `json:"part,omitempty"`
	// Offers is how many offers were found so far.
	Offers int `json:"offers"`
}

type progressKey struct{}

// WithProgress returns a context whose fetches report their progress to f (as
// net/http/httptrace carries its hooks: the Provider interface stays Fetch(ctx)). f is
// never called concurrently by one Tracker and must not block: it runs on the fetch's
// goroutines.
func WithProgress(ctx context.Context, f func(Progress)) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, f)
}

// ReportProgress hands p to ctx's progress function, if it has one (a fetch run in
// another process, whose reports come back over a pipe, passes them on with it).
func ReportProgress(ctx context.Context, p Progress) {
	if f, ok := ctx.Value(progressKey{}).(func(Progress)); ok {
		f(p)
	}
}

// WantsProgress reports whether ctx carries a progress function, so a caller can skip
// the work of producing reports nobody reads.
func WantsProgress(ctx context.Context) bool {
	_, ok := ctx.Value(progressKey{}).(func(Progress))
	return ok
}

// Tracker counts one fetch's parts, pages and offers and reports each step to the
// context's progress function. It is safe for concurrent use (regions are fetched in
// parallel) and reports one step at a time, in order. A nil Tracker (no progress
// function in the context) does nothing, so adapters call it unconditionally.
type Tracker struct {
	mu sync.Mutex
	f  func(Progress)
	p  Progress
}

// NewTracker starts tracking a fetch of total parts of unit ("regions"; total 0 when
// not known ahead) and reports that it started. It returns nil when ctx carries no
// progress function.
func NewTracker(ctx context.Context, unit string, total int) *Tracker {
	f, ok := ctx.Value(progressKey{}).(func(Progress))
	if !ok {
		return nil
	}
	t := &Tracker{f: f, p: Progress{Unit: unit, Total: total}}
	t.step(func(*Progress) {})
	return t
}

// Page records one more answer page read for part, with offers more offers found on it.
func (t *Tracker) Page(part string, offers int) {
	t.step(func(p *Progress) { p.Part, p.Pages, p.Offers = part, p.Pages+1, p.Offers+offers })
}

// Found records offers more offers found in part, outside any page (composed at the
// end, read from a file).
func (t *Tracker) Found(part string, offers int) {
	t.step(func(p *Progress) { p.Part, p.Offers = part, p.Offers+offers })
}

// Done records part complete (failed or not), with offers more offers found in it.
func (t *Tracker) Done(part string, offers int) {
	t.step(func(p *Progress) { p.Part, p.Done, p.Offers = part, p.Done+1, p.Offers+offers })
}

func (t *Tracker) step(change func(*Progress)) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	change(&t.p)
	t.f(t.p)
}

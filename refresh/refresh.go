// Package refresh runs provider adapters and hands their offers to the store: one
// provider's result is one store transaction, a failure records a failed run and keeps
// the last good prices. `picker refresh` and the daemon's cron jobs both go through Run;
// seeding an empty database from the embedded snapshot (EnsureSeeded with Snapshot)
// goes through the same prepare step, so the first run's prices land as a refresh would
// write them.
package refresh

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/store"
)

// Store is what a refresh needs of the store.
type Store interface {
	WriteSnapshot(ctx context.Context, provider string, in store.WriteInput) (store.WriteResult, error)
	RecordFailure(ctx context.Context, provider string, started, finished time.Time, failure error) error
}

// Job is one provider to refresh.
type Job struct {
	Name     string
	Provider providers.Provider
	// Timeout bounds the fetch and the write; cron never cancels a running job, so
	// every job carries its own.
	Timeout time.Duration
	// Redact scrubs secrets from a failure before it is recorded or returned (the
	// one redaction step, redact.Redactor.Error); nil records the error as is.
	Redact func(error) error
	// Progress, when set, hears the fetch's progress as the adapter reports it
	// (providers.Progress: regions or pages done, offers so far), on the fetch's
	// goroutines, one report at a time; it must not block.
	Progress func(providers.Progress)
	// QuotaEvery is how often the account's quotas are read (launch.go: the schedule's
	// period); 0 reads them on every refresh.
	QuotaEvery time.Duration
}

// Result is what one provider's refresh did.
type Result struct {
	Provider      string        `json:"provider"`
	OffersSeen    int           `json:"offers_seen"`
	PricesChanged int           `json:"prices_changed"`
	OffersClosed  int           `json:"offers_closed"`
	Duration      time.Duration `json:"duration_ns"`
	Err           error         `json:"-"`
	Error         string        `json:"error,omitempty"`
	// Failed are parts (regions) that failed while the rest landed.
	Failed   map[string]string `json:"failed_regions,omitempty"`
	Warnings []string          `json:"warnings,omitempty"`
}

// Run fetches one provider and writes its snapshot. Every failure (fetch error, empty
// result, write error, timeout) is recorded as a failed run and returned in Result.Err;
// stored prices are never touched by a failure.
func Run(ctx context.Context, st Store, job Job, now func() time.Time) Result {
	if now == nil {
		now = time.Now
	}
	started := now().UTC()
	res := Result{Provider: job.Name}
	fail := func(err error) Result {
		if job.Redact != nil {
			err = job.Redact(err)
		}
		res.Err = err
		res.Error = err.Error()
		res.Duration = now().Sub(started)
		// Record the failure even when ctx is done (a timeout is worth recording):
		// use a short, fresh context for that one write.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if rerr := st.RecordFailure(rctx, job.Name, started, now().UTC(), err); rerr != nil {
			res.Err = errors.Join(err, fmt.Errorf("record failure: %w", rerr))
			res.Error = res.Err.Error()
		}
		return res
	}
	if job.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, job.Timeout)
		defer cancel()
	}
	ctx = providers.WithProgress(ctx, job.Progress)
	if ls, ok := st.(LaunchStore); ok && quotaDue(ctx, ls, job, started) {
		ctx = providers.WithQuotaRead(ctx)
	}
	ctx = withMarket(ctx, st, job, started) // market.go
	tap := &capacityTap{}
	var wr store.WriteResult
	var err error
	if sp, ss, ok := streaming(job.Provider, st); ok {
		wr, err = runStream(ctx, ss, sp, job, &res, started, now, tap)
	} else {
		var snap *providers.Snapshot
		snap, err = job.Provider.Fetch(ctx)
		var in store.WriteInput
		in, err = prepare(job.Name, snap, snapOffers(snap), err, &res, job.Redact)
		if err == nil {
			tap.add(snap.Offers)
			writeLaunch(ctx, st, job, snap, tap, started)
			writeMarket(ctx, st, job, snap, started)
			in.Offers = snap.Offers
			in.Started, in.Finished = started, now().UTC()
			wr, err = st.WriteSnapshot(ctx, job.Name, in)
			err = storeError(job.Name, err)
		}
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return fail(err)
	}
	res.OffersSeen = wr.Seen
	res.PricesChanged = wr.PricesChanged()
	res.OffersClosed = wr.Closed
	res.Duration = now().Sub(started)
	return res
}

// Spooler is a Store that writes a streamed refresh (store.Store is one): the parts go
// to a spool as they arrive, and only the final write takes the store's write lock.
type Spooler interface {
	NewSpool(provider string) (*store.Spool, error)
	WriteSpool(ctx context.Context, provider string, sp *store.Spool, in store.WriteInput) (store.WriteResult, error)
}

// streaming reports whether the refresh streams: the provider hands its offers over
// part by part and the store can spool them.
func streaming(p providers.Provider, st Store) (providers.Streamer, Spooler, bool) {
	sp, ok := p.(providers.Streamer)
	if !ok {
		return nil, nil, false
	}
	ss, ok := st.(Spooler)
	return sp, ss, ok
}

// runStream is Run's fetch and write for a Streamer: each part is spooled as it
// arrives, without the write lock (a real AWS fetch takes minutes while the daemon's
// other providers write), and the spool is written in one transaction at the end. A
// stream that fails midway writes nothing.
func runStream(ctx context.Context, ss Spooler, sp providers.Streamer, job Job, res *Result, started time.Time, now func() time.Time, tap *capacityTap) (store.WriteResult, error) {
	spool, err := ss.NewSpool(job.Name)
	if err != nil {
		return store.WriteResult{}, storeError(job.Name, err)
	}
	defer spool.Close()
	snap, err := sp.Stream(ctx, func(part []pricing.Offer) error {
		tap.add(part)
		return spool.Add(part)
	})
	in, err := prepare(job.Name, snap, spool.Len(), err, res, job.Redact)
	if err != nil {
		return store.WriteResult{}, err
	}
	writeLaunch(ctx, ss, job, snap, tap, started)
	writeMarket(ctx, ss, job, snap, started)
	in.Started, in.Finished = started, now().UTC()
	wr, err := ss.WriteSpool(ctx, job.Name, spool, in)
	return wr, storeError(job.Name, err)
}

func storeError(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: store: %w", name, err)
}

func snapOffers(snap *providers.Snapshot) int {
	if snap == nil {
		return 0
	}
	return len(snap.Offers)
}

// prepare checks one provider's fetch (which delivered n offers, in snap.Offers or
// streamed) and turns it into the store write that records it, without the offers,
// noting failed parts and warnings in res. A refresh and the first-run seed both go
// through it, so the snapshot lands in the store exactly as a fetch would.
func prepare(name string, snap *providers.Snapshot, n int, err error, res *Result, redact func(error) error) (store.WriteInput, error) {
	if err == nil && (snap == nil || n == 0) {
		err = fmt.Errorf("%s: no offers returned (an empty result is a failure)", name)
	}
	if err != nil {
		return store.WriteInput{}, err
	}
	for part, ferr := range snap.Failed {
		if res.Failed == nil {
			res.Failed = map[string]string{}
		}
		res.Failed[part] = ferr.Error()
		if redact != nil {
			res.Failed[part] = redact(ferr).Error()
		}
	}
	res.Warnings = snap.Warnings
	return store.WriteInput{Regions: snap.Regions}, nil
}

// RunAll refreshes jobs concurrently, at most parallel at a time, calling onDone (if
// set) as each finishes. Results come back sorted by provider name.
func RunAll(ctx context.Context, st Store, jobs []Job, parallel int, now func() time.Time, onDone func(Result)) []Result {
	if parallel <= 0 {
		parallel = 1
	}
	var mu sync.Mutex
	results := make([]Result, 0, len(jobs))
	var g errgroup.Group
	g.SetLimit(parallel)
	for _, j := range jobs {
		g.Go(func() error {
			if err := ctx.Err(); err != nil { // cancelled while waiting for a slot
				mu.Lock()
				defer mu.Unlock()
				results = append(results, Result{Provider: j.Name, Err: err, Error: err.Error()})
				return nil
			}
			r := Run(ctx, st, j, now)
			mu.Lock()
			defer mu.Unlock()
			results = append(results, r)
			if onDone != nil {
				onDone(r)
			}
			return nil
		})
	}
	_ = g.Wait() // jobs report failures in their Result, never as a group error
	sort.Slice(results, func(i, k int) bool { return results[i].Provider < results[k].Provider })
	return results
}

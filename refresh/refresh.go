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
	snap, err := job.Provider.Fetch(ctx)
	in, err := prepare(job.Name, snap, err, &res, job.Redact)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return fail(err)
	}
	in.Started, in.Finished = started, now().UTC()
	wr, err := st.WriteSnapshot(ctx, job.Name, in)
	if err != nil {
		return fail(fmt.Errorf("%s: store: %w", job.Name, err))
	}
	res.OffersSeen = wr.Seen
	res.PricesChanged = wr.PricesChanged()
	res.OffersClosed = wr.Closed
	res.Duration = now().Sub(started)
	return res
}

// prepare checks one provider's fetch and turns it into the store write that records
// it, noting failed parts and warnings in res. A refresh and the first-run seed both
// go through it, so the snapshot lands in the store exactly as a fetch would.
func prepare(name string, snap *providers.Snapshot, err error, res *Result, redact func(error) error) (store.WriteInput, error) {
	if err == nil && (snap == nil || len(snap.Offers) == 0) {
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
	return store.WriteInput{Offers: snap.Offers, Regions: snap.Regions}, nil
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

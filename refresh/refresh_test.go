package refresh

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/store"
)

// fakeStore records what Run hands it.
type fakeStore struct {
	mu       sync.Mutex
	writes   map[string]store.WriteInput
	failures map[string]error
	writeErr error
}

func (f *fakeStore) WriteSnapshot(_ context.Context, provider string, in store.WriteInput) (store.WriteResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writeErr != nil {
		return store.WriteResult{}, f.writeErr
	}
	if f.writes == nil {
		f.writes = map[string]store.WriteInput{}
	}
	f.writes[provider] = in
	return store.WriteResult{Provider: provider, Seen: len(in.Offers), New: len(in.Offers) - 1, Changed: 1, Closed: 2}, nil
}

func (f *fakeStore) RecordFailure(_ context.Context, provider string, started, finished time.Time, failure error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures == nil {
		f.failures = map[string]error{}
	}
	f.failures[provider] = failure
	return nil
}

type fetchFunc func(context.Context) (*providers.Snapshot, error)

func (f fetchFunc) Fetch(ctx context.Context) (*providers.Snapshot, error) { return f(ctx) }

func offers(n int) []pricing.Offer {
	out := make([]pricing.Offer, n)
	for i := range out {
		out[i] = pricing.Offer{Provider: "p", Region: "r", InstanceType: string(rune('a' + i)), GPUModel: "H100", GPUCount: 1, GPUMemGiB: 80,
			Purchase: pricing.OnDemand, PriceUSDHr: 1, Currency: "USD", Source: pricing.SourceAPI}
	}
	return out
}

func TestRun(t *testing.T) {
	boom := errors.New("api down")
	tests := []struct {
		name      string
		fetch     fetchFunc
		timeout   time.Duration
		writeErr  error
		wantErr   string
		wantSeen  int
		wantWrite bool
	}{
		{name: "ok", fetch: func(context.Context) (*providers.Snapshot, error) {
			return &providers.Snapshot{Offers: offers(3), Regions: []string{"r"}, Failed: map[string]error{"r2": boom}, Warnings: []string{"w"}}, nil
		}, wantSeen: 3, wantWrite: true},
		{name: "fetch error", fetch: func(context.Context) (*providers.Snapshot, error) { return nil, boom }, wantErr: "api down"},
		{name: "empty result is a failure", fetch: func(context.Context) (*providers.Snapshot, error) { return &providers.Snapshot{}, nil }, wantErr: "no offers"},
		{name: "timeout", timeout: 20 * time.Millisecond, fetch: func(ctx context.Context) (*providers.Snapshot, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, wantErr: "deadline exceeded"},
		{name: "store error", writeErr: errors.New("disk full"), fetch: func(context.Context) (*providers.Snapshot, error) {
			return &providers.Snapshot{Offers: offers(1)}, nil
		}, wantErr: "disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &fakeStore{writeErr: tt.writeErr}
			res := Run(context.Background(), st, Job{Name: "p", Provider: tt.fetch, Timeout: tt.timeout}, nil)
			if tt.wantErr == "" {
				if res.Err != nil {
					t.Fatalf("Run: %v", res.Err)
				}
				if res.OffersSeen != tt.wantSeen || res.PricesChanged != tt.wantSeen || res.OffersClosed != 2 {
					t.Errorf("result = %+v; want %d seen, %d changed, 2 closed", res, tt.wantSeen, tt.wantSeen)
				}
				if in := st.writes["p"]; len(in.Offers) != tt.wantSeen || len(in.Regions) != 1 || in.Started.IsZero() || in.Finished.Before(in.Started) {
					t.Errorf("write = %+v", in)
				}
				if res.Failed["r2"] != "api down" || len(res.Warnings) != 1 {
					t.Errorf("partial failures/warnings lost: %+v", res)
				}
				return
			}
			if res.Err == nil || !strings.Contains(res.Error, tt.wantErr) {
				t.Fatalf("Run error = %v; want one mentioning %q", res.Err, tt.wantErr)
			}
			if st.failures["p"] == nil {
				t.Error("the failure was not recorded")
			}
			if _, wrote := st.writes["p"]; wrote {
				t.Error("a failed refresh wrote offers")
			}
		})
	}
}

func TestRunAllBoundsParallelism(t *testing.T) {
	var mu sync.Mutex
	running, peak := 0, 0
	slow := fetchFunc(func(context.Context) (*providers.Snapshot, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return &providers.Snapshot{Offers: offers(1)}, nil
	})
	var jobs []Job
	for _, n := range []string{"e", "d", "c", "b", "a"} {
		jobs = append(jobs, Job{Name: n, Provider: slow})
	}
	var done []string
	res := RunAll(context.Background(), &fakeStore{}, jobs, 2, nil, func(r Result) { done = append(done, r.Provider) })
	if peak > 2 {
		t.Errorf("%d fetches ran at once; want at most 2", peak)
	}
	if len(done) != 5 || len(res) != 5 {
		t.Fatalf("done %v, results %d", done, len(res))
	}
	for i, want := range []string{"a", "b", "c", "d", "e"} {
		if res[i].Provider != want {
			t.Errorf("results[%d] = %s; want sorted by provider", i, res[i].Provider)
		}
	}
}

// Issue 18, case 4: a key echoed in an upstream error is scrubbed before the failure
// is recorded (refresh_runs.error) or returned.
func TestRunRedactsRecordedFailure(t *testing.T) {
	const key = "live-key-0123456789"
	st := &fakeStore{}
	fail := fetchFunc(func(context.Context) (*providers.Snapshot, error) {
		return nil, errors.New("lambda: HTTP 401: invalid api key " + key + " (Authorization: Bearer " + key + ")")
	})
	red := func(err error) error { return errors.New(strings.ReplaceAll(err.Error(), key, "[REDACTED]")) }
	r := Run(context.Background(), st, Job{Name: "p", Provider: fail, Redact: red}, nil)
	if r.Err == nil || strings.Contains(r.Error, key) || strings.Contains(r.Err.Error(), key) {
		t.Errorf("result error %q leaks the key", r.Error)
	}
	if got := st.failures["p"]; got == nil || strings.Contains(got.Error(), key) {
		t.Errorf("recorded failure %v leaks the key", got)
	}
}

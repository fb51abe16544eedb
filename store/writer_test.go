package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// Issue 18, case 7: a write that outlasts busy_timeout (5 s) in another connection
// (a long static write, another `picker refresh`) no longer makes the next provider's
// write fail with SQLITE_BUSY and lose its prices: it waits its turn.
func TestWriteWaitsForALongWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("holds the write lock for 6 s")
	}
	s := openTest(t)
	ctx := context.Background()
	// Another writer: its own pool, BEGIN IMMEDIATE held for longer than busy_timeout.
	other, err := sql.Open("sqlite", s.Path()+"?"+dsnParams)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO refresh_runs (provider, started, finished, status) VALUES ('static', 0, 0, 'ok')`); err != nil {
		t.Fatal(err)
	}
	held := 6 * time.Second
	go func() { time.Sleep(held); tx.Commit() }()
	start := time.Now()
	_, err = s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: observed(at(1), mk("lambda", "us-east-1", "gpu_8x_a100", pricing.OnDemand, 10))})
	if err != nil {
		t.Fatalf("write behind a %v writer: %v", held, err)
	}
	if waited := time.Since(start); waited < held-time.Second {
		t.Errorf("the write took %v; it cannot have waited for the other writer", waited)
	}
	if got := current(t, s, Query{Providers: []string{"lambda"}}); len(got) != 1 {
		t.Errorf("lambda's prices: %v", got)
	}
}

// A write that cannot get its turn within the bound fails with a clear, retryable
// (Unavailable) error, and the provider's last good prices stay current.
func TestWriteWaitIsBounded(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if _, err := s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: observed(at(1), mk("lambda", "r", "a", pricing.OnDemand, 10))}); err != nil {
		t.Fatal(err)
	}
	s.SetWriteWait(200 * time.Millisecond)
	release, _, err := s.acquireWrite(ctx, "test") // a long write of this process
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: observed(at(2), mk("lambda", "r", "a", pricing.OnDemand, 99))})
	if pricing.ErrorCode(err) != pricing.Unavailable || !strings.Contains(err.Error(), "retry later") || !strings.Contains(err.Error(), "last good prices") {
		t.Errorf("write past the bound: %v; want a retryable Unavailable error", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.WriteSnapshot(cctx, "lambda", WriteInput{Offers: observed(at(2), mk("lambda", "r", "a", pricing.OnDemand, 99))}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while waiting: %v", err)
	}
	release()
	for k, v := range current(t, s, Query{Providers: []string{"lambda"}}) {
		if v != 10 {
			t.Errorf("%s = %v; want the last good $10", k, v)
		}
	}
}

// Issue 18, case 9: refresh_runs are pruned with the history, keeping each provider's
// newest run and newest success.
func TestPruneRefreshRuns(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for h := 1; h <= 5; h++ {
		if _, err := s.WriteSnapshot(ctx, "lambda", WriteInput{Offers: observed(at(h), mk("lambda", "r", "a", pricing.OnDemand, 10)), Finished: at(h)}); err != nil {
			t.Fatal(err)
		}
	}
	for h := 6; h <= 8; h++ {
		if err := s.RecordFailure(ctx, "lambda", at(h), at(h), errors.New("down")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Prune(ctx, at(100)); err != nil {
		t.Fatal(err)
	}
	var n, ok, failed int
	if err := s.db.QueryRow(`SELECT count(*), sum(status = 'ok'), sum(status = 'failed') FROM refresh_runs WHERE provider = 'lambda'`).Scan(&n, &ok, &failed); err != nil {
		t.Fatal(err)
	}
	if n != 2 || ok != 1 || failed != 1 {
		t.Errorf("after pruning: %d runs (%d ok, %d failed); want the newest success and the newest run", n, ok, failed)
	}
	st, err := s.Providers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st {
		if p.Provider == "lambda" && !p.LastSuccess.Equal(at(5)) {
			t.Errorf("last success %v after pruning; want %v", p.LastSuccess, at(5))
		}
	}
}

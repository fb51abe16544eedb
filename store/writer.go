package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/pickergpu/picker/pricing"
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultWriteWait bounds how long a write waits for its turn: for the other writers of
// this process (one at a time, in arrival order) and then for another process's write
// lock (busy_timeout is 5 s a try; BEGIN is retried until the bound). A long static
// write used to make Lambda's refresh fail with SQLITE_BUSY after 5 s and drop its
// prices; now it waits, or fails with a retryable error and its prices stay current.
const DefaultWriteWait = 2 * time.Minute

// SetWriteWait changes the bound of later writes (tests shorten it); <= 0 restores
// DefaultWriteWait.
func (s *Store) SetWriteWait(d time.Duration) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	s.writeWait = d
}

func (s *Store) writeBound() time.Duration {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if s.writeWait > 0 {
		return s.writeWait
	}
	return DefaultWriteWait
}

func (s *Store) slot() chan struct{} {
	s.health.once.Do(func() { s.health.writeSlot = make(chan struct{}, 1) })
	return s.health.writeSlot
}

// busyError is the error of a write that did not get its turn in time.
func (s *Store) busyError(op string, waited time.Duration) error {
	return pricing.Errorf(pricing.Unavailable, "database %s: %s: another write held the database for over %v; retry later (nothing was written, the last good prices stay current)", s.path, op, waited.Round(time.Second))
}

// acquireWrite waits for this process's write slot, within the bound and ctx.
func (s *Store) acquireWrite(ctx context.Context, op string) (release func(), deadline time.Time, err error) {
	bound := s.writeBound()
	deadline = time.Now().Add(bound)
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case s.slot() <- struct{}{}:
		return func() { <-s.slot() }, deadline, nil
	case <-ctx.Done():
		return nil, deadline, s.dbError(op, ctx.Err())
	case <-t.C:
		return nil, deadline, s.busyError(op, bound)
	}
}

// beginWrite takes this process's write slot, then begins an IMMEDIATE transaction,
// retrying while another process holds the write lock, until the bound. Call release
// after the transaction ends.
func (s *Store) beginWrite(ctx context.Context, op string) (tx *sql.Tx, release func(), err error) {
	release, deadline, err := s.acquireWrite(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	for {
		tx, err = s.db.BeginTx(ctx, nil)
		if err == nil {
			return tx, release, nil
		}
		if c := sqliteCode(err); (c != sqlite3.SQLITE_BUSY && c != sqlite3.SQLITE_LOCKED) || ctx.Err() != nil {
			release()
			return nil, nil, s.dbError(op, err)
		}
		if time.Now().After(deadline) {
			release()
			return nil, nil, s.busyError(op, s.writeBound())
		}
		select {
		case <-ctx.Done():
			release()
			return nil, nil, s.dbError(op, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

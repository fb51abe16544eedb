package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// health is a connection of its own for Ping, so that a health probe never queues
// behind a busy pool (a loaded daemon's /healthz said 503 while it was answering), and
// the closed flag that makes Ping fail once Close ran.
type health struct {
	mu     sync.Mutex
	conn   *sql.Conn
	closed atomic.Bool
	// writeSlot serialises this process's writers (writer.go).
	writeSlot chan struct{}
	once      sync.Once
	writeWait time.Duration
}

// Ping answers whether the database serves a read now: the file is still the one opened,
// with picker's header (checkFile), and one indexed read of the schema version on a
// dedicated connection works. It is cheap enough for every health probe.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return pricing.Errorf(pricing.Unavailable, "database %s is closed", s.path)
	}
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if s.health.conn == nil {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return s.dbError("ping", err)
		}
		s.health.conn = c
	}
	if err := s.checkFile(); err != nil { // fileid.go: replaced or overwritten while open
		return err
	}
	var v int
	err := s.health.conn.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&v)
	if err != nil {
		// A broken connection is replaced on the next probe.
		s.health.conn.Close()
		s.health.conn = nil
		return s.dbError("ping", err)
	}
	return nil
}

// QuickCheck runs PRAGMA quick_check (integrity_check without the index cross-checks:
// it reads every page once, so a corrupt page is found in well under a second on a
// 100k-offer database). The daemon runs it at start and after each refresh.
func (s *Store) QuickCheck(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return s.dbError("quick check", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return s.dbError("quick check", err)
		}
		if line != "ok" && len(problems) < 5 {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return s.dbError("quick check", err)
	}
	if len(problems) > 0 {
		return pricing.Errorf(pricing.Internal, "database %s fails its integrity check: %s", s.path, strings.Join(problems, "; "))
	}
	return nil
}

func (s *Store) closeHealth() {
	s.closed.Store(true)
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if s.health.conn != nil {
		s.health.conn.Close()
		s.health.conn = nil
	}
}

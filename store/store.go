// Package store keeps picker's GPU offers and their price history in SQLite
// (modernc.org/sqlite: pure Go, so picker stays a single static binary with no cgo).
//
// Prices are kept as intervals (valid_from, valid_to NULL while current): a refresh that
// sees the same price writes no price row, so the database grows with price changes,
// not with refreshes. One provider's refresh is one transaction with one timestamp, so
// readers (WAL mode: never blocked by the writer) see the old snapshot or the new one,
// never half of each; a failed refresh records only its run and the last good prices
// stay current. Offers a refresh no longer lists are closed, never deleted, so their
// history survives until Prune drops it.
//
// The package imports only pricing: it knows nothing of providers, the CLI or fit.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Store is an open picker database. It is safe for concurrent use; SQLite serialises
// writers (busy_timeout makes a second writer wait rather than fail) and WAL lets
// readers proceed during a write.
type Store struct {
	db   *sql.DB
	path string
	// cache, when set (CacheOffers), serves repeated Offers queries from memory.
	cache *offerCache
	// fcheck is the file's identity at open, for Ping (fileid.go).
	fcheck fileCheck
	// full: opened read-only because its disk was full (openWhenFull).
	full bool
	// readOnly: the file cannot be written (openReadOnly).
	readOnly bool
	// img holds the decoded offers image of one data version (image.go); noImage
	// turns its use off (tests compare both paths).
	img     imageCache
	noImage bool
	// health is what Ping and the writer keep beside the pool (health.go, writer.go).
	health
	// stmts are the statements prepared once for the reads (readtx.go).
	stmts stmtCache
}

//go:embed migrations/*.sql
var migrationFS embed.FS

// dsnParams, run on every new connection: busy_timeout comes first so that what
// follows waits for another process instead of failing with SQLITE_BUSY. WAL (set once
// per file by Store.init, after the ownership check: it changes the file) lets readers
// (the daemon's HTTP API) run while a refresh writes; NORMAL
// synchronous is durable across application crashes in WAL mode and much faster than
// FULL (a power cut can lose the last commits, never corrupt the file).
// _txlock=immediate takes the write lock at BEGIN: every transaction this package
// opens writes, and a deferred one that upgrades later can fail with SQLITE_BUSY
// without waiting on busy_timeout.
const dsnParams = "_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)&_pragma=synchronous(NORMAL)&_txlock=immediate"

// Open opens (creating when missing) the database at path, its parent directories
// included, and brings its schema up to date. A path that cannot be created or written
// is an Unavailable error and a file that is not a SQLite database is an Invalid one,
// both naming the path, so the CLI prints one clear line instead of a driver message.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, pricing.Errorf(pricing.Invalid, "database path is empty")
	}
	if strings.ContainsAny(path, "?#") {
		// The driver reads everything after '?' as DSN parameters.
		return nil, pricing.Errorf(pricing.Invalid, "database path %q: '?' and '#' are not allowed", path)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, pricing.Errorf(pricing.Invalid, "database %s is a directory, want a file", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "database %s: cannot create its directory: %w", path, unwrapPathError(err))
	}
	fst, err := statFile(path)
	if err != nil {
		return nil, err
	}
	if fst.readOnly {
		if err := checkOwnership(ctx, path, fst); err != nil {
			return nil, err
		}
		return openReadOnly(ctx, path)
	}
	db, err := sql.Open("sqlite", path+"?"+dsnParams)
	if err != nil {
		return nil, openError(path, err)
	}
	s := &Store{db: db, path: path}
	if err := s.init(ctx); err != nil {
		db.Close()
		if spaceError(err) && fst.exists && !fst.empty {
			return openWhenFull(ctx, path, err) // space.go: reading needs no space
		}
		return nil, err
	}
	s.placeTempFiles(ctx) // space.go: next to the database unless SQLITE_TMPDIR is set
	return s, nil
}

// init checks the file is picker's before changing it, then switches it to WAL,
// migrates it and marks it. A database already marked at this build's schema version
// in WAL mode (every open after the first) costs one read: one-shot commands open it
// on every run (issue 17).
func (s *Store) init(ctx context.Context) error {
	var app, ver int64
	var mode string
	if err := s.db.QueryRowContext(ctx, "SELECT application_id, user_version, journal_mode FROM pragma_application_id(), pragma_user_version(), pragma_journal_mode()").Scan(&app, &ver, &mode); err != nil {
		return openError(s.path, err)
	}
	if err := ownedBy(ctx, s.db, s.path, app, ver); err != nil {
		return err
	}
	if app == ApplicationID && ver == int64(LatestSchemaVersion()) && strings.EqualFold(mode, "wal") {
		return nil
	}
	if !strings.EqualFold(mode, "wal") {
		// journal_mode is the file's (persistent): set once here, every later
		// connection of the pool finds it.
		if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
			return openError(s.path, err)
		}
	}
	if !strings.EqualFold(mode, "wal") {
		// WAL is what keeps readers working during a refresh; without it (some network
		// filesystems refuse it) the daemon's guarantees do not hold, so say so now.
		return pricing.Errorf(pricing.Unavailable, "database %s: journal mode is %q, want WAL (is it on a filesystem without shared-memory support?)", s.path, mode)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	// Mark the file as picker's (application_id) with its schema version (user_version).
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", ApplicationID, v)); err != nil {
		return openError(s.path, err)
	}
	return nil
}

// openReadOnly opens a database this process cannot write: no WAL switch, no
// migrations, no seeding; reads work when its schema is one this picker knows.
// readOnlyDSN picks the mode: the WAL through an existing -shm, else immutable.
func openReadOnly(ctx context.Context, path string) (*Store, error) {
	dsn, err := readOnlyDSN(path) // readonly.go: the WAL is read whenever a writer may hold commits in it
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, openError(path, err)
	}
	s := &Store{db: db, path: path, readOnly: true}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, openError(path, err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		db.Close()
		return nil, pricing.Errorf(pricing.Unavailable, "database %s is read-only and has no picker schema: %v", path, err)
	}
	ms, err := migrations()
	if err != nil {
		db.Close()
		return nil, pricing.Errorf(pricing.Internal, "store migrations: %w", err)
	}
	if latest := ms[len(ms)-1].version; v != latest {
		db.Close()
		return nil, pricing.Errorf(pricing.Unavailable, "database %s is read-only at schema version %d; this picker needs %d and cannot migrate it", path, v, latest)
	}
	return s, nil
}

// ReadOnly reports whether the database was opened read-only (the file cannot be
// written): reads work, refreshes fail.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Close closes the database. Pending WAL content is checkpointed by SQLite when the
// last connection closes.
func (s *Store) Close() error {
	s.closeHealth()
	s.closeStmts()
	return s.db.Close()
}

// Path is the database file the store was opened with.
func (s *Store) Path() string { return s.path }

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("migration %s: want NNNN_name.sql", name)
		}
		b, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{v, name, string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", ms[i-1].name, ms[i].name, ms[i].version)
		}
	}
	return ms, nil
}

// migrate applies the embedded migrations in version order, each in its own
// transaction together with its row in schema_migrations, so a crash leaves the schema
// at a whole version. The applied check is repeated inside the transaction (which holds
// the write lock) so two processes opening a fresh database apply each migration once.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return pricing.Errorf(pricing.Internal, "store migrations: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL -- unix seconds, UTC
	)`); err != nil {
		return openError(s.path, err)
	}
	var newest sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT max(version) FROM schema_migrations").Scan(&newest); err != nil {
		return openError(s.path, err)
	}
	if latest := ms[len(ms)-1].version; newest.Valid && int(newest.Int64) > latest {
		return pricing.Errorf(pricing.Unavailable, "database %s has schema version %d, newer than this picker knows (%d): upgrade picker or use another database", s.path, newest.Int64, latest)
	}
	for _, m := range ms {
		if newest.Valid && m.version <= int(newest.Int64) {
			continue
		}
		if err := s.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) apply(ctx context.Context, m migration) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return openError(s.path, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&n); err != nil {
		return openError(s.path, err)
	}
	if n > 0 {
		return nil // another process applied it while we waited for the lock
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return pricing.Errorf(pricing.Internal, "database %s: migration %s: %w", s.path, m.name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.version, m.name, time.Now().Unix()); err != nil {
		return openError(s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return openError(s.path, err)
	}
	return nil
}

// SchemaVersion is the newest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&v)
	return v, s.dbError("schema version", err)
}

// Optimize runs PRAGMA optimize, which refreshes the query planner's statistics where
// they have drifted; the daemon's nightly job calls it after Prune.
func (s *Store) Optimize(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "PRAGMA optimize")
	return s.dbError("optimize", err)
}

// IntegrityCheck runs PRAGMA integrity_check and returns an Internal error listing the
// problems it reports, nil when the database is sound.
func (s *Store) IntegrityCheck(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return s.dbError("integrity check", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return s.dbError("integrity check", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return s.dbError("integrity check", err)
	}
	if len(problems) > 0 {
		return pricing.Errorf(pricing.Internal, "database %s fails its integrity check: %s", s.path, strings.Join(problems, "; "))
	}
	return nil
}

// sqliteCode returns the primary SQLite result code in err's chain, 0 when none.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// openError turns a driver error met while opening into a coded error naming the path.
func openError(path string, err error) error {
	if pe := (*pricing.Error)(nil); errors.As(err, &pe) {
		return err
	}
	switch sqliteCode(err) {
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return pricing.Errorf(pricing.Invalid, "database %s is not a SQLite database or is corrupt (%v); move it aside or choose another database file", path, err)
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_AUTH:
		return pricing.Errorf(pricing.Unavailable, "cannot open database %s: %w", path, err)
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return pricing.Errorf(pricing.Unavailable, "database %s is locked by another process: %v", path, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	return pricing.Errorf(pricing.Internal, "open database %s: %w", path, err)
}

// dbError codes an error met while using an open database: busy, full or I/O problems
// are Unavailable (retrying or freeing space can help), cancellation is passed through
// wrapped, anything else is Internal.
func (s *Store) dbError(op string, err error) error {
	if err == nil {
		return nil
	}
	if pe := (*pricing.Error)(nil); errors.As(err, &pe) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if c := sqliteCode(err); c == sqlite3.SQLITE_FULL || c == sqlite3.SQLITE_READONLY && s.full {
		return s.fullError(op, err) // space.go: which disk is full
	}
	switch sqliteCode(err) {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return pricing.Errorf(pricing.Unavailable, "database %s: %s: %w", s.path, op, err)
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return pricing.Errorf(pricing.Internal, "database %s is corrupt: %s: %w", s.path, op, err)
	}
	return pricing.Errorf(pricing.Internal, "database %s: %s: %w", s.path, op, err)
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// unix converts to the stored form (seconds, UTC) and back.
func unix(t time.Time) int64 { return t.Unix() }

func fromUnix(s int64) time.Time { return time.Unix(s, 0).UTC() }

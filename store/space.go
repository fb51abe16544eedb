package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/pickergpu/picker/pricing"
)

// spaceError reports an SQLite error that a full filesystem causes: SQLITE_FULL, or an
// I/O error sizing the WAL's shared memory (SQLITE_IOERR_SHMSIZE: the -shm file could
// not be grown) or writing.
func spaceError(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR_SHMSIZE, sqlite3.SQLITE_IOERR_WRITE, sqlite3.SQLITE_IOERR_TRUNCATE:
		return true
	}
	return false
}

// openWhenFull opens path for reading after a read-write open failed for lack of space:
// reading needs none, so a full disk must not stop every command and the daemon
// (issue 30). With the WAL empty or absent the main file holds every commit and no
// writer can append to a full disk, so immutable=1 reads it without the -shm it could
// not size; a WAL with commits in it is not readable that way and the open fails as
// before. The store is read-only: a write says the disk is full.
func openWhenFull(ctx context.Context, path string, cause error) (*Store, error) {
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, openError(path, cause)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, openError(path, cause)
	}
	s := &Store{db: db, path: path, readOnly: true, full: true}
	if err := checkSchema(ctx, s); err != nil {
		db.Close()
		return nil, openError(path, cause)
	}
	return s, nil
}

// checkSchema refuses a database whose schema is not this picker's latest.
func checkSchema(ctx context.Context, s *Store) error {
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	if latest := ms[len(ms)-1].version; v != latest {
		return fmt.Errorf("schema version %d, want %d", v, latest)
	}
	return nil
}

// fullMessage says which filesystem is full when SQLite reports SQLITE_FULL: the
// database's, or the temporary directory's, where SQLite writes the files of a sort or
// an index that outgrows its page cache, temp tables and statement journals
// (tempDir: the database's directory unless SQLITE_TMPDIR is set). "database or disk
// is full" on a disk with 76 GB free sent users to the wrong disk (issue 30). "" when
// neither is known to be out of space.
func (s *Store) fullMessage() string {
	dbFree, dbOK := freeBytes(filepath.Dir(s.path))
	tmp := s.tempDir(context.Background())
	tmpFree, tmpOK := freeBytes(tmp)
	switch {
	case tmpOK && tmpFree < 1<<20 && (!dbOK || dbFree >= 1<<20):
		return fmt.Sprintf("SQLite's temporary directory %s is full (%s free; the database's disk has %s): free space there or point SQLITE_TMPDIR at a disk with room", tmp, human(tmpFree), human(dbFree))
	case dbOK && dbFree < 1<<20:
		return fmt.Sprintf("the database's disk (%s) is full (%s free)", filepath.Dir(s.path), human(dbFree))
	}
	return ""
}

// placeTempFiles puts SQLite's temporary files next to the database, the disk picker
// already needs room on, unless $SQLITE_TMPDIR names a place for them (then SQLite's own
// order stands). TMPDIR is often a small tmpfs, and a sort that filled it failed on a
// disk with room (issue 30). The placement is PRAGMA temp_store_directory, which sets
// SQLite's process-wide sqlite3_temp_directory (deprecated but compiled into
// modernc.org/sqlite v1.62.0, SQLite 3.54.1, under SQLITE_MUTEX_STATIC_TEMPDIR); the unix
// VFS tries it before SQLITE_TMPDIR, TMPDIR, /var/tmp, /usr/tmp, /tmp (os_unix.c
// unixTempFileDir). A process opens one database, so process-wide is per database; with
// several, the last one opened read-write holds it. SQLite refuses a directory it
// cannot write ("not a writable directory"); the placement is then cleared and SQLite's
// order applies, which tempDir reports.
func (s *Store) placeTempFiles(ctx context.Context) {
	dir := ""
	if os.Getenv("SQLITE_TMPDIR") == "" {
		if abs, err := filepath.Abs(filepath.Dir(s.path)); err == nil { // a later chdir must not move it
			dir = abs
		}
	}
	if _, err := s.db.ExecContext(ctx, "PRAGMA temp_store_directory = "+sqlQuote(dir)); err != nil && dir != "" {
		s.db.ExecContext(ctx, "PRAGMA temp_store_directory = ''")
	}
}

// sqlQuote is s as an SQL string literal.
func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// tempDir is the directory SQLite's unix VFS writes temporary files to: the first of
// temp_store_directory (placeTempFiles), $SQLITE_TMPDIR, $TMPDIR, /var/tmp, /usr/tmp,
// /tmp that is a directory this process can write and search (os_unix.c
// unixTempFileDir: stat, S_ISDIR and access(W_OK|X_OK), SQLite 3.x), "." when none is.
func (s *Store) tempDir(ctx context.Context) string {
	var placed string
	if err := s.db.QueryRowContext(ctx, "PRAGMA temp_store_directory").Scan(&placed); err != nil {
		placed = "" // no row: unset
	}
	for _, d := range []string{placed, os.Getenv("SQLITE_TMPDIR"), os.Getenv("TMPDIR"), "/var/tmp", "/usr/tmp", "/tmp"} {
		if d == "" {
			continue
		}
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && searchableDir(d) {
			return d
		}
	}
	return "."
}

func human(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

// fullError is dbError's message for SQLITE_FULL, naming the full filesystem.
func (s *Store) fullError(op string, err error) error {
	if msg := s.fullMessage(); msg != "" {
		return pricing.Errorf(pricing.Unavailable, "database %s: %s: %v: %s", s.path, op, err, msg)
	}
	if s.full {
		return pricing.Errorf(pricing.Unavailable, "database %s: %s: %v (it was opened read-only: its disk was full)", s.path, op, err)
	}
	return pricing.Errorf(pricing.Unavailable, "database %s: %s: %w", s.path, op, err)
}

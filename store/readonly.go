package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"

	"github.com/pickergpu/picker/pricing"
	sqlite3 "modernc.org/sqlite/lib"
)

// A database the process may read but not write (a file or directory without write
// permission, a read-only mount) used to fail to open at all: opening sets WAL mode and
// runs migrations, both writes. openReadOnly opens it for reading instead, so every
// read command and the daemon's API work; writes fail as SQLITE_READONLY (Unavailable).

// readOnlyCause reports whether an open failed because the file cannot be written.
// openError keeps only the driver's message, so the message is read too.
func readOnlyCause(err error) bool {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return true
	}
	msg := strings.ToLower(err.Error())
	return errors.Is(err, os.ErrPermission) || strings.Contains(msg, "readonly") || strings.Contains(msg, "read-only") ||
		strings.Contains(msg, "permission denied") || strings.Contains(msg, "unable to open")
}

// openReadOnly opens an existing database with mode=ro; when its directory cannot
// hold the WAL index either, as immutable (SQLite then takes no locks: fine for a file
// nobody here can write). The schema must already be current: migrating is a write.
func openReadOnly(ctx context.Context, path string) (*Store, error) {
	uri := "file:" + strings.ReplaceAll(path, "%", "%25") + "?mode=ro"
	var last error
	for _, extra := range []string{"", "&immutable=1"} {
		db, err := sql.Open("sqlite", uri+extra+"&_pragma=busy_timeout(5000)&_pragma=query_only(1)")
		if err != nil {
			return nil, openError(path, err)
		}
		s := &Store{db: db, path: path}
		v, err := s.SchemaVersion(ctx)
		if err != nil {
			db.Close()
			last = err
			continue
		}
		ms, err := migrations()
		if err != nil {
			db.Close()
			return nil, pricing.Errorf(pricing.Internal, "store migrations: %w", err)
		}
		if latest := ms[len(ms)-1].version; v != latest {
			db.Close()
			return nil, pricing.Errorf(pricing.Unavailable, "database %s is read-only at schema version %d and this picker needs %d: open it once where it can be written, to migrate it", path, v, latest)
		}
		return s, nil
	}
	return nil, openError(path, last)
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// ApplicationID marks a SQLite file as picker's (PRAGMA application_id, "PICK"), so
// picker never migrates, converts to WAL or writes into another program's database that
// --db happens to name (https://www.sqlite.org/pragma.html#pragma_application_id).
const ApplicationID = 0x5049434B

// pickerTables are the tables a picker database created before the application id was
// set has; such a file is adopted.
var pickerTables = []string{"offers", "prices", "refresh_runs", "schema_migrations", "seen", "shapes"}

// fileState is what a read-only look at an existing file says before Open changes it.
type fileState struct {
	exists   bool
	empty    bool // exists with no bytes: nothing to check
	readOnly bool // the file (or its directory) cannot be written: open it read-only
}

// statFile says whether path exists, holds data, and can be written, before Open
// changes anything.
func statFile(path string) (fileState, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileState{}, nil
	}
	if err != nil {
		return fileState{}, pricing.Errorf(pricing.Unavailable, "database %s: %w", path, unwrapPathError(err))
	}
	return fileState{exists: true, empty: fi.Size() == 0, readOnly: !writable(path)}, nil
}

// checkOwnership opens an existing, non-empty database read-only and refuses one that is
// not picker's (ownedBy). The file is not touched (mode=ro opens no journal and changes
// no header). Open uses it for files it cannot write; a writable file is checked on the
// store's own connection before anything is written (Store.init).
func checkOwnership(ctx context.Context, path string, st fileState) error {
	if !st.exists || st.empty {
		return nil
	}
	uri := "file:" + path + "?mode=ro&_pragma=busy_timeout(5000)"
	if st.readOnly {
		// mode=ro alone cannot read a WAL-mode file whose directory cannot hold its
		// -shm file ("attempt to write a readonly database"): readOnlyDSN says how.
		var err error
		if uri, err = readOnlyDSN(path); err != nil {
			return err
		}
	}
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return openError(path, err)
	}
	defer db.Close()
	var app, ver int64
	if err := db.QueryRowContext(ctx, "SELECT application_id, user_version FROM pragma_application_id(), pragma_user_version()").Scan(&app, &ver); err != nil {
		return openError(path, err)
	}
	return ownedBy(ctx, db, path, app, ver)
}

// ownedBy refuses a database that is not picker's: a different application_id (app),
// or no id and tables picker did not create. Reading them changes nothing in the file.
func ownedBy(ctx context.Context, db *sql.DB, path string, app, ver int64) error {
	if app == ApplicationID {
		return nil
	}
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		return openError(path, err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return openError(path, err)
		}
		tables = append(tables, n)
	}
	if err := rows.Err(); err != nil {
		return openError(path, err)
	}
	foreign := slices.ContainsFunc(tables, func(t string) bool { return !slices.Contains(pickerTables, t) })
	if app == 0 && ver == 0 && !foreign {
		return nil // empty, or a picker database from before the id
	}
	desc := "application_id " + hex32(app)
	if len(tables) > 0 {
		desc += ", tables " + strings.Join(tables, ", ")
	}
	return pricing.ParamErrorf(pricing.Invalid, "db", "database %s is not a picker database (%s); picker leaves it untouched: choose another --db file", path, desc)
}

func hex32(v int64) string {
	const digits = "0123456789abcdef"
	b := []byte("0x00000000")
	for i := 9; i >= 2; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b)
}

// LatestSchemaVersion is the schema version this build creates and reads (its newest
// migration); a database's own is SchemaVersion.
func LatestSchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

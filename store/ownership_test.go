package store

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

func TestOpenRefusesAnotherProgramsDatabase(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, sql, want string }{
		{"other tables", "CREATE TABLE notes (x); INSERT INTO notes VALUES (1)", "tables notes"},
		{"other application", "PRAGMA application_id = 1234; CREATE TABLE offers (x)", "application_id 0x000004d2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "other.db")
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(tc.sql); err != nil {
				t.Fatal(err)
			}
			db.Close()
			before, _ := os.ReadFile(path)
			s, err := Open(ctx, path)
			if err == nil {
				s.Close()
				t.Fatal("opened another program's database")
			}
			if pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), "not a picker database") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v (%s); want Invalid naming %q", err, pricing.ErrorCode(err), tc.want)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Error("the file was changed")
			}
			if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
				t.Errorf("files beside it: %v (a -wal or -shm means it was opened for writing)", ents)
			}
		})
	}
}

func TestOpenMarksAndReopensOwnDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var app, ver int64
	s.db.QueryRow("PRAGMA application_id").Scan(&app)
	s.db.QueryRow("PRAGMA user_version").Scan(&ver)
	want, _ := s.SchemaVersion(ctx)
	s.Close()
	if app != ApplicationID || ver != int64(want) {
		t.Errorf("application_id %#x user_version %d; want %#x and %d", app, ver, ApplicationID, want)
	}
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s.Close()
	// A read-only file (chmod does not stop root, so the read-only path is called
	// directly) is read without writing.
	ro, err := openReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	defer ro.Close()
	if !ro.ReadOnly() {
		t.Error("ReadOnly() = false")
	}
	if _, err := ro.Offers(ctx, Query{}); err != nil {
		t.Errorf("read-only offers: %v", err)
	}
}

package store

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestTempFilesNextToDatabase: a sort that outgrows the page cache spills to SQLite's
// temporary files, and they are opened in the database's directory, not under TMPDIR
// (issue 30: a full TMPDIR was "database or disk is full" on a disk with 76 GB free).
// TMPDIR points under a regular file, where nothing can be created; without the
// placement SQLite would skip it and spill to /var/tmp. The spill is seen while it is
// open: SQLite unlinks its temporary files at once, and /proc/self/fd still names them
// ("DIR/... (deleted)").
// Not parallel: the placement is SQLite's process-wide temp directory.
func TestTempFilesNextToDatabase(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/fd")
	}
	block := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(block, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", filepath.Join(block, "tmp"))
	t.Setenv("SQLITE_TMPDIR", "")
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(dir, "picker.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.tempDir(ctx); got != dir {
		t.Errorf("the store reports SQLite's temporary directory as %s; want the database's, %s", got, dir)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A 10-page cache and temp_store=FILE: the sorter writes its sorted runs to files
	// after a few hundred KiB (vdbesort.c: a PMA per cache_size pages).
	if _, err := conn.ExecContext(ctx, "PRAGMA temp_store = FILE; PRAGMA cache_size = 10"); err != nil {
		t.Fatal(err)
	}
	open := func() map[string]string { // fd -> what it names
		fds := map[string]string{}
		entries, _ := os.ReadDir("/proc/self/fd")
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil {
				fds[e.Name()] = target
			}
		}
		return fds
	}
	before := open()
	rows, err := conn.QueryContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)
		SELECT x FROM c ORDER BY randomblob(64)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() { // the sort is done and its runs are open
		t.Fatal(rows.Err())
	}
	var spills []string // files opened by the query and already unlinked
	for fd, target := range open() {
		if before[fd] != target && strings.HasSuffix(target, " (deleted)") {
			spills = append(spills, strings.TrimSuffix(target, " (deleted)"))
		}
	}
	if len(spills) == 0 {
		t.Fatal("the sort opened no temporary file; the test no longer forces a spill")
	}
	for _, f := range spills {
		if filepath.Dir(f) != dir {
			t.Errorf("SQLite spilled to %s; want it in the database's directory %s", f, dir)
		}
	}
}

// TestTempDirSQLiteTmpdirWins: with SQLITE_TMPDIR set the store leaves SQLite's own
// order alone (SQLITE_TMPDIR first) and reports that directory.
func TestTempDirSQLiteTmpdirWins(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("SQLITE_TMPDIR", tmp)
	s := openTest(t)
	if got := s.tempDir(context.Background()); got != tmp {
		t.Errorf("temporary directory %s; want SQLITE_TMPDIR's %s", got, tmp)
	}
	var d string
	if err := s.db.QueryRow("PRAGMA temp_store_directory").Scan(&d); err == nil && d != "" {
		t.Errorf("temp_store_directory is %q with SQLITE_TMPDIR set; want it unset", d)
	}
}

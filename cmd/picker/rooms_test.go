package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The rooms of the estimator (README's code map): each imports only the rooms below it
// and pricing, and stays pure — no I/O, no environment, no network — so that the CLI, the
// HTTP API and the web page get the same answer from the same inputs.
var rooms = []struct {
	pkg   string
	below []string // the picker packages it may import
}{
	{"model", []string{"pricing"}},
	{"fit", []string{"pricing", "model"}},
	{"jobtime", []string{"pricing", "model", "fit"}},
	{"recommend", []string{"pricing", "model", "fit", "jobtime"}},
}

// impure are standard packages a room must not import: files, processes, the network,
// the clock's side effects aside from time values.
var impure = []string{"os", "os/exec", "net", "net/http", "io/ioutil", "syscall", "database/sql", "log", "log/slog"}

// maxRoomFileLines bounds a room's source files (issue 22: no file over ~600 lines).
const maxRoomFileLines = 620

func TestRoomsImportOnlyBelow(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to list imports with: %v", err)
	}
	const mod = "github.com/pickergpu/picker/"
	for _, r := range rooms {
		out, err := exec.Command(gobin, "list", "-f", `{{join .Imports "\n"}}`, mod+r.pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", r.pkg, err)
		}
		imports := strings.Fields(string(out))
		if len(imports) == 0 {
			t.Fatalf("go list %s: no imports listed; the listing is wrong", r.pkg)
		}
		for _, p := range imports {
			if own, ok := strings.CutPrefix(p, mod); ok {
				if !slices.Contains(r.below, own) {
					t.Errorf("%s imports %s: a room imports only %v", r.pkg, own, r.below)
				}
				continue
			}
			if slices.Contains(impure, p) {
				t.Errorf("%s imports %s: a room does no I/O (that is modelref's, store's or cmd's job)", r.pkg, p)
			}
		}
	}
}

func TestRoomFilesStaySmall(t *testing.T) {
	for _, r := range rooms {
		files, err := filepath.Glob(filepath.Join("..", "..", r.pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files found (%v)", r.pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			n := countLines(t, f)
			if n > maxRoomFileLines {
				t.Errorf("%s: %d lines; split it by concern (at most %d)", f, n, maxRoomFileLines)
			}
		}
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

package providertest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildFetch builds cmd/picker-fetch (the program that runs the SDK adapters for
// picker, see providers/fetchproc) into a directory of the test's and returns its path:
// for tests that run an adapter the way picker does, in the child process. It skips the
// test when there is no go tool to build with.
func BuildFetch(t testing.TB) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build picker-fetch with: %v", err)
	}
	out := filepath.Join(t.TempDir(), "picker-fetch")
	if b, err := exec.Command(gobin, "build", "-o", out, "github.com/pickergpu/picker/cmd/picker-fetch").CombinedOutput(); err != nil {
		t.Fatalf("go build picker-fetch: %v\n%s", err, b)
	}
	return out
}

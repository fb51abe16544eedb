package providertest

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/fetchproc"
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

// SameAsInProcess checks that got, an adapter's snapshot through picker-fetch, is want,
// the same adapter's in process, but for ObservedAt (the child reads its own clock) and
// the offers' order: a Streamer's parts arrive as its parts complete (the aws adapter's
// regions run concurrently), so both are compared in Key order.
func SameAsInProcess(t *testing.T, got, want *providers.Snapshot) {
	t.Helper()
	CheckSnapshot(t, got)
	for _, s := range []*providers.Snapshot{want, got} {
		for i := range s.Offers {
			s.Offers[i].ObservedAt = time.Time{}
		}
		slices.SortFunc(s.Offers, func(a, b pricing.Offer) int { return strings.Compare(a.Key().String(), b.Key().String()) })
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("through picker-fetch: %d offers, regions %v, warnings %q, failed %v\nin process: %d offers, regions %v, warnings %q, failed %v",
			len(got.Offers), got.Regions, got.Warnings, got.Failed, len(want.Offers), want.Regions, want.Warnings, want.Failed)
	}
}

// SameErrorAsInProcess checks that got, an adapter's error through picker-fetch, has
// want's message and code (want: the same adapter's in process) and mentions cause.
func SameErrorAsInProcess(t testing.TB, got, want error, cause string) {
	t.Helper()
	if got == nil || want == nil || got.Error() != want.Error() || pricing.ErrorCode(got) != pricing.ErrorCode(want) {
		t.Errorf("through picker-fetch: %v (%q)\nin process: %v (%q)", got, pricing.ErrorCode(got), want, pricing.ErrorCode(want))
	}
	if got == nil || !strings.Contains(got.Error(), cause) {
		t.Errorf("error %v; want it to name %q", got, cause)
	}
}

// CancelStopsChild cancels p's fetch once the fake server has a call in flight (reqs
// receives each such call's context; the server must hold it until the client hangs
// up) and checks that the fetch returns context.Canceled and that the child hangs up.
func CancelStopsChild(t testing.TB, p providers.Provider, reqs <-chan context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	blocked := make(chan context.Context, 1)
	go func() { r := <-reqs; blocked <- r; cancel() }()
	t0 := time.Now()
	_, err := p.Fetch(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch: %v; want context.Canceled", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("Fetch took %v after cancel", d)
	}
	select {
	case <-(<-blocked).Done(): // the child hung up: it is gone
	case <-time.After(5 * time.Second):
		t.Error("the child's call is still open after Fetch returned")
	}
}

// FetchChild returns the parent side of picker-fetch for the adapter name with cfg, its
// Config, logging errors only; PICKER_FETCH (BuildFetch's path) says where the child is.
func FetchChild(t testing.TB, name string, cfg any) *fetchproc.Provider {
	t.Helper()
	p, err := fetchproc.New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Configure(fetchproc.Settings{LogLevel: slog.LevelError}); err != nil {
		t.Fatal(err)
	}
	return p
}

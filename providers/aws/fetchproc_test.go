package aws

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/fetchproc"
	"github.com/pickergpu/picker/providers/providertest"
)

// TestThroughPickerFetch runs the adapter the way picker does: in the picker-fetch
// program (built once here), through providers/fetchproc's parent side, against the
// fixture fake. The offers are the in-process adapter's (but for ObservedAt, the
// child's own clock); an error keeps its message and code; cancelling stops the child,
// which hangs up on the server.
func TestThroughPickerFetch(t *testing.T) {
	t.Setenv(fetchproc.EnvPath, providertest.BuildFetch(t))
	staticCredentials(t)
	child := func(t *testing.T, url string) *fetchproc.Provider {
		t.Helper()
		p, err := fetchproc.New(Name, Config{Common: providers.Common{Regions: []string{"us-east-1", "us-west-2"}, Endpoint: url}})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Configure(fetchproc.Settings{LogLevel: slog.LevelError}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("offers", func(t *testing.T) {
		url := newFakeAWS(t).serve(t)
		want, err := newTestProvider(t, url).Fetch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got, err := child(t, url).Fetch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		providertest.CheckSnapshot(t, got)
		for _, s := range []*providers.Snapshot{want, got} {
			for i := range s.Offers {
				s.Offers[i].ObservedAt = time.Time{}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("through picker-fetch: %d offers, regions %v, warnings %q, failed %v\nin process: %d offers, regions %v, warnings %q, failed %v",
				len(got.Offers), got.Regions, got.Warnings, got.Failed, len(want.Offers), want.Regions, want.Warnings, want.Failed)
		}
	})
	t.Run("auth error", func(t *testing.T) {
		fake := newFakeAWS(t)
		fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `<Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to validate the provided access credentials</Message></Error></Errors><RequestID>r1</RequestID></Response>`)
			return true
		}
		url := fake.serve(t)
		_, want := newTestProvider(t, url).Fetch(context.Background())
		_, got := child(t, url).Fetch(context.Background())
		if got == nil || want == nil || got.Error() != want.Error() || pricing.ErrorCode(got) != pricing.ErrorCode(want) {
			t.Errorf("through picker-fetch: %v (%q)\nin process: %v (%q)", got, pricing.ErrorCode(got), want, pricing.ErrorCode(want))
		}
		if !strings.Contains(got.Error(), "AuthFailure") || pricing.ErrorCode(got) != pricing.Unavailable {
			t.Errorf("error %v (%q); want the AuthFailure, unavailable", got, pricing.ErrorCode(got))
		}
	})
	t.Run("cancel", func(t *testing.T) {
		fake := newFakeAWS(t)
		release := make(chan struct{})
		defer close(release)
		fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
			if api == "GetProducts" {
				<-release
			}
			return false
		}
		reqs := make(chan context.Context, 16)
		srv := providertest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Amz-Target") != "" {
				reqs <- r.Context()
			}
			fake.ServeHTTP(w, r)
		}))
		ctx, cancel := context.WithCancel(context.Background())
		blocked := make(chan context.Context, 1)
		go func() { r := <-reqs; blocked <- r; cancel() }()
		t0 := time.Now()
		_, err := child(t, srv.URL).Fetch(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Fetch: %v; want context.Canceled", err)
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Errorf("Fetch took %v after cancel", d)
		}
		select {
		case <-(<-blocked).Done(): // the child hung up: it is gone
		case <-time.After(5 * time.Second):
			t.Error("the child's GetProducts call is still open after Fetch returned")
		}
	})
}

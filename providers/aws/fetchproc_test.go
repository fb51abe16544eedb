package aws

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/fetchproc"
	"github.com/pickergpu/picker/providers/providertest"
)

// TestThroughPickerFetch runs the adapter the way picker does: in the picker-fetch
// program (built once here), through providers/fetchproc's parent side, against the
// fixture fake. The offers are the in-process adapter's; an error keeps its message
// and code; cancelling stops the child, which hangs up on the server.
func TestThroughPickerFetch(t *testing.T) {
	t.Setenv(fetchproc.EnvPath, providertest.BuildFetch(t))
	staticCredentials(t)
	child := func(t *testing.T, url string) *fetchproc.Provider {
		return providertest.FetchChild(t, Name, Config{Common: providers.Common{Regions: []string{"us-east-1", "us-west-2"}, Endpoint: url}})
	}
	providertest.Run(t, func(t *testing.T) providers.Provider { return child(t, newFakeAWS(t).serve(t)) })
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
		providertest.SameAsInProcess(t, got, want)
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
		providertest.SameErrorAsInProcess(t, got, want, "AuthFailure")
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
		providertest.CancelStopsChild(t, child(t, srv.URL), reqs)
	})
}

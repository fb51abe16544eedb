package gcp

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
	child := func(t *testing.T, url string) *fetchproc.Provider {
		return providertest.FetchChild(t, Name, Config{Common: providers.Common{Endpoint: url}, Project: "test-project", APIKeyEnv: "PICKER_TEST_GCP_KEY"})
	}
	providertest.Run(t, func(t *testing.T) providers.Provider { return child(t, newFakeGoogle(t).serve(t)) })
	t.Run("offers", func(t *testing.T) {
		url := newFakeGoogle(t).serve(t)
		want, err := newTestProvider(t, url, nil).Fetch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got, err := child(t, url).Fetch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		providertest.SameAsInProcess(t, got, want)
	})
	t.Run("permission denied", func(t *testing.T) {
		fake := newFakeGoogle(t)
		fake.fault = func(w http.ResponseWriter, path string, n int) bool {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"error":{"code":403,"message":"Required 'compute.machineTypes.list' permission","status":"PERMISSION_DENIED"}}`)
			return true
		}
		url := fake.serve(t)
		_, want := newTestProvider(t, url, nil).Fetch(context.Background())
		_, got := child(t, url).Fetch(context.Background())
		providertest.SameErrorAsInProcess(t, got, want, "compute.machineTypes.list")
	})
	t.Run("cancel", func(t *testing.T) {
		fake := newFakeGoogle(t)
		release := make(chan struct{})
		defer close(release)
		fake.fault = func(w http.ResponseWriter, path string, n int) bool {
			if path == skusPath {
				<-release
			}
			return false
		}
		reqs := make(chan context.Context, 16)
		srv := providertest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == skusPath {
				reqs <- r.Context()
			}
			fake.ServeHTTP(w, r)
		}))
		providertest.CancelStopsChild(t, child(t, srv.URL), reqs)
	})
}

package gcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pickergpu/picker/providers/httpx"
)

// Issue 18, case 3: a billing call redirected to another host must not carry the API
// key (added by the transport to every request) there; the redirect is refused.
func TestCredentialsNeverFollowCrossHostRedirect(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.URL.RawQuery+" "+r.Header.Get("X-Goog-Api-Key")+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
	}))
	defer other.Close()
	fake := newFakeGoogle(t)
	fake.fault = func(w http.ResponseWriter, path string, n int) bool {
		if path != skusPath {
			return false
		}
		w.Header().Set("Location", other.URL+"/steal")
		w.WriteHeader(http.StatusFound)
		return true
	}
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	// One client trusting both test servers' certificates.
	client := srv.Client()
	client.Transport.(*http.Transport).TLSClientConfig.RootCAs.AddCert(other.Certificate())
	p := newTestProvider(t, srv.URL, nil, WithHTTPClient(client))
	_, err := p.Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "redirect to another host refused") {
		t.Errorf("Fetch error %v, want the cross-host redirect refused", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range leaked {
		if strings.Contains(l, testAPIKey) {
			t.Errorf("the key reached the redirect target: %q", l)
		}
	}
	if len(leaked) > 0 {
		t.Errorf("the redirect target was called %d times", len(leaked))
	}
}

// Issue 18, case 2: an answer over the cap fails with an error naming the cap, after
// reading no more than the cap (the 2 GiB GCP answer took the process to 9 GiB).
func TestAnswerOverTheCap(t *testing.T) {
	httpx.SetMaxBodyBytes(64 << 10)
	defer httpx.SetMaxBodyBytes(0)
	fake := newFakeGoogle(t)
	fake.fault = func(w http.ResponseWriter, path string, n int) bool {
		if path != machinesPath {
			return false
		}
		w.Write([]byte(`{"items":{"zones/x":{"machineTypes":[`))
		chunk := []byte(strings.Repeat(`{"name":"a2-highgpu-1g","guestCpus":12},`, 1000))
		for range 100 { // ~4 MB, far over the 64 KiB cap
			if _, err := w.Write(chunk); err != nil {
				return true
			}
		}
		w.Write([]byte(`{}]}}}`))
		return true
	}
	p := newTestProvider(t, fake.serve(t), nil)
	_, err := p.Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "max_answer_mib") {
		t.Fatalf("Fetch error %v, want the answer cap named", err)
	}
	if n := fake.count(machinesPath); n != 1 {
		t.Errorf("%d machine-type calls, want 1 (an answer over the cap is not retried)", n)
	}
}

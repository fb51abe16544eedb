package aws

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pickergpu/picker/providers/httpx"
)

// Issue 18, case 2: an AWS answer over the cap ([refresh] max_answer_mib) fails that
// region with an error naming the cap instead of being read whole.
func TestAnswerOverTheCap(t *testing.T) {
	httpx.SetMaxBodyBytes(64 << 10)
	defer httpx.SetMaxBodyBytes(0)
	fake := newFakeAWS(t)
	fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
		if api != "DescribeInstanceTypes" {
			return false
		}
		w.Header().Set("Content-Type", "text/xml")
		w.Write([]byte(`<DescribeInstanceTypesResponse><instanceTypeSet>`))
		chunk := []byte(strings.Repeat(`<item><instanceType>p4d.24xlarge</instanceType></item>`, 1000))
		for range 100 { // ~5 MB
			if _, err := w.Write(chunk); err != nil {
				return true
			}
		}
		w.Write([]byte(`</instanceTypeSet></DescribeInstanceTypesResponse>`))
		return true
	}
	p := newTestProvider(t, fake.serve(t))
	_, err := p.Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "max_answer_mib") {
		t.Fatalf("Fetch error %v, want the answer cap named", err)
	}
}

// Issue 18, case 3: a signed request is never redirected to another host.
func TestNoCrossHostRedirect(t *testing.T) {
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer other.Close()
	fake := newFakeAWS(t)
	fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
		w.Header().Set("Location", other.URL+"/")
		w.WriteHeader(http.StatusTemporaryRedirect)
		return true
	}
	p := newTestProvider(t, fake.serve(t))
	if _, err := p.Fetch(context.Background()); err == nil {
		t.Fatal("Fetch succeeded through a redirect")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the redirect target got %d signed requests", n)
	}
}

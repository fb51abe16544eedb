package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestProviderRowsCached: the Ask page (every view, the empty form too) reads the
// providers' freshness from a cache kept until the data version moves; a failed refresh
// moves it and shows at once (issue 30: every Ask page recomputed the summary, 145 ms
// at 100k offers).
func TestProviderRowsCached(t *testing.T) {
	a, _ := newTestApp(t, "", func() time.Time { return fixedNow })
	srv := httptest.NewServer(a.apiHandler())
	defer srv.Close()
	for range 3 {
		if code, _ := get(t, srv.URL+"/"); code != http.StatusOK {
			t.Fatalf("/ = %d", code)
		}
	}
	if a.provCache.reads != 1 {
		t.Errorf("three Ask pages computed the provider rows %d times; want 1", a.provCache.reads)
	}
	if err := a.st.RecordFailure(context.Background(), "lambda", fixedNow, fixedNow, errors.New("HTTP 503")); err != nil {
		t.Fatal(err)
	}
	rows, err := a.cachedProviderRows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if a.provCache.reads != 2 {
		t.Errorf("after a refresh the rows were computed %d times; want 2", a.provCache.reads)
	}
	for _, r := range rows {
		if r.Name == "lambda" && r.ConsecutiveFailures == 0 {
			t.Error("the cached rows miss the new failure")
		}
	}
}

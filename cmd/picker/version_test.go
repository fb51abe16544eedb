package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pickergpu/picker/buildinfo"
)

// TestVersionFlag: picker --version exits 0 and prints what picker version prints,
// even with a config file that does not load (no setup runs before it).
func TestVersionFlag(t *testing.T) {
	db := tempDB(t)
	want := runCLI(t, db, false, "version")
	if want.code != 0 || !strings.HasPrefix(want.stdout, "picker ") || !strings.Contains(want.stdout, "\nprice snapshot: ") || !strings.Contains(want.stdout, "\ndatabase schema: ") {
		t.Fatalf("picker version: exit %d %q %s", want.code, want.stdout, want.stderr)
	}
	for _, args := range [][]string{{"--version"}, {"--config", "/nonexistent/picker.toml", "--version"}} {
		r := runCLI(t, db, false, args...)
		if r.code != 0 || r.stdout != want.stdout {
			t.Errorf("%q: exit %d %q (stderr %q); want exit 0 %q", args, r.code, r.stdout, r.stderr, want.stdout)
		}
	}
}

// TestVersionText: the stamped build (-ldflags -X …buildinfo.Version/Commit/Date)
// shows in picker version's first line, and its JSON carries the same fields.
func TestVersionText(t *testing.T) {
	v := versionFrom(buildinfo.From("v1.2.3", "0123456789abcdef", "2026-12-01T10:00:00Z", nil))
	if v.Version != "v1.2.3" || v.Commit != "0123456789ab" || v.Date != "2026-12-01T10:00:00Z" || v.SnapshotDate == "" || v.SchemaVersion < 1 {
		t.Errorf("versionFrom = %+v", v)
	}
	first, _, _ := strings.Cut(versionText(v), "\n")
	if want := "picker v1.2.3 (0123456789ab, 2026-12-01T10:00:00Z) " + v.Go; first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
}

// TestHealthcheck: exit 0 on 200 {"status":"ok"}, 1 on anything else or no answer;
// the default URL follows [daemon] listen, a wildcard host asked on loopback.
func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		if status == http.StatusOK {
			w.Write([]byte(`{"status":"ok"}`))
		} else {
			w.Write([]byte(`{"status":"failing"}`))
		}
	}))
	defer srv.Close()
	db := tempDB(t)
	if r := runCLI(t, db, false, "healthcheck", "--url", srv.URL+"/healthz"); r.code != 0 {
		t.Errorf("healthy: exit %d %s", r.code, r.stderr)
	}
	status = http.StatusServiceUnavailable
	if r := runCLI(t, db, false, "healthcheck", "--url", srv.URL+"/healthz"); r.code != 1 || !strings.Contains(r.stderr, "503") {
		t.Errorf("failing: exit %d %s", r.code, r.stderr)
	}
	srv.Close()
	if r := runCLI(t, db, false, "healthcheck", "--url", srv.URL+"/healthz", "--timeout", "2s"); r.code != 1 {
		t.Errorf("no daemon: exit %d %s", r.code, r.stderr)
	}
	for addr, want := range map[string]string{
		"0.0.0.0:8080":   "http://127.0.0.1:8080/healthz",
		"[::]:9000":      "http://127.0.0.1:9000/healthz",
		":8081":          "http://127.0.0.1:8081/healthz",
		"10.0.0.5:8080":  "http://10.0.0.5:8080/healthz",
		"127.0.0.1:8080": "http://127.0.0.1:8080/healthz",
	} {
		if got := healthURL(addr); got != want {
			t.Errorf("healthURL(%q) = %q, want %q", addr, got, want)
		}
	}
}

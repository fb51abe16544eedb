package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTokenInURLNotLogged: the daemon's bearer token (or any token-shaped value)
// passed in the URL, plain or percent-encoded, is masked in the access log (issue 30: it
// was logged in clear).
func TestTokenInURLNotLogged(t *testing.T) {
	a, logs := newTestApp(t, "[daemon]\ntoken_env = \"PICKER_API_TOKEN\"\n", func() time.Time { return fixedNow })
	const tok = "team/token+0123=="
	a.m.Getenv = func(k string) string { return map[string]string{"PICKER_API_TOKEN": tok}[k] }
	a.red = nil
	srv := httptest.NewServer(a.apiHandler())
	defer srv.Close()
	for _, q := range []string{"token=" + url.QueryEscape(tok), "access_token=Other9Secret9Value", "x=" + url.QueryEscape(tok)} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/providers?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := logs.String()
	if !strings.Contains(got, "/v1/providers") {
		t.Fatalf("no access log lines:\n%s", got)
	}
	for _, bad := range []string{url.QueryEscape(tok), tok, "Other9Secret9Value"} {
		if strings.Contains(got, bad) {
			t.Errorf("the log shows %q:\n%s", bad, got)
		}
	}
}

// TestExportOutDashIsStdout: --out - writes to stdout, as for most Unix tools, and
// creates no file named "-" (issue 30).
func TestExportOutDashIsStdout(t *testing.T) {
	a, _ := newTestApp(t, "", func() time.Time { return fixedNow })
	dir := t.TempDir()
	t.Chdir(dir)
	r := runCLI(t, a.st.Path(), false, "export", "--out", "-")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "provider,region,") {
		t.Fatalf("exit %d, stdout %.80q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`a file named "-" was written`)
	}
}

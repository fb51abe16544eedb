package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers/providertest"
)

// runCLIEnv is runCLI with more environment (the child process itself inherits the
// real environment: t.Setenv for what it must see).
func runCLIEnv(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	all := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir()}
	for k, v := range env {
		all[k] = v
	}
	tty := false
	m := Main{Stdout: &out, Stderr: &errb, Args: args, TTY: &tty, Getenv: func(k string) string { return all[k] }, Now: func() time.Time { return fixedNow }}
	code := m.Run(context.Background())
	return result{code, out.String(), errb.String()}
}

// gcpFixtures serves the gcp adapter's fixture pages (providers/gcp/testdata): each
// list call's first page, then the page whose predecessor named the pageToken asked for.
func gcpFixtures(t *testing.T) string {
	t.Helper()
	pages := map[string][]string{
		"/compute/v1/projects/p1/aggregated/machineTypes":     {"machine_types_page1.json", "machine_types_page2.json"},
		"/compute/v1/projects/p1/aggregated/acceleratorTypes": {"accelerator_types_page1.json", "accelerator_types_page2.json"},
		"/v1/services/6F81-5844-456A/skus":                    {"skus_page1.json", "skus_page2.json", "skus_page3.json"},
	}
	tokenRe := regexp.MustCompile(`"nextPageToken"\s*:\s*"([^"]*)"`)
	return providertest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var prev []byte
		for _, name := range pages[r.URL.Path] {
			b, err := os.ReadFile(filepath.Join("..", "..", "providers", "gcp", "testdata", name))
			if err != nil {
				t.Error(err)
			}
			m := tokenRe.FindSubmatch(prev)
			if tok := r.URL.Query().Get("pageToken"); (tok == "" && prev == nil) || (m != nil && string(m[1]) == tok) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(b)
				return
			}
			prev = b
		}
		http.NotFound(w, r)
	})).URL
}

// TestRefreshThroughPickerFetch: `picker refresh` runs aws and gcp in picker-fetch (built
// here, found through PICKER_FETCH): gcp's offers land and -q keeps stderr empty; an
// AWS auth failure fails the refresh with exit 1, as it did in one process; a bad
// section is exit 2 before any child starts; a missing picker-fetch says what to install.
func TestRefreshThroughPickerFetch(t *testing.T) {
	bin := providertest.BuildFetch(t)
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDPICKERTEST", "AWS_SECRET_ACCESS_KEY": "picker-test-secret", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_REGION": "", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	awsURL := providertest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `<Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to validate the provided access credentials</Message></Error></Errors><RequestID>r1</RequestID></Response>`)
	})).URL
	writeConfig := func(extra string) string {
		path := filepath.Join(t.TempDir(), "c.toml")
		body := fmt.Sprintf("[providers.aws]\nendpoint = %q\nregions = [\"us-east-1\"]\n%s\n[providers.gcp]\nendpoint = %q\nproject = \"p1\"\n", awsURL, extra, gcpFixtures(t))
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfg := writeConfig("")
	withFetch := map[string]string{"PICKER_FETCH": bin}

	db := tempDB(t)
	r := runCLIEnv(t, withFetch, "--db", db, "--config", cfg, "-q", "refresh", "--provider", "gcp", "-o", "json")
	var results []struct {
		Provider   string `json:"provider"`
		OffersSeen int    `json:"offers_seen"`
	}
	if r.code != 0 || r.stderr != "" || json.Unmarshal([]byte(r.stdout), &results) != nil || len(results) != 1 || results[0].OffersSeen == 0 {
		t.Fatalf("gcp refresh: exit %d, stdout %q, stderr %q; want 0, offers, and nothing on stderr under -q", r.code, r.stdout, r.stderr)
	}
	// Without -q, the adapter's progress in the child comes back over the frame stream
	// and picker prints it (stderr is no terminal here: plain lines), each list once.
	r = runCLIEnv(t, withFetch, "--db", db, "--config", cfg, "refresh", "--provider", "gcp", "-o", "json")
	for done := 1; done <= 3; done++ { // machine types, accelerator types, SKUs
		if want := fmt.Sprintf("refresh: gcp: %d/3 lists, ", done); strings.Count(r.stderr, want) != 1 {
			t.Errorf("gcp refresh through picker-fetch: stderr %q; want one line %q…", r.stderr, want)
		}
	}
	// gcpFixtures serves 2 + 2 + 3 pages.
	if want := fmt.Sprintf("refresh: gcp: 3/3 lists, 7 pages, %s offers\n", thousands(results[0].OffersSeen)); r.code != 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("gcp refresh through picker-fetch: exit %d, stderr %q; want the last line %q (the offers refresh stored)", r.code, r.stderr, want)
	}
	o := runCLIEnv(t, nil, "--db", db, "offers", "--provider", "gcp", "--region", "us-central1", "-o", "json")
	var offers []pricing.Offer
	if err := json.Unmarshal([]byte(o.stdout), &offers); err != nil || !slices.ContainsFunc(offers, func(of pricing.Offer) bool { return of.Source == pricing.SourceAPI }) {
		t.Errorf("no live gcp offers stored: exit %d, %v, %.300s", o.code, err, o.stdout)
	}

	r = runCLIEnv(t, withFetch, "--db", db, "--config", cfg, "-q", "refresh", "--provider", "aws")
	if r.code != 1 || !strings.Contains(r.stdout, "AuthFailure") || !strings.Contains(r.stderr, "refresh failed for aws") {
		t.Errorf("aws auth failure: exit %d, stdout %q, stderr %q; want exit 1 naming AuthFailure", r.code, r.stdout, r.stderr)
	}

	r = runCLIEnv(t, withFetch, "--db", db, "--config", writeConfig(`pricing_region = "mars-1"`), "refresh", "--provider", "aws")
	if r.code != 2 || !strings.Contains(r.stderr, `pricing_region "mars-1"`) {
		t.Errorf("bad pricing_region: exit %d, stderr %q; want exit 2 naming it", r.code, r.stderr)
	}

	t.Setenv("PATH", t.TempDir())
	r = runCLIEnv(t, nil, "--db", db, "--config", cfg, "refresh", "--provider", "gcp")
	if r.code != 1 || !strings.Contains(r.stderr, "gcp: needs the picker-fetch program") || !strings.Contains(r.stderr, "go install github.com/pickergpu/picker/cmd/picker-fetch@latest") {
		t.Errorf("no picker-fetch: exit %d, stderr %q; want exit 1 saying what to install", r.code, r.stderr)
	}
}

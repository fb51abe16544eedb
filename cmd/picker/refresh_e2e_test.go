package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// fakeClouds serves the Azure Retail Prices, Lambda Cloud and RunPod GraphQL APIs from
// the adapters' fixtures (providers/*/testdata, built from shared/reference/providers),
// in their exact wire formats. failLambda makes Lambda answer 500 to everything.
func fakeClouds(t *testing.T, failLambda bool) (azure, lambda, runpod *httptest.Server) {
	t.Helper()
	read := func(path string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "providers", path))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	regionRe := regexp.MustCompile(`armRegionName eq '([a-z0-9]+)'`)
	azure = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/retail/prices" {
			http.NotFound(w, r)
			return
		}
		region := "none"
		if m := regionRe.FindStringSubmatch(r.URL.Query().Get("$filter")); m != nil {
			region = m[1]
		}
		skip := 0
		fmt.Sscan(r.URL.Query().Get("$skip"), &skip)
		body, err := os.ReadFile(filepath.Join("..", "..", "providers", "azure", "testdata", fmt.Sprintf("%s_page%d.json", region, skip/1000+1)))
		if err != nil {
			body = read("azure/testdata/eastus_page3.json") // the empty last page
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(body)
	}))
	lambda = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failLambda {
			http.Error(w, `{"error":{"code":"provider/internal","message":"boom"}}`, http.StatusInternalServerError)
			return
		}
		if r.URL.Path != "/api/v1/instance-types" || r.Header.Get("Authorization") != "Bearer secret-lambda-key" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write(read("lambda/testdata/error_invalid_api_key.json"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(read("lambda/testdata/instance_types.json"))
	}))
	runpod = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/graphql" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(read("runpod/testdata/gpu_types.json"))
	}))
	for _, s := range []*httptest.Server{azure, lambda, runpod} {
		t.Cleanup(s.Close)
	}
	return azure, lambda, runpod
}

func cloudConfig(t *testing.T, azure, lambda, runpod, lambdaTimeout string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "c.toml")
	body := fmt.Sprintf(`
[providers.azure]
enabled = true
regions = ["eastus", "westeurope"]
endpoint = %q

[providers.lambda]
enabled = true
endpoint = %q
api_key_env = "PICKER_TEST_LAMBDA_KEY"
timeout = %q

[providers.runpod]
enabled = true
endpoint = %q
`, azure, lambda, lambdaTimeout, runpod)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestRefreshAzureLambdaRunPodEndToEnd(t *testing.T) {
	t.Setenv("PICKER_TEST_LAMBDA_KEY", "secret-lambda-key")
	az, lm, rp := fakeClouds(t, false)
	cfg := cloudConfig(t, az.URL, lm.URL, rp.URL, "1m")
	db := tempDB(t)
	r := runCLI(t, db, false, "--config", cfg, "refresh", "--provider", "azure,lambda,runpod", "-o", "json")
	if r.code != 0 {
		t.Fatalf("refresh exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "secret-lambda-key") {
		t.Fatal("the Lambda API key was printed")
	}
	var results []struct {
		Provider   string `json:"provider"`
		OffersSeen int    `json:"offers_seen"`
		Error      string `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &results); err != nil || len(results) != 3 {
		t.Fatalf("refresh results %q: %v", r.stdout, err)
	}
	for _, res := range results {
		if res.OffersSeen == 0 || res.Error != "" {
			t.Errorf("%s: %d offers, error %q", res.Provider, res.OffersSeen, res.Error)
		}
	}
	for _, prov := range []string{"azure", "lambda", "runpod"} {
		o := runCLI(t, db, false, "offers", "--provider", prov, "-o", "json")
		var offers []pricing.Offer
		if err := json.Unmarshal([]byte(o.stdout), &offers); err != nil {
			t.Fatal(err)
		}
		live := 0
		for _, of := range offers {
			if of.Source != "api" {
				continue
			}
			live++
			if _, ok := pricing.LookupGPU(of.GPUModel); !ok {
				t.Errorf("%s offer %s has non-canonical GPU %q", prov, of.Key(), of.GPUModel)
			}
			if !of.ObservedAt.After(fixedNow.AddDate(-1, 0, 0)) {
				t.Errorf("%s offer %s observed at %v; want the refresh time", prov, of.Key(), of.ObservedAt)
			}
		}
		if live == 0 {
			t.Errorf("%s: no live offers stored", prov)
		}
	}
	// Azure's refresh covered eastus and westeurope only: there every offer is live, and
	// the snapshot's other Azure regions keep their snapshot prices.
	east := runCLI(t, db, false, "offers", "--provider", "azure", "--region", "eastus", "-o", "json")
	var eastOffers []pricing.Offer
	json.Unmarshal([]byte(east.stdout), &eastOffers)
	for _, o := range eastOffers {
		if o.Source != "api" {
			t.Errorf("eastus still lists snapshot offer %s", o.Key())
		}
	}
	other := runCLI(t, db, false, "offers", "--provider", "azure", "--region", "japaneast", "-o", "json")
	var otherOffers []pricing.Offer
	json.Unmarshal([]byte(other.stdout), &otherOffers)
	if len(otherOffers) == 0 || otherOffers[0].Source != "snapshot" {
		t.Errorf("japaneast offers = %d (first %+v); want the snapshot's kept", len(otherOffers), otherOffers)
	}
}

func TestRefreshFailingProviderKeepsPricesAndExits1(t *testing.T) {
	t.Setenv("PICKER_TEST_LAMBDA_KEY", "secret-lambda-key")
	az, lm, rp := fakeClouds(t, true)
	// A 2 s timeout: the retry policy gives up as soon as its next wait would pass it.
	cfg := cloudConfig(t, az.URL, lm.URL, rp.URL, "2s")
	db := tempDB(t)
	before := runCLI(t, db, false, "offers", "--provider", "lambda", "-o", "json")
	var lambdaBefore []pricing.Offer
	json.Unmarshal([]byte(before.stdout), &lambdaBefore)
	// Lambda answers 500 to everything; azure lands.
	r := runCLI(t, db, false, "--config", cfg, "refresh", "--provider", "azure,lambda")
	if r.code != 1 || !strings.Contains(r.stderr, "lambda") || strings.Contains(r.stderr, "azure,") {
		t.Fatalf("exit %d, stderr %q; want 1 naming only lambda", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "azure\t") {
		t.Errorf("refresh table lacks azure's row: %q", r.stdout)
	}
	after := runCLI(t, db, false, "offers", "--provider", "lambda", "-o", "json")
	var lambdaAfter []pricing.Offer
	json.Unmarshal([]byte(after.stdout), &lambdaAfter)
	if len(lambdaAfter) != len(lambdaBefore) || len(lambdaAfter) == 0 {
		t.Errorf("lambda offers %d before, %d after a failed refresh; want them kept", len(lambdaBefore), len(lambdaAfter))
	}
	p := runCLI(t, db, false, "providers", "-o", "json")
	var rows []providerRow
	json.Unmarshal([]byte(p.stdout), &rows)
	for _, row := range rows {
		if row.Name == "lambda" && (row.ConsecutiveFailures != 1 || row.LastError == "") {
			t.Errorf("lambda status = %+v; want 1 failure with its error", row)
		}
	}
}

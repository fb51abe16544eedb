package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers/providertest"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/store"
)

// fakeGCPAccount is gcpFixtures plus Compute regions.get for project p1's us-central1
// (the gcp fixture's Region answer, providers/gcp/testdata) with every GPU quota at
// limit 0, and the H100 metrics the fixture lacks added at 0: the account can launch no
// GPU there, the one region the fixtures price.
func fakeGCPAccount(t *testing.T, regionsGets *atomic.Int64) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "providers", "gcp", "testdata", "regions_get_us-central1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var region map[string]any
	if err := json.Unmarshal(b, &region); err != nil {
		t.Fatal(err)
	}
	quotas := append(region["quotas"].([]any),
		map[string]any{"metric": "NVIDIA_H100_GPUS", "limit": 8.0, "usage": 0.0},
		map[string]any{"metric": "PREEMPTIBLE_NVIDIA_H100_GPUS", "limit": 8.0, "usage": 0.0})
	for _, q := range quotas {
		if m := q.(map[string]any); strings.Contains(m["metric"].(string), "NVIDIA_") {
			m["limit"] = 0.0
		}
	}
	region["quotas"] = quotas
	answer, _ := json.Marshal(region)
	rest, _ := url.Parse(gcpFixtures(t))
	proxy := httputil.NewSingleHostReverseProxy(rest)
	return providertest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/compute/v1/projects/p1/regions/") {
			regionsGets.Add(1)
			if r.URL.Path != "/compute/v1/projects/p1/regions/us-central1" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(answer)
			return
		}
		proxy.ServeHTTP(w, r)
	})).URL
}

type launchAnswer struct {
	Offers []struct {
		Provider     string   `json:"provider"`
		Region       string   `json:"region"`
		InstanceType string   `json:"instance_type"`
		Purchase     string   `json:"purchase"`
		PriceUSDHr   float64  `json:"price_usd_hr"`
		EstCostUSD   *float64 `json:"est_cost_usd"`
	} `json:"offers"`
	Excluded []struct {
		GPUModel string `json:"gpu_model"`
		Offers   int    `json:"offers"`
		Reason   string `json:"reason"`
		Code     string `json:"code"`
	} `json:"excluded"`
	Warnings    []string `json:"warnings"`
	NearestMiss string   `json:"nearest_miss"`
}

// TestQuotaFakeAccount: on a fake GCP account whose us-central1 GPU quotas are 0, `picker
// refresh` reads the quotas through picker-fetch (one regions.get for the one region
// priced), `picker recommend` never ranks a gcp offer there first and counts them under
// no-quota with the increase to ask for, --ignore-quota gives the answer without quotas,
// a refresh within the schedule period reads no quota again, and `picker providers`
// shows the quota read's age. The three jobs' before/after top offers are logged (the
// issue's figures).
func TestQuotaFakeAccount(t *testing.T) {
	bin := providertest.BuildFetch(t)
	var gets atomic.Int64
	cfg := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(cfg, []byte("[providers.gcp]\nendpoint = \""+fakeGCPAccount(t, &gets)+"\"\nproject = \"p1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PICKER_FETCH": bin}
	db := tempDB(t)
	start := time.Now()
	if r := runCLIEnv(t, env, "--db", db, "--config", cfg, "-q", "refresh", "--provider", "gcp"); r.code != 0 {
		t.Fatalf("refresh: exit %d, %s", r.code, r.stderr)
	}
	t.Logf("refresh with the quota read: %v, %d regions.get", time.Since(start).Round(time.Millisecond), gets.Load())
	if gets.Load() != 1 {
		t.Errorf("%d regions.get calls; want 1 (us-central1, the one region priced)", gets.Load())
	}
	start = time.Now()
	if r := runCLIEnv(t, env, "--db", db, "--config", cfg, "-q", "refresh", "--provider", "gcp"); r.code != 0 || gets.Load() != 1 {
		t.Errorf("a second refresh within the schedule period: exit %d, %d regions.get in all; want 0 more", r.code, gets.Load())
	}
	t.Logf("refresh without (quotas cached for the schedule period): %v", time.Since(start).Round(time.Millisecond))

	jobs := []struct{ name, args string }{
		{"8B LoRA", "--model llama-3.1-8b --task lora --tokens 5e7"},
		{"70B QLoRA", "--model llama-3.1-70b --task qlora --tokens 1e7"},
		{"70B serving", "--model llama-3.1-70b --prompt-tokens 1000 --output-tokens 200 --requests 1e4 --engine vllm"},
	}
	for _, j := range jobs {
		for _, scope := range []string{"--provider gcp", ""} {
			var ans [2]launchAnswer
			for k, extra := range []string{"--ignore-quota", ""} {
				args := append([]string{"--db", db, "--config", cfg, "recommend", "--purchase", "any", "--top", "3", "-o", "json"}, strings.Fields(j.args+" "+scope+" "+extra)...)
				r := runCLIEnv(t, env, args...)
				if (r.code != 0 && r.code != 3) || json.Unmarshal([]byte(r.stdout), &ans[k]) != nil {
					t.Fatalf("%s %s: exit %d, %.300s %s", j.name, extra, r.code, r.stdout, r.stderr)
				}
			}
			before, after := ans[0], ans[1]
			top := func(a launchAnswer) string {
				if len(a.Offers) == 0 {
					return "nothing fits: " + a.NearestMiss
				}
				o := a.Offers[0]
				cost := "-"
				if o.EstCostUSD != nil {
					cost = fmt.Sprintf("$%.2f", *o.EstCostUSD)
				}
				return fmt.Sprintf("%s %s %s %s $%.2f/h, job %s", o.Provider, o.Region, o.InstanceType, o.Purchase, o.PriceUSDHr, cost)
			}
			t.Logf("%s %s: before %s | after %s", j.name, scope, top(before), top(after))
			for _, o := range after.Offers {
				if o.Provider == "gcp" && o.Region == "us-central1" {
					t.Errorf("%s %s: a gcp us-central1 offer (GPU quota 0) ranked: %+v", j.name, scope, o)
				}
			}
			noQuota := 0
			for _, x := range after.Excluded {
				if x.Code == "no-quota" {
					noQuota += x.Offers
					if !strings.Contains(x.Reason, "request an increase to") || !strings.Contains(x.Reason, "NVIDIA_") {
						t.Errorf("%s: no-quota reason %q", j.name, x.Reason)
					}
				}
			}
			gcpBefore := 0
			for _, o := range before.Offers {
				if o.Provider == "gcp" {
					gcpBefore++
				}
			}
			if gcpBefore > 0 && noQuota == 0 {
				t.Errorf("%s %s: gcp offers ranked before, none counted under no-quota after: %+v", j.name, scope, after.Excluded)
			}
			for _, x := range before.Excluded {
				if x.Code == "no-quota" {
					t.Errorf("%s: --ignore-quota still excluded %+v", j.name, x)
				}
			}
			if scope != "" && len(after.Offers) == 0 && !strings.Contains(after.NearestMiss, "request an increase") {
				t.Errorf("%s: nearest miss %q; want the quota increase", j.name, after.NearestMiss)
			}
		}
	}

	r := runCLIEnv(t, env, "--db", db, "--config", cfg, "providers")
	if !strings.Contains(r.stdout, "quotas: gcp account p1: ") || !strings.Contains(r.stdout, "oldest ") {
		t.Errorf("providers: %s; want the quota read's line with its age", r.stdout)
	}
}

// TestLaunchWarnings: the answer says quotas were not checked for a quota provider shown
// without quota data (why: none, or a failed read and its age), checked with the read's
// age and, after a partly failed read, the age of the quotas kept; ignored with
// --ignore-quota; nothing for providers without quotas; and the sold-out word's age.
func TestLaunchWarnings(t *testing.T) {
	now := fixedNow
	fits := func(ps ...string) []recommend.Fit {
		var out []recommend.Fit
		for _, p := range ps {
			out = append(out, recommend.Fit{Offer: pricing.Offer{Provider: p, Region: "r", InstanceType: "t", Purchase: pricing.OnDemand}})
		}
		return out
	}
	q := pricing.Quota{Provider: "aws", Account: "a", Region: "us-east-1", Code: "L-417A185B"}
	for _, tt := range []struct {
		name string
		lf   launchFacts
		fits []recommend.Fit
		want []string
	}{
		{"no quota data", launchFacts{}, fits("aws", "lambda"),
			[]string{"quotas not checked for aws: no quota data (a refresh with the account's credentials reads them)"}},
		{"no quota provider shown", launchFacts{}, fits("lambda"), nil},
		{"the only read failed", launchFacts{statuses: []store.QuotaStatus{{Provider: "gcp", Attempted: now.Add(-10 * time.Minute), Error: "us-central1: PERMISSION_DENIED"}}},
			fits("gcp"), []string{"quotas not checked for gcp: the quota read failed 10 min ago: us-central1: PERMISSION_DENIED"}},
		{"read, then partly failed", launchFacts{quotas: []pricing.Quota{q}, statuses: []store.QuotaStatus{{Provider: "aws", LastOK: now.Add(-2 * time.Hour),
			Attempted: now.Add(-10 * time.Minute), Error: "us-west-2: denied", RegionsFailed: 1, Oldest: now.Add(-26 * time.Hour)}}},
			fits("aws"), []string{"quotas checked for aws (read 2 h ago; 1 region(s) failed 10 min ago, their last good quotas kept, 26 h old)"}},
		{"ignored", launchFacts{quotas: []pricing.Quota{q}, ignore: true}, fits("aws", "gcp"),
			[]string{"quotas not checked (--ignore-quota) for aws, gcp"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.lf.warnings(tt.fits, now)
			if !slices.Equal(got, tt.want) {
				t.Errorf("warnings %q\nwant %q", got, tt.want)
			}
		})
	}
	sold := fits("lambda")
	sold[0].Available = pricing.SoldOut
	lf := launchFacts{capacity: store.Capacity{sold[0].Key(): {Available: pricing.SoldOut, ObservedAt: now.Add(-5 * time.Minute)}}}
	if got := lf.warnings(sold, now); !slices.Equal(got, []string{"capacity word from lambda (5 min ago)"}) {
		t.Errorf("sold-out warnings %q", got)
	}
	offers := []pricing.Offer{sold[0].Offer, fits("aws")[0].Offer}
	offers[0].Available = pricing.AvailabilityUnknown
	got := lf.apply(offers)
	if got[0].Available != pricing.SoldOut || offers[0].Available != pricing.AvailabilityUnknown {
		t.Errorf("apply: %v (the caller's slice %v); want sold out on a copy", got[0].Available, offers[0].Available)
	}
}

// TestOffersSayAvailable: `picker offers -o json` gives an offer its stored capacity word
// (available false for one its provider reported sold out) and says nothing for the rest.
func TestOffersSayAvailable(t *testing.T) {
	db := tempDB(t)
	r := runCLIEnv(t, nil, "--db", db, "offers", "--provider", "lambda", "--limit", "2", "-o", "json")
	var offers []map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &offers) != nil || len(offers) != 2 {
		t.Fatalf("offers: exit %d, %.300s %s", r.code, r.stdout, r.stderr)
	}
	o := pricing.Offer{Provider: offers[0]["provider"].(string), Region: offers[0]["region"].(string), Zone: offers[0]["zone"].(string),
		InstanceType: offers[0]["instance_type"].(string), Purchase: pricing.Purchase(offers[0]["purchase"].(string)), Available: pricing.SoldOut}
	storeCapacity(t, db, o) // recommend_csv_test.go
	r = runCLIEnv(t, nil, "--db", db, "offers", "--provider", "lambda", "--limit", "2", "-o", "json")
	offers = nil
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &offers) != nil || len(offers) != 2 {
		t.Fatalf("offers: exit %d, %.300s %s", r.code, r.stdout, r.stderr)
	}
	if v, ok := offers[0]["available"]; !ok || v != false {
		t.Errorf("the sold-out offer: available %v (%v); want false", v, ok)
	}
	if _, ok := offers[1]["available"]; ok {
		t.Errorf("an offer without a word: available %v; want it omitted", offers[1]["available"])
	}
}

package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/refresh"
	"github.com/pickergpu/picker/store"
)

// TestQuotaFakeAccount is the fake account on AWS: the fixtures' two regions,
// every GPU vCPU quota 0 in us-east-1 and 768 in us-west-2. A refresh asked for quotas
// (the first, and one a period later) stores them in a real store through the real
// clients; recommend over the stored offers and quotas never ranks a us-east-1 offer
// first, counts what it left out under no-quota, and with IgnoreQuota answers as
// without quotas. The three jobs' before/after top offers, the quota read's requests and
// the refresh time it adds (medians of interleaved runs) are logged: the closing note's
// figures.
func TestQuotaFakeAccount(t *testing.T) {
	fake := newFakeAWS(t)
	fake.quotaValue = func(region, code string) (float64, bool) {
		if region == "us-east-1" {
			return 0, true
		}
		return 768, true
	}
	p := newTestProvider(t, fake.serve(t))
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "picker.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := testNow
	now := func() time.Time { return clock }
	job := refresh.Job{Name: Name, Provider: p, QuotaEvery: time.Hour}

	// Refresh time with and without the quota read, interleaved: each round one refresh
	// a period after the last (quotas due) and one right after it (not due).
	var with, without []time.Duration
	for range 5 {
		for _, due := range []bool{true, false} {
			if due {
				clock = clock.Add(time.Hour)
			}
			before := fake.count("GetServiceQuota", "us-east-1") + fake.count("GetServiceQuota", "us-west-2")
			start := time.Now()
			if r := refresh.Run(ctx, st, job, now); r.Err != nil {
				t.Fatal(r.Err)
			}
			took := time.Since(start)
			calls := fake.count("GetServiceQuota", "us-east-1") + fake.count("GetServiceQuota", "us-west-2") - before
			if due {
				with = append(with, took)
				if calls != 8 {
					t.Errorf("a refresh with quotas due made %d GetServiceQuota calls; want 8 (4 quotas x 2 regions)", calls)
				}
			} else {
				without = append(without, took)
				if calls != 0 {
					t.Errorf("a refresh within the period made %d GetServiceQuota calls; want 0", calls)
				}
			}
		}
	}
	t.Logf("refresh (fake AWS, 2 regions): median %v with the quota read (8 GetServiceQuota), %v without", median(with), median(without))

	offers, err := st.Offers(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	offers = slices.DeleteFunc(offers, func(o pricing.Offer) bool { return o.Provider != Name })
	quotas, err := st.Quotas(ctx)
	if err != nil || len(quotas) != 8 {
		t.Fatalf("stored quotas: %d, %v; want 8", len(quotas), err)
	}
	jobs := []struct {
		name   string
		model  string
		job    fit.Job
		tokens float64
	}{
		{"8B LoRA", "llama-3.1-8b", fit.Job{Task: fit.TaskLoRA, Batch: 1, SeqLen: 2048}, 5e7},
		{"70B QLoRA", "llama-3.1-70b", fit.Job{Task: fit.TaskQLoRA, Batch: 1, SeqLen: 2048}, 1e7},
		{"70B serving", "llama-3.1-70b", fit.Job{Task: fit.TaskInference, Batch: 16, SeqLen: 1200}, 2e6},
	}
	for _, j := range jobs {
		m, ok, err := model.CatalogModel(j.model)
		if err != nil || !ok {
			t.Fatal(j.model, err)
		}
		run := func(ignore bool) *recommend.Recommendation {
			rec, err := recommend.Recommend(recommend.RecommendInput{Model: m, Job: j.job, Offers: offers, Tokens: j.tokens, Top: 3,
				HeadroomPct: -1, Quotas: quotas, IgnoreQuota: ignore})
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}
		before, after := run(true), run(false)
		t.Logf("%s: before %s | after %s", j.name, topFit(before), topFit(after))
		for _, f := range after.Offers {
			if f.Region == "us-east-1" {
				t.Errorf("%s: a us-east-1 offer (quota 0) ranked: %s", j.name, f.Key())
			}
		}
		if len(before.Offers) > 0 && before.Offers[0].Region == "us-east-1" {
			n := 0
			for _, x := range after.Excluded {
				if x.Code == recommend.ExclNoQuota {
					n += x.Offers
				}
			}
			if n == 0 {
				t.Errorf("%s: the best offer without quotas is in us-east-1, yet nothing counted under no-quota: %+v", j.name, after.Excluded)
			}
		}
	}
}

func topFit(r *recommend.Recommendation) string {
	if len(r.Offers) == 0 {
		return "nothing fits: " + r.NearestMiss
	}
	f := r.Offers[0]
	cost := "-"
	if f.EstCostUSD != nil {
		cost = fmt.Sprintf("$%.2f", *f.EstCostUSD)
	}
	return fmt.Sprintf("%s %s %s $%.2f/h, job %s", f.Region, f.InstanceType, f.Purchase, f.PriceUSDHr, cost)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, k int) bool { return s[i] < s[k] })
	return s[len(s)/2]
}

// BenchmarkQuotaRead is what the quota read adds to an aws refresh, local round trips
// only: the real Service Quotas client (config, SigV4, JSON 1.1) reading the four GPU
// quotas, and the real EC2 client listing the running GPU instances (one empty
// DescribeInstances page), of 2 and of 13 regions from an httptest server answering with the fixture's
// items (no network latency: on AWS each call is one more round trip, four regions at a
// time).
func BenchmarkQuotaRead(b *testing.B) {
	items := quotaItems(b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "" { // EC2 query: the usage read's DescribeInstances
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			io.WriteString(w, emptyInstances)
			return
		}
		var in struct{ QuotaCode string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", sqCT)
		body, _ := json.Marshal(map[string]any{"Quota": items[in.QuotaCode]})
		w.Write(body)
	}))
	defer srv.Close()
	b.Setenv("AWS_ACCESS_KEY_ID", "AKIDPICKERTEST")
	b.Setenv("AWS_SECRET_ACCESS_KEY", "picker-test-secret")
	b.Setenv("AWS_CONFIG_FILE", filepath.Join(b.TempDir(), "none"))
	b.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(b.TempDir(), "none"))
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	regions13 := []string{"us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "eu-west-1", "eu-west-2",
		"eu-central-1", "eu-north-1", "ap-south-1", "ap-northeast-1", "ap-southeast-1", "ap-southeast-2"}
	for _, regions := range [][]string{regions13[:2], regions13} {
		b.Run(fmt.Sprintf("regions=%d", len(regions)), func(b *testing.B) {
			p, err := New(Config{Common: providers.Common{Regions: regions, Endpoint: srv.URL}})
			if err != nil {
				b.Fatal(err)
			}
			cfg, err := p.loadConfig(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				rep, warns := p.readQuotas(context.Background(), cfg, nil, testNow)
				if len(rep.Quotas) != 4*len(regions) || rep.Requests != 5*len(regions) || len(warns) > 0 {
					b.Fatalf("%d quotas, %d requests, failed %v, warnings %v", len(rep.Quotas), rep.Requests, rep.Failed, warns)
				}
			}
		})
	}
}

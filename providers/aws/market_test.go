package aws

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// serveMarket answers the market calls in their wire formats, true when it did: the
// Spot Advisor file (unsigned GET), EBS GetProducts (productFamily Storage) and EC2
// GetSpotPlacementScores (query protocol). marketFault, when set, may answer instead.
func (f *fakeAWS) serveMarket(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet && r.URL.Path == "/spot-advisor-data.json" {
		if r.Header.Get("Authorization") != "" {
			f.t.Errorf("spot advisor GET is signed; the file is public")
		}
		n := f.next("SpotAdvisor", "")
		if f.marketFault != nil && f.marketFault(w, "SpotAdvisor", "", n) {
			return true
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(readFixture(f.t, "spot_advisor_data_excerpt.json"))
		return true
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return true // the client hung up mid-body (a cancelled fetch): nothing to answer or check
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	scope := scopeRe.FindStringSubmatch(r.Header.Get("Authorization"))
	switch {
	case r.Header.Get("X-Amz-Target") == "AWSPriceListService.GetProducts" && bytes.Contains(body, []byte(`"Storage"`)):
		var in struct {
			ServiceCode string
			Filters     []struct{ Type, Field, Value string }
		}
		if err := json.Unmarshal(body, &in); err != nil {
			f.t.Errorf("EBS GetProducts body: %v", err)
		}
		got := map[string]string{}
		for _, fl := range in.Filters {
			got[fl.Field] = fl.Value
		}
		if in.ServiceCode != "AmazonEC2" || got["productFamily"] != "Storage" || got["volumeApiName"] != "gp3" || got["regionCode"] == "" || scope == nil || scope[2] != "pricing" {
			f.t.Errorf("EBS GetProducts: service %q filters %v scope %v", in.ServiceCode, got, scope)
		}
		n := f.next("GetProducts EBS", got["regionCode"])
		w.Header().Set("Content-Type", productsCT)
		if f.marketFault != nil && f.marketFault(w, "GetProducts EBS", got["regionCode"], n) {
			return true
		}
		if got["regionCode"] == "us-east-1" {
			w.Write(readFixture(f.t, "pricing_getproducts_ebs_gp3.json"))
		} else {
			w.Write(readFixture(f.t, "getproducts_last_page_empty.json"))
		}
		return true
	case bytes.Contains(body, []byte("Action=GetSpotPlacementScores")):
		form, _ := url.ParseQuery(string(body))
		if form.Get("InstanceType.1") == "" || form.Get("InstanceType.2") != "" || form.Get("TargetCapacity") != "1" ||
			form.Get("RegionName.1") == "" || scope == nil || scope[2] != "ec2" {
			f.t.Errorf("GetSpotPlacementScores params %v scope %v; want one type, capacity 1, the regions, signed for ec2", form, scope)
		}
		n := f.next("GetSpotPlacementScores", scope[1])
		f.mu.Lock()
		f.scored = append(f.scored, form.Get("InstanceType.1"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		if f.marketFault != nil && f.marketFault(w, "GetSpotPlacementScores", form.Get("InstanceType.1"), n) {
			return true
		}
		if form.Get("NextToken") != "" {
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><GetSpotPlacementScoresResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>x</requestId><spotPlacementScoreSet/></GetSpotPlacementScoresResponse>`)
			return true
		}
		w.Write(readFixture(f.t, "ec2_get_spot_placement_scores.xml"))
		return true
	}
	return false
}

// TestStreamReadsMarket: asked for spot and storage data, a fetch reads the Spot Advisor
// file (one unsigned GET), scores each GPU type's spot placement through the real EC2
// client (one call per type, all regions in it, following the next token) and prices EBS
// gp3 per region through the real Pricing client; a region without a gp3 price is
// reported failed while the others land; not asked, it makes none of these calls.
func TestStreamReadsMarket(t *testing.T) {
	fake := newFakeAWS(t)
	p := newTestProvider(t, fake.serve(t))
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Market != nil || fake.count("SpotAdvisor", "") != 0 || fake.count("GetProducts EBS", "us-east-1") != 0 {
		t.Fatalf("not asked, the fetch read market data: %+v", snap.Market)
	}
	snap, err = p.Fetch(providers.WithMarketRead(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	m := snap.Market
	if m == nil {
		t.Fatal("asked, the snapshot has no market data")
	}
	// The fixture's EXACT values: g5.xlarge us-east-1 is range 4 (">20%", max 100),
	// g6e.xlarge range 1 ("5-10%", 5 to 11); placement scores 9 (us-east-1's best zone)
	// and 3 (us-west-2).
	byKey := map[string]pricing.SpotBand{}
	for _, b := range m.Spot {
		byKey[b.Region+"/"+b.InstanceType] = b
		if err := b.Validate(); err != nil {
			t.Error(err)
		}
	}
	for _, c := range []struct {
		key    string
		lo, hi float64
		label  string
		score  int
	}{
		{"us-east-1/g5.xlarge", 22, 100, ">20%", 9},
		{"us-east-1/g6e.xlarge", 5, 11, "5-10%", 9},
		{"us-east-1/g4dn.xlarge", 16, 22, "15-20%", 9},
	} {
		b, ok := byKey[c.key]
		if !ok {
			t.Errorf("%s: no band in %v", c.key, m.Spot)
			continue
		}
		if b.LowPct != c.lo || b.HighPct != c.hi || b.Label != c.label || b.PeriodHours != pricing.HoursPerMonth || !b.ObservedAt.Equal(testNow) {
			t.Errorf("%s: band %+v; want %v-%v %q per month", c.key, b, c.lo, c.hi, c.label)
		}
		if !fake.scoredType(b.InstanceType) {
			c.score = 0 // the fake's instance-type fixtures lack it: never scored
		}
		if b.Score != c.score {
			t.Errorf("%s: placement score %d; want %d", c.key, b.Score, c.score)
		}
	}
	// The fake's DescribeInstanceTypes fixtures list the GPU types; each is scored once,
	// plus one call for the next token of each.
	if n := len(fake.scored); n == 0 || n%2 != 0 {
		t.Errorf("%d GetSpotPlacementScores calls (%v); want two per type scored (first page, next token)", n, fake.scored)
	}
	if len(m.Storage) != 1 || m.Storage[0].Region != "us-east-1" || m.Storage[0].USDPerGiBMonth != 0.08 || m.Storage[0].Product != "gp3" {
		t.Errorf("storage %+v; want us-east-1 gp3 at $0.08/GiB-month (the IOPS and throughput products skipped)", m.Storage)
	}
	if e := m.Failed["us-west-2 ebs"]; e == nil || len(m.Failed) != 1 {
		t.Errorf("failed %v; want us-west-2's missing gp3 price only", m.Failed)
	}
	if !slices.Equal(m.Regions, []string{"us-east-1"}) {
		t.Errorf("regions read in full %v; want [us-east-1]", m.Regions)
	}
	wantReq := 1 + len(fake.scored) + 2
	if m.Requests != wantReq {
		t.Errorf("requests %d; want %d (advisor, placement pages, one EBS call per region)", m.Requests, wantReq)
	}
}

// TestMarketFailuresKeepPrices: a failing advisor file and a refused placement score are
// reported per part; the offers and the EBS prices still land, and no region counts as
// read in full without its bands.
func TestMarketFailuresKeepPrices(t *testing.T) {
	fake := newFakeAWS(t)
	fake.marketFault = func(w http.ResponseWriter, api, _ string, n int) bool {
		switch api {
		case "SpotAdvisor":
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<Error><Code>AccessDenied</Code></Error>`)
			return true
		case "GetSpotPlacementScores":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>not authorized to perform: ec2:GetSpotPlacementScores</Message></Error></Errors><RequestID>x</RequestID></Response>`)
			return true
		}
		return false
	}
	p := newTestProvider(t, fake.serve(t))
	snap, err := p.Fetch(providers.WithMarketRead(context.Background()))
	if err != nil {
		t.Fatalf("a failed market read failed the fetch: %v", err)
	}
	if len(snap.Offers) == 0 {
		t.Fatal("no offers")
	}
	m := snap.Market
	if m.Failed["spot-advisor"] == nil || m.Failed["placement-scores"] == nil || !strings.Contains(m.Failed["placement-scores"].Error(), "UnauthorizedOperation") {
		t.Errorf("failed %v; want spot-advisor and placement-scores", m.Failed)
	}
	if len(m.Spot) != 0 || len(m.Regions) != 0 || len(m.Storage) != 1 {
		t.Errorf("spot %v regions %v storage %v; want no bands, no region in full, us-east-1's EBS price", m.Spot, m.Regions, m.Storage)
	}
	if got := len(fake.scored); got != 1 {
		t.Errorf("%d placement calls after a refusal; want 1 (stop at the first failure)", got)
	}
}

func (f *fakeAWS) scoredType(t string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.scored, t)
}

// BenchmarkFetchMarket is a refresh of the test fake's two regions without and with the
// spot and storage read (the Advisor file, a placement score per GPU type, EBS per
// region): what the daily read adds to a refresh, in time and requests (reported).
func BenchmarkFetchMarket(b *testing.B) {
	fake := newFakeAWS(b)
	url := providertestServeBench(b, fake)
	b.Setenv("AWS_ACCESS_KEY_ID", "AKIDPICKERTEST")
	b.Setenv("AWS_SECRET_ACCESS_KEY", "picker-test-secret")
	b.Setenv("AWS_CONFIG_FILE", filepath.Join(b.TempDir(), "none"))
	b.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(b.TempDir(), "none"))
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	p, err := New(Config{Common: providers.Common{Regions: []string{"us-east-1", "us-west-2"}, Endpoint: url}}, WithRetry(2, time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		market bool
	}{{"prices", false}, {"prices+market", true}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			if c.market {
				ctx = providers.WithMarketRead(ctx)
			}
			req := 0
			for b.Loop() {
				snap, err := p.Fetch(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if snap.Market != nil {
					req = snap.Market.Requests
				}
			}
			b.ReportMetric(float64(req), "market-requests/op")
		})
	}
}

func providertestServeBench(b *testing.B, h http.Handler) string {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL
}

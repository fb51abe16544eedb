package gcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

const regionsPath = "/compute/v1/projects/test-project/regions/"

// TestFetchReadsQuotas: asked for quotas, the fetch reads each configured region's GPU quotas
// with one Compute regions.get through the real client: every NVIDIA_*_GPUS and
// PREEMPTIBLE_NVIDIA_*_GPUS metric with its limit and usage, none of the committed,
// virtual-workstation or non-GPU ones; a region whose call is refused is failed while
// the other lands. Not asked, it calls regions.get not at all.
func TestFetchReadsQuotas(t *testing.T) {
	fake := newFakeGoogle(t)
	fixture := readFixture(t, "regions_get_us-central1.json")
	fake.pages[regionsPath+"us-central1"] = [][]byte{fixture}
	fake.pages[regionsPath+"europe-west4"] = [][]byte{fixture}
	fake.fault = func(w http.ResponseWriter, path string, n int) bool {
		if path == regionsPath+"europe-west4" {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"error":{"code":403,"message":"Required 'compute.regions.get' permission for 'projects/test-project/regions/europe-west4'","status":"PERMISSION_DENIED"}}`)
			return true
		}
		return false
	}
	p := newTestProvider(t, fake.serve(t), []string{"us-central1", "europe-west4"})
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Quotas != nil || fake.count(regionsPath+"us-central1") != 0 {
		t.Fatalf("not asked, the fetch read quotas")
	}
	snap, err = p.Fetch(providers.WithQuotaRead(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	rep := snap.Quotas
	if rep == nil {
		t.Fatal("no quota report")
	}
	if got := quotaRegions(nil, snap.Offers); !slices.Equal(got, []string{"us-central1"}) {
		t.Errorf("without configured regions the read would cover %v; want the offers' region, us-central1", got)
	}
	if rep.Account != "test-project" || !slices.Equal(rep.Regions, []string{"us-central1"}) || rep.Requests != 2 {
		t.Errorf("account %q, regions %v, %d requests; want test-project, [us-central1], 2", rep.Account, rep.Regions, rep.Requests)
	}
	if e := rep.Failed["europe-west4"]; e == nil || !strings.Contains(e.Error(), "compute.regions.get") {
		t.Errorf("failed %v; want europe-west4's permission error", rep.Failed)
	}
	if n := fake.count(regionsPath + "us-central1"); n != 1 {
		t.Errorf("%d regions.get calls for us-central1; want 1", n)
	}
	// Every GPU metric of the fixture, as the fixture says it.
	var region struct {
		Quotas []struct {
			Metric       string
			Limit, Usage float64
		}
	}
	if err := json.Unmarshal(fixture, &region); err != nil {
		t.Fatal(err)
	}
	want := map[string]pricing.Quota{}
	for _, q := range region.Quotas {
		if !strings.Contains(q.Metric, "NVIDIA_") || strings.HasPrefix(q.Metric, "COMMITTED_") || strings.Contains(q.Metric, "_VWS_") {
			continue
		}
		pur := pricing.OnDemand
		if strings.HasPrefix(q.Metric, "PREEMPTIBLE_") {
			pur = pricing.Spot
		}
		family := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(q.Metric, "PREEMPTIBLE_"), "NVIDIA_"), "_GPUS")
		want[q.Metric] = pricing.Quota{Provider: Name, Account: "test-project", Region: "us-central1", Code: q.Metric, Name: q.Metric,
			Family: family, Purchase: pur, Unit: pricing.QuotaGPU, Limit: q.Limit, Usage: q.Usage, UsageKnown: true, ObservedAt: testNow}
	}
	if len(want) != 8 {
		t.Fatalf("the fixture has %d GPU metrics; the test expects 8", len(want))
	}
	if len(rep.Quotas) != len(want) {
		t.Errorf("%d quotas; want %d: %+v", len(rep.Quotas), len(want), rep.Quotas)
	}
	for _, q := range rep.Quotas {
		if w, ok := want[q.Code]; !ok || q != w {
			t.Errorf("quota %+v\nwant %+v", q, w)
		}
	}
	if q := want["NVIDIA_T4_GPUS"]; q.Remaining() != 6 {
		t.Errorf("T4 remaining %v; want 8 - 2", q.Remaining())
	}
}

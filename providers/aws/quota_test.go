package aws

import (
	"bytes"
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

const (
	sqTargetPrefix = "ServiceQuotasV20190624."
	sqCT           = "application/x-amz-json-1.1"
)

// quotaItems are the EXACT ListServiceQuotas items of the fixture, by quota code.
func quotaItems(t testing.TB) map[string]map[string]any {
	t.Helper()
	var fx struct{ Quotas []map[string]any }
	if err := json.Unmarshal(readFixture(t, "servicequotas_list_ec2_gpu.json"), &fx); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, q := range fx.Quotas {
		out[q["QuotaCode"].(string)] = q
	}
	return out
}

// serveQuotas answers Service Quotas' GetServiceQuota (AWS JSON 1.1, signed for
// servicequotas in the call's region) with the fixture's item of the asked code, its
// ARN in the call's region and its Value from f.quotaValue where that says so.
func (f *fakeAWS) serveQuotas(w http.ResponseWriter, r *http.Request, target, region, service string) {
	if target != sqTargetPrefix+"GetServiceQuota" || service != "servicequotas" {
		f.t.Errorf("X-Amz-Target %q signed for %q; want %sGetServiceQuota signed for servicequotas", target, service, sqTargetPrefix)
	}
	if ct := r.Header.Get("Content-Type"); ct != sqCT {
		f.t.Errorf("GetServiceQuota Content-Type %q; want %s", ct, sqCT)
	}
	var in struct{ ServiceCode, QuotaCode, ContextId string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		if err == io.ErrUnexpectedEOF {
			return
		}
		f.t.Errorf("GetServiceQuota body: %v", err)
	}
	if in.ServiceCode != "ec2" {
		f.t.Errorf("GetServiceQuota ServiceCode %q; want ec2", in.ServiceCode)
	}
	n := f.next("GetServiceQuota "+in.QuotaCode, region)
	f.next("GetServiceQuota", region)
	w.Header().Set("Content-Type", sqCT)
	if f.quotaFault != nil && f.quotaFault(w, region, in.QuotaCode, n) {
		return
	}
	item, ok := quotaItems(f.t)[in.QuotaCode]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"NoSuchResourceException","Message":"The request failed because the specified service quota does not exist."}`)
		return
	}
	item["QuotaArn"] = strings.Replace(item["QuotaArn"].(string), ":me-south-1:", ":"+region+":", 1)
	if f.quotaValue != nil {
		if v, ok := f.quotaValue(region, in.QuotaCode); ok {
			item["Value"] = v
		}
	}
	b, _ := json.Marshal(map[string]any{"Quota": item})
	w.Write(b)
}

// TestQuotaAnswerIsTheFixture: the fake's GetServiceQuota answer for L-7212CCBC in
// me-south-1 is the reference GetServiceQuota sample, so the fake speaks the wire
// format the samples document.
func TestQuotaAnswerIsTheFixture(t *testing.T) {
	fake := newFakeAWS(t)
	url := fake.serve(t)
	body := strings.NewReader(`{"ServiceCode":"ec2","QuotaCode":"L-7212CCBC"}`)
	req, _ := http.NewRequest(http.MethodPost, url+"/", body)
	req.Header.Set("X-Amz-Target", sqTargetPrefix+"GetServiceQuota")
	req.Header.Set("Content-Type", sqCT)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20250115/me-south-1/servicequotas/aws4_request, SignedHeaders=host, Signature=x")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body)
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(readFixture(t, "servicequotas_get_service_quota_p_spot.json"), &b)
	ga, _ := json.Marshal(a)
	gb, _ := json.Marshal(b)
	if !bytes.Equal(ga, gb) {
		t.Errorf("fake answer\n%s\nwant the fixture\n%s", ga, gb)
	}
}

// TestStreamReadsQuotas: asked for quotas, a refresh reads the four GPU vCPU quotas of
// each region through the real Service Quotas client (signed, JSON 1.1), one call each,
// keys them by the account in their ARN, retries a throttled call, and reports a region
// whose calls are refused as failed while the others land; not asked, it makes no
// Service Quotas call at all.
func TestStreamReadsQuotas(t *testing.T) {
	fake := newFakeAWS(t)
	fake.quotaValue = func(region, code string) (float64, bool) {
		if region == "us-east-1" && code == "L-417A185B" {
			return 0, true // no on-demand P vCPUs in us-east-1
		}
		return 0, false
	}
	throttle := readFixture(t, "servicequotas_error_too_many_requests.json")
	fake.quotaFault = func(w http.ResponseWriter, region, code string, n int) bool {
		switch {
		case region == "us-east-1" && code == "L-DB2E81BA" && n == 0:
			w.WriteHeader(http.StatusBadRequest)
			w.Write(throttle)
			return true
		case region == "us-west-2":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type":"AccessDeniedException","Message":"User is not authorized to perform: servicequotas:GetServiceQuota"}`)
			return true
		}
		return false
	}
	p := newTestProvider(t, fake.serve(t))

	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Quotas != nil || fake.count("GetServiceQuota", "us-east-1") != 0 {
		t.Fatalf("not asked, the fetch read quotas: %+v, %d calls", snap.Quotas, fake.count("GetServiceQuota", "us-east-1"))
	}

	snap, err = p.Fetch(providers.WithQuotaRead(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	rep := snap.Quotas
	if rep == nil {
		t.Fatal("asked for quotas, the snapshot has none")
	}
	if rep.Account != "000011112222" || !slices.Equal(rep.Regions, []string{"us-east-1"}) {
		t.Errorf("account %q, regions %v; want 000011112222 (the ARN's), [us-east-1]", rep.Account, rep.Regions)
	}
	if e := rep.Failed["us-west-2"]; e == nil || !strings.Contains(e.Error(), "AccessDeniedException") || len(rep.Failed) != 1 {
		t.Errorf("failed %v; want us-west-2's AccessDeniedException", rep.Failed)
	}
	// us-east-1: 4 quotas + 1 retried throttle; us-west-2: its first refusal ends the
	// region (the SDK does not retry an AccessDenied).
	if got := fake.count("GetServiceQuota", "us-east-1"); got != 5 {
		t.Errorf("%d GetServiceQuota calls in us-east-1; want 5 (4 quotas, 1 retry)", got)
	}
	if rep.Requests != 6 {
		t.Errorf("report counts %d requests; want 6 (the adapter's calls, retries not counted: 4 GetServiceQuota, 1 DescribeInstances)", rep.Requests)
	}
	items := quotaItems(t)
	byCode := map[string]pricing.Quota{}
	for _, q := range rep.Quotas {
		byCode[q.Code] = q
		if q.Provider != Name || q.Region != "us-east-1" || q.Account != "000011112222" || q.Unit != pricing.QuotaVCPU || !q.UsageKnown || q.Usage != 0 || !q.ObservedAt.Equal(testNow) {
			t.Errorf("quota %+v", q)
		}
		if q.Name != items[q.Code]["QuotaName"] {
			t.Errorf("%s name %q; want the answer's %q", q.Code, q.Name, items[q.Code]["QuotaName"])
		}
	}
	for _, w := range []struct {
		code, family string
		purchase     pricing.Purchase
		limit        float64
	}{
		{"L-DB2E81BA", "G", pricing.OnDemand, items["L-DB2E81BA"]["Value"].(float64)},
		{"L-417A185B", "P", pricing.OnDemand, 0},
		{"L-3819A6DF", "G", pricing.Spot, items["L-3819A6DF"]["Value"].(float64)},
		{"L-7212CCBC", "P", pricing.Spot, items["L-7212CCBC"]["Value"].(float64)},
	} {
		q, ok := byCode[w.code]
		if !ok || q.Family != w.family || q.Purchase != w.purchase || q.Limit != w.limit {
			t.Errorf("%s: %+v; want family %s, %s, limit %v", w.code, q, w.family, w.purchase, w.limit)
		}
	}
	if len(rep.Quotas) != 4 {
		t.Errorf("%d quotas; want 4", len(rep.Quotas))
	}
}

func TestARNAccount(t *testing.T) {
	for in, want := range map[string]string{
		"arn:aws:servicequotas:me-south-1:000011112222:ec2/L-7212CCBC": "000011112222",
		"arn:aws-cn:servicequotas:cn-north-1:123456789012:ec2/L-1":     "123456789012",
		"": "", "not an arn": "", "arn:aws:servicequotas": "",
	} {
		if got := arnAccount(in); got != want {
			t.Errorf("arnAccount(%q) = %q; want %q", in, got, want)
		}
	}
}

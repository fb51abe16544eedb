package aws

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// emptyInstances is DescribeInstances' answer for an account running nothing that
// matches: an empty reservationSet and no nextToken (the EC2 API reference's response
// elements; ASSEMBLED, as the fixtures are).
const emptyInstances = `<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>fake</requestId><reservationSet/></DescribeInstancesResponse>`

// describeInstances answers one DescribeInstances page of region after checking the
// request asks for what the usage read needs: pending and running instances of the GPU
// families, the largest page.
func (f *fakeAWS) describeInstances(form url.Values, region string) ([]byte, bool) {
	want := map[string]string{
		"MaxResults":       "1000",
		"Filter.1.Name":    "instance-state-name",
		"Filter.1.Value.1": "pending", "Filter.1.Value.2": "running",
		"Filter.2.Name":    "instance-type",
		"Filter.2.Value.1": "g*", "Filter.2.Value.2": "p*", "Filter.2.Value.3": "vt*",
	}
	for k, v := range want {
		if form.Get(k) != v {
			f.t.Errorf("DescribeInstances %s = %q; want %q (%v)", k, form.Get(k), v, form)
		}
	}
	if form.Get("Filter.1.Value.3") != "" || form.Get("Filter.2.Value.4") != "" || form.Get("Filter.3.Name") != "" {
		f.t.Errorf("DescribeInstances filters: %v", form)
	}
	pages, ok := f.instances[region]
	if !ok {
		return []byte(emptyInstances), form.Get("NextToken") == ""
	}
	return pageFor(pages, form.Get("NextToken"), xmlTokRe)
}

func instancePages(t testing.TB) [][]byte {
	return [][]byte{readFixture(t, "ec2_describe_instances_page1.xml"), readFixture(t, "ec2_describe_instances_page2.xml")}
}

// TestQuotaUsage: the quota read counts the vCPUs the account's pending and running GPU
// instances hold (the fixture's two pages in us-east-1: a running on-demand
// p4d.24xlarge, a pending spot g5.xlarge, a running on-demand g4dn.8xlarge started with
// 8 of its 32 vCPUs, a capacity-block p5en.48xlarge) as each quota's usage, so
// Remaining is what a new launch may take; a region running none uses 0; a region whose
// listing fails, or whose pagination loops, keeps its limits with usage unknown and the
// snapshot says usage was not read.
func TestQuotaUsage(t *testing.T) {
	items := quotaItems(t)
	limit := func(code string) float64 { return items[code]["Value"].(float64) }
	// The vCPUs each quota's family and purchase hold in us-east-1: an instance counts its
	// type's default vCPUs (DescribeInstanceTypes' defaultVCpus in the fixtures: 96, 4,
	// 32), as a launch is charged; a capacity block draws on neither quota.
	used := map[string]float64{"L-417A185B": 96, "L-DB2E81BA": 32, "L-3819A6DF": 4, "L-7212CCBC": 0}
	loop := readFixture(t, "ec2_describe_instances_page1.xml")

	for _, tc := range []struct {
		name      string
		fault     func(w http.ResponseWriter, api, region string, n int) bool
		westKnown bool
		warn      string
		westCalls int
	}{
		{name: "read", westKnown: true, westCalls: 1},
		{name: "refused", warn: "UnauthorizedOperation", westCalls: 1, fault: func(w http.ResponseWriter, api, region string, n int) bool {
			if api != "DescribeInstances" || region != "us-west-2" {
				return false
			}
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized to perform this operation.</Message></Error></Errors><RequestID>x</RequestID></Response>`)
			return true
		}},
		{name: "looping pages", warn: "pagination loops", westCalls: 2, fault: func(w http.ResponseWriter, api, region string, n int) bool {
			if api != "DescribeInstances" || region != "us-west-2" {
				return false
			}
			w.Write(loop) // the same nextToken on every page
			return true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeAWS(t)
			fake.instances = map[string][][]byte{"us-east-1": instancePages(t)}
			fake.fault = tc.fault
			p := newTestProvider(t, fake.serve(t))
			snap, err := p.Fetch(providers.WithQuotaRead(context.Background()))
			if err != nil {
				t.Fatal(err)
			}
			rep := snap.Quotas
			if rep == nil || len(rep.Failed) != 0 || len(rep.Regions) != 2 || len(rep.Quotas) != 8 {
				t.Fatalf("quota report %+v; want 8 quotas of 2 regions, none failed (a usage read keeps the limits)", rep)
			}
			if got := fake.count("DescribeInstances", "us-east-1"); got != 2 {
				t.Errorf("%d DescribeInstances calls in us-east-1; want 2 (its two pages)", got)
			}
			if got := fake.count("DescribeInstances", "us-west-2"); got != tc.westCalls {
				t.Errorf("%d DescribeInstances calls in us-west-2; want %d", got, tc.westCalls)
			}
			if want := 8 + 2 + tc.westCalls; rep.Requests != want {
				t.Errorf("report counts %d requests; want %d (8 GetServiceQuota, the DescribeInstances pages)", rep.Requests, want)
			}
			for _, q := range rep.Quotas {
				wantUsage, wantKnown := used[q.Code], true
				if q.Region == "us-west-2" {
					wantUsage, wantKnown = 0, tc.westKnown
				}
				if q.Limit != limit(q.Code) || q.UsageKnown != wantKnown || q.Usage != wantUsage {
					t.Errorf("%s %s: limit %v usage %v known %v; want limit %v usage %v known %v", q.Region, q.Code, q.Limit, q.Usage, q.UsageKnown, limit(q.Code), wantUsage, wantKnown)
				}
				if wantKnown && q.Remaining() != max(limit(q.Code)-wantUsage, 0) {
					t.Errorf("%s %s: remaining %v; want the limit less the usage", q.Region, q.Code, q.Remaining())
				}
			}
			var warned []string
			for _, w := range snap.Warnings {
				if strings.Contains(w, "usage not read") {
					warned = append(warned, w)
				}
			}
			switch {
			case tc.warn == "" && len(warned) > 0:
				t.Errorf("usage read in full, yet warned: %v", warned)
			case tc.warn != "" && (len(warned) != 1 || !strings.Contains(warned[0], "us-west-2") || !strings.Contains(warned[0], tc.warn)):
				t.Errorf("warnings %v; want one saying us-west-2's usage was not read (%s)", warned, tc.warn)
			}
		})
	}
}

// TestQuotaUsageCountsFamilies: regionUsage through the real EC2 client charges each
// instance to its quota family and purchase; a type the offers do not list counts its
// cpuOptions.
func TestQuotaUsageCountsFamilies(t *testing.T) {
	fake := newFakeAWS(t)
	fake.instances = map[string][][]byte{"us-east-1": instancePages(t)}
	p := newTestProvider(t, fake.serve(t), "us-east-1")
	cfg, err := p.loadConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// No vCPU table: every instance counts its cpuOptions (48x2, 2x2, 8x1).
	c := newEC2Client(cfg, "us-east-1")
	got, n, err := regionUsage(context.Background(), c, nil)
	if err != nil || n != 2 {
		t.Fatalf("regionUsage: %v after %d calls", err, n)
	}
	want := map[usageKey]float64{{"P", pricing.OnDemand}: 96, {"G", pricing.Spot}: 4, {"G", pricing.OnDemand}: 8}
	if len(got) != len(want) {
		t.Errorf("usage %v; want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v: %v vCPUs; want %v", k, got[k], v)
		}
	}
}

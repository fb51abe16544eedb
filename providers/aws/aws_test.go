package aws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/providertest"
)

var testNow = time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)

func newTestProvider(t *testing.T, url string, regions ...string) *Provider {
	t.Helper()
	staticCredentials(t)
	if len(regions) == 0 {
		regions = []string{"us-east-1", "us-west-2"}
	}
	p, err := New(Config{Common: providers.Common{Regions: regions, Endpoint: url}},
		WithClock(func() time.Time { return testNow }),
		WithRetry(4, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type want struct {
	region, zone, typ string
	purchase          pricing.Purchase
	price             float64
	model             string
	count, mem        float64
	vcpus, ram        float64
}

func offerIndex(offers []pricing.Offer) map[string]pricing.Offer {
	m := map[string]pricing.Offer{}
	for _, o := range offers {
		m[o.Region+"/"+o.Zone+"/"+o.InstanceType+"/"+string(o.Purchase)] = o
	}
	return m
}

func TestFetchEndToEnd(t *testing.T) {
	fake := newFakeAWS(t)
	p := newTestProvider(t, fake.serve(t))
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	providertest.CheckSnapshot(t, snap)

	wants := []want{
		{"us-east-1", "", "p4d.24xlarge", pricing.OnDemand, 32.7726, "A100", 8, 40, 96, 1152},
		{"us-east-1", "", "g4dn.8xlarge", pricing.OnDemand, 2.176, "T4", 1, 16, 32, 128},
		{"us-east-1", "", "g6.xlarge", pricing.OnDemand, 0.8048, "L4", 1, 24, 4, 16}, // 22888 MiB reported
		{"us-east-1", "", "p3.8xlarge", pricing.OnDemand, 12.24, "V100", 4, 16, 32, 244},
		{"us-east-1", "", "p5en.48xlarge", pricing.OnDemand, 63.296, "H200", 8, 141, 192, 2048}, // name "NVIDIA"
		{"us-east-1", "", "g6f.large", pricing.OnDemand, 0.202, "L4", 0.125, 24, 2, 8},          // 1/8 slice of a 24 GiB L4
		{"us-east-1", "", "p4de.24xlarge", pricing.OnDemand, 40.9657, "A100-80GB", 8, 80, 96, 1152},
		{"us-east-1", "", "g4ad.xlarge", pricing.OnDemand, 0.3785, "RadeonProV520", 1, 8, 4, 16},
		{"us-west-2", "", "g6.xlarge", pricing.OnDemand, 0.8048, "L4", 1, 24, 4, 16},
		{"us-west-2", "", "p4d.24xlarge", pricing.OnDemand, 32.7726, "A100", 8, 40, 96, 1152},
		// Spot: the cheapest Linux/UNIX zone per type and region; Windows/SUSE and
		// eu-west-1 records ignored; each record placed by its zone although both
		// regions' calls saw every record.
		{"us-east-1", "us-east-1d", "p4d.24xlarge", pricing.Spot, 9.512, "A100", 8, 40, 96, 1152},
		{"us-east-1", "us-east-1c", "g4dn.8xlarge", pricing.Spot, 0.7267, "T4", 1, 16, 32, 128},
		{"us-east-1", "us-east-1b", "g6.xlarge", pricing.Spot, 0.2988, "L4", 1, 24, 4, 16},
		{"us-west-2", "us-west-2c", "g6.xlarge", pricing.Spot, 0.2871, "L4", 1, 24, 4, 16},
		{"us-west-2", "us-west-2a", "p4d.24xlarge", pricing.Spot, 11.02, "A100", 8, 40, 96, 1152},
	}
	got := offerIndex(snap.Offers)
	if len(snap.Offers) != len(wants) {
		var keys []string
		for k := range got {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t.Errorf("got %d offers, want %d: %v", len(snap.Offers), len(wants), keys)
	}
	for _, w := range wants {
		o, ok := got[w.region+"/"+w.zone+"/"+w.typ+"/"+string(w.purchase)]
		if !ok {
			t.Errorf("missing offer %s %s %s %s", w.region, w.zone, w.typ, w.purchase)
			continue
		}
		if o.PriceUSDHr != w.price || o.GPUModel != w.model || o.GPUCount != w.count || o.GPUMemGiB != w.mem || o.VCPUs != w.vcpus || o.RAMGiB != w.ram {
			t.Errorf("%s %s: got price %v %s x%v %v GiB %v vCPU %v GiB RAM; want %v %s x%v %v GiB %v vCPU %v GiB RAM",
				w.typ, w.purchase, o.PriceUSDHr, o.GPUModel, o.GPUCount, o.GPUMemGiB, o.VCPUs, o.RAMGiB,
				w.price, w.model, w.count, w.mem, w.vcpus, w.ram)
		}
		if o.Provider != "aws" || o.Currency != "USD" || o.Source != pricing.SourceAPI || !o.ObservedAt.Equal(testNow) {
			t.Errorf("%s: provider %q currency %q source %q observed %v", w.typ, o.Provider, o.Currency, o.Source, o.ObservedAt)
		}
	}
	if !slices.Equal(snap.Regions, []string{"us-east-1", "us-west-2"}) || len(snap.Failed) != 0 {
		t.Errorf("regions %v failed %v; want both regions, none failed", snap.Regions, snap.Failed)
	}
	// Every page of every API was followed.
	for _, c := range []struct {
		api, region string
		n           int
	}{
		{"GetProducts", "us-east-1", 3}, {"GetProducts", "us-west-2", 1},
		{"DescribeInstanceTypeOfferings", "us-east-1", 2}, {"DescribeInstanceTypeOfferings", "us-west-2", 2},
		{"DescribeSpotPriceHistory", "us-east-1", 2}, {"DescribeSpotPriceHistory", "us-west-2", 2},
	} {
		if got := fake.count(c.api, c.region); got != c.n {
			t.Errorf("%s %s: %d calls; want %d (one per page)", c.api, c.region, got, c.n)
		}
	}
	// The fixtures' 10 types, 4 to a page, are described by one region or, when both
	// ask before either has finished, by each: 3 pages a region that asks.
	if got := fake.count("DescribeInstanceTypes", "us-east-1") + fake.count("DescribeInstanceTypes", "us-west-2"); got != 3 && got != 6 {
		t.Errorf("DescribeInstanceTypes: %d calls in all; want 3 (one region described every type) or 6 (both did, concurrently)", got)
	}
	if !slices.ContainsFunc(snap.Warnings, func(w string) bool { return strings.Contains(w, "p5en.48xlarge") && strings.Contains(w, "H200") }) {
		t.Errorf("warnings %q; want one naming the p5en override", snap.Warnings)
	}
}

// The reference sample page (p3.8xlarge Linux + its Windows BYOL twin at the same
// price, with a NextToken) followed by the empty last page.
func TestReferenceSamplePage(t *testing.T) {
	fake := newFakeAWS(t)
	p := newTestProvider(t, fake.serve(t), "us-east-2")
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var od []pricing.Offer
	for _, o := range snap.Offers {
		if o.Purchase == pricing.OnDemand {
			od = append(od, o)
		}
	}
	if len(od) != 1 || od[0].InstanceType != "p3.8xlarge" || od[0].PriceUSDHr != 12.24 || od[0].GPUModel != "V100" {
		t.Errorf("on-demand offers %+v; want only the Linux p3.8xlarge at 12.24", od)
	}
	if n := fake.count("GetProducts", "us-east-2"); n != 2 {
		t.Errorf("GetProducts calls %d; want 2 (the sample's NextToken followed)", n)
	}
}

func TestThrottlingThenSuccess(t *testing.T) {
	fake := newFakeAWS(t)
	fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
		if n > 0 {
			return false
		}
		switch api {
		case "GetProducts":
			w.WriteHeader(http.StatusBadRequest)
			w.Write(readFixture(t, "pricing_error_throttling.json"))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(readFixture(t, "ec2_error_request_limit_exceeded.xml"))
		}
		return true
	}
	p := newTestProvider(t, fake.serve(t))
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if len(snap.Offers) != 15 || len(snap.Failed) != 0 {
		t.Errorf("%d offers, failed %v; want 15, none", len(snap.Offers), snap.Failed)
	}
	if n := fake.count("GetProducts", "us-east-1"); n != 4 {
		t.Errorf("GetProducts us-east-1: %d calls; want 4 (one throttled, three pages)", n)
	}
	if n := fake.count("DescribeSpotPriceHistory", "us-west-2"); n != 3 {
		t.Errorf("DescribeSpotPriceHistory us-west-2: %d calls; want 3", n)
	}
}

func TestPermanentFailure(t *testing.T) {
	fake := newFakeAWS(t)
	fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
		if api != "GetProducts" {
			return false
		}
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"__type":"InternalErrorException","message":"boom"}`)
		return true
	}
	p := newTestProvider(t, fake.serve(t))
	snap, err := p.Fetch(context.Background())
	if err == nil {
		t.Fatalf("Fetch succeeded with %d offers; want an error", len(snap.Offers))
	}
	if !strings.Contains(err.Error(), "get products") || !strings.Contains(err.Error(), "InternalErrorException") {
		t.Errorf("error %q; want it to name the call and the cause", err)
	}
	if pricing.ErrorCode(err) != pricing.Unavailable {
		t.Errorf("code %q; want unavailable", pricing.ErrorCode(err))
	}
	if n := fake.count("GetProducts", "us-east-1"); n != 4 {
		t.Errorf("GetProducts attempts %d; want 4 (WithRetry max attempts)", n)
	}
}

func TestRegionIsolation(t *testing.T) {
	fake := newFakeAWS(t)
	fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
		if region != "us-west-2" || api != "DescribeSpotPriceHistory" {
			return false
		}
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `<Response><Errors><Error><Code>InternalError</Code><Message>boom</Message></Error></Errors><RequestID>r</RequestID></Response>`)
		return true
	}
	p := newTestProvider(t, fake.serve(t))
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !slices.Equal(snap.Regions, []string{"us-east-1"}) {
		t.Errorf("regions %v; want [us-east-1]", snap.Regions)
	}
	if e := snap.Failed["us-west-2"]; e == nil || !strings.Contains(e.Error(), "spot price history") {
		t.Errorf("failed %v; want us-west-2 failed naming the spot call", snap.Failed)
	}
	for _, o := range snap.Offers {
		if o.Region != "us-east-1" {
			t.Errorf("offer %s from the failed region", o.Key())
		}
	}
	if len(snap.Offers) != 11 {
		t.Errorf("%d offers; want us-east-1's 11", len(snap.Offers))
	}
}

// A body cut short (the connection closes before Content-Length bytes arrive) is
// retried, on both protocols.
func TestTruncatedBodyRetried(t *testing.T) {
	fake := newFakeAWS(t)
	fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
		if n > 0 || region != "us-east-1" {
			return false
		}
		var full []byte
		switch api {
		case "GetProducts":
			full = fake.products["us-east-1"][0]
		case "DescribeSpotPriceHistory":
			full = fake.spotPages[0]
		default:
			return false
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(full)))
		w.Write(full[:len(full)/2])
		// Returning with fewer bytes than promised makes the server drop the connection.
		return true
	}
	p := newTestProvider(t, fake.serve(t))
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if len(snap.Offers) != 15 {
		t.Errorf("%d offers; want 15", len(snap.Offers))
	}
	if n := fake.count("DescribeSpotPriceHistory", "us-east-1"); n != 3 {
		t.Errorf("DescribeSpotPriceHistory us-east-1: %d calls; want 3 (truncated page retried)", n)
	}
	if n := fake.count("GetProducts", "us-east-1"); n != 4 {
		t.Errorf("GetProducts us-east-1: %d calls; want 4 (truncated page retried)", n)
	}
}

// Cancelling mid-fetch (the server hangs) ends Fetch promptly with context.Canceled.
func TestCancelMidFetch(t *testing.T) {
	fake := newFakeAWS(t)
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 8)
	fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
		if api != "GetProducts" {
			return false
		}
		started <- struct{}{}
		<-release
		return false
	}
	p := newTestProvider(t, fake.serve(t))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	start := time.Now()
	_, err := p.Fetch(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch: %v; want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Fetch took %v after cancel", d)
	}
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providers.Provider {
		return newTestProvider(t, newFakeAWS(t).serve(t))
	})
}

func TestConfig(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Regions(), DefaultRegions) || p.cfg.PricingRegion != "us-east-1" {
		t.Errorf("defaults: regions %v pricing region %q", p.Regions(), p.cfg.PricingRegion)
	}
	for _, r := range []string{"ap-south-1", "eu-central-1"} {
		if _, err := New(Config{PricingRegion: r}); err != nil {
			t.Errorf("pricing_region %s: %v", r, err)
		}
	}
	if _, err := New(Config{PricingRegion: "us-west-2"}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("pricing_region us-west-2: %v; want an invalid-input error", err)
	}
	if _, err := New(Config{Common: providers.Common{Endpoint: "localhost:4566"}}); pricing.ErrorCode(err) != pricing.Invalid {
		t.Errorf("endpoint without scheme: %v; want invalid", err)
	}
	if _, err := Descriptor.New(Config{PricingRegion: "ap-south-1"}); err != nil {
		t.Errorf("Descriptor.New: %v", err)
	}
	if _, err := Descriptor.New(&Config{PricingRegion: "eu-central-1"}); err != nil {
		t.Errorf("Descriptor.New(*Config): %v", err)
	}
	if _, err := Descriptor.New(struct{}{}); err == nil {
		t.Error("Descriptor.New(struct{}{}): want an error for the wrong type")
	}
	if Descriptor.Name != "aws" {
		t.Errorf("descriptor name %q", Descriptor.Name)
	}
}

func TestRegionOfZone(t *testing.T) {
	regions := []string{"us-east-1", "us-west-2", "us-east-10"}
	for zone, want := range map[string]string{
		"us-east-1a": "us-east-1", "us-east-1f": "us-east-1", "us-west-2-lax-1a": "us-west-2",
		"us-east-10b": "us-east-10", "eu-west-1a": "", "us-west-2": "",
	} {
		if got := regionOfZone(zone, regions); got != want {
			t.Errorf("regionOfZone(%q) = %q; want %q", zone, got, want)
		}
	}
}

func TestReject(t *testing.T) {
	base := func() *priceItem {
		it := &priceItem{}
		it.Product.ProductFamily = "Compute Instance"
		it.Product.Attributes = itemAttributes{InstanceType: "g6.xlarge", RegionCode: "us-east-1", OperatingSystem: "Linux",
			Tenancy: "Shared", PreInstalledSw: "NA", CapacityStatus: "Used", LicenseModel: "No License required",
			MarketOption: "OnDemand", Operation: "RunInstances", UsageType: "BoxUsage:g6.xlarge"}
		return it
	}
	if r := base().reject("us-east-1"); r != "" {
		t.Fatalf("plain Linux row rejected: %s", r)
	}
	for name, mod := range map[string]func(*itemAttributes){
		"windows":      func(a *itemAttributes) { a.OperatingSystem = "Windows" },
		"rhel":         func(a *itemAttributes) { a.OperatingSystem = "RHEL" },
		"suse":         func(a *itemAttributes) { a.OperatingSystem = "SUSE" },
		"byol":         func(a *itemAttributes) { a.LicenseModel = "Bring your own license" },
		"sql":          func(a *itemAttributes) { a.PreInstalledSw = "SQL Web" },
		"dedicated":    func(a *itemAttributes) { a.Tenancy = "Dedicated" },
		"host":         func(a *itemAttributes) { a.Tenancy = "Host" },
		"reservation":  func(a *itemAttributes) { a.CapacityStatus = "AllocatedCapacityReservation" },
		"ubuntu pro":   func(a *itemAttributes) { a.Operation = "RunInstances:0g00" },
		"other region": func(a *itemAttributes) { a.RegionCode = "us-west-2" },
		"non-gpu":      func(a *itemAttributes) { a.InstanceType = "m5.xlarge" },
		"inferentia":   func(a *itemAttributes) { a.InstanceType = "inf2.xlarge" },
		"dedicated ut": func(a *itemAttributes) { a.UsageType = "DedicatedUsage:g6.xlarge" },
	} {
		it := base()
		mod(&it.Product.Attributes)
		if it.reject("us-east-1") == "" {
			t.Errorf("%s decoy accepted", name)
		}
	}
}

// ec2Recorder is an ec2API whose every region offers the types in offered and
// describes any type it is asked for (an L4 each); it records the names asked.
type ec2Recorder struct {
	offered []string
	asked   [][]string
}

func (e *ec2Recorder) DescribeInstanceTypeOfferings(_ context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	out := &ec2.DescribeInstanceTypeOfferingsOutput{}
	for _, t := range e.offered {
		out.InstanceTypeOfferings = append(out.InstanceTypeOfferings, ec2types.InstanceTypeOffering{InstanceType: ec2types.InstanceType(t)})
	}
	return out, nil
}

func (e *ec2Recorder) DescribeInstanceTypes(_ context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	if len(in.InstanceTypes) > 0 || len(in.Filters) != 1 || len(in.Filters[0].Values) > describeBatch {
		return nil, fmt.Errorf("want one instance-type filter of at most %d names, got %+v", describeBatch, in)
	}
	names := in.Filters[0].Values
	e.asked = append(e.asked, names)
	out := &ec2.DescribeInstanceTypesOutput{}
	for _, n := range names {
		if n == "g9.nogpu" { // a g* type without GPUs: described, no facts
			out.InstanceTypes = append(out.InstanceTypes, ec2types.InstanceTypeInfo{InstanceType: ec2types.InstanceType(n)})
			continue
		}
		out.InstanceTypes = append(out.InstanceTypes, ec2types.InstanceTypeInfo{
			InstanceType: ec2types.InstanceType(n),
			GpuInfo: &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{
				Name: awssdk.String("L4"), Count: awssdk.Int32(1), MemoryInfo: &ec2types.GpuDeviceMemoryInfo{SizeInMiB: awssdk.Int32(22888)}}}},
		})
	}
	return out, nil
}

func (e *ec2Recorder) DescribeSpotPriceHistory(context.Context, *ec2.DescribeSpotPriceHistoryInput, ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	return &ec2.DescribeSpotPriceHistoryOutput{}, nil
}

// TestDescribeOncePerFetch: a type is described by the first region that offers it;
// later regions ask only for types no region has described (those without GPUs
// included), in batches of describeBatch, and get the facts of exactly their offered
// types.
func TestDescribeOncePerFetch(t *testing.T) {
	ctx := context.Background()
	cache := newFactsCache()
	var many []string
	for i := range 250 {
		many = append(many, fmt.Sprintf("g6.%dxlarge", i))
	}
	first := &ec2Recorder{offered: append(slices.Clone(many), "g9.nogpu", "m7.large")}
	facts, _, err := describeGPUInstanceTypes(ctx, first, cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 250 || len(first.asked) != 3 || len(first.asked[0]) != describeBatch {
		t.Fatalf("first region: %d facts in %d calls (first of %d names); want 250 in 3 of at most %d", len(facts), len(first.asked), len(first.asked[0]), describeBatch)
	}
	for _, names := range first.asked {
		if slices.Contains(names, "m7.large") {
			t.Errorf("asked for m7.large, not a GPU family")
		}
	}
	second := &ec2Recorder{offered: append(many[:10:10], "g9.nogpu", "p5.48xlarge")}
	facts, _, err = describeGPUInstanceTypes(ctx, second, cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.asked) != 1 || !slices.Equal(second.asked[0], []string{"p5.48xlarge"}) {
		t.Errorf("second region asked %v; want only the type no region described", second.asked)
	}
	if len(facts) != 11 || facts["p5.48xlarge"].model != "L4" || facts["g6.3xlarge"].model != "L4" {
		t.Errorf("second region's facts %v; want its 11 offered GPU types", facts)
	}
	if _, ok := facts["g6.100xlarge"]; ok {
		t.Error("second region got facts of a type it does not offer")
	}
}

// TestWithoutOfferingsPermission: credentials whose policy predates
// DescribeInstanceTypeOfferings (UnauthorizedOperation) still price every region, from
// a g*/p* DescribeInstanceTypes listing as before.
func TestWithoutOfferingsPermission(t *testing.T) {
	want, err := newTestProvider(t, newFakeAWS(t).serve(t)).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fake := newFakeAWS(t)
	fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
		if api != "DescribeInstanceTypeOfferings" {
			return false
		}
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized to perform this operation.</Message></Error></Errors><RequestID>x</RequestID></Response>`)
		return true
	}
	got, err := newTestProvider(t, fake.serve(t)).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Offers) != len(want.Offers) || len(got.Failed) != 0 || fake.count("DescribeInstanceTypes", "us-east-1") != 3 {
		t.Errorf("%d offers, failed %v, %d DescribeInstanceTypes pages in us-east-1; want %d offers, none failed, 3 pages",
			len(got.Offers), got.Failed, fake.count("DescribeInstanceTypes", "us-east-1"), len(want.Offers))
	}
	idx := offerIndex(want.Offers)
	for _, o := range got.Offers {
		if w, ok := idx[o.Region+"/"+o.Zone+"/"+o.InstanceType+"/"+string(o.Purchase)]; !ok || w != o {
			t.Errorf("%s: %+v; want %+v", o.Key(), o, w)
		}
	}
}

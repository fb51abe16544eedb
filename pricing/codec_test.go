package pricing

import (
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// TestOfferCodecRoundTrip: offers come back equal, repeated strings shared across
// payloads of one decoder, and a payload cut short, padded or claiming more offers than
// it has bytes is an error, never a wrong offer.
func TestOfferCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	offers := []Offer{
		{Provider: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "p4d.24xlarge", GPUModel: "A100-40GB", GPUCount: 8,
			GPUMemGiB: 39.4, GPUMemReportedGiB: 40, VCPUs: 96, RAMGiB: 1152, Purchase: Spot, PriceUSDHr: 9.83, Currency: "USD", ObservedAt: at, Source: SourceAPI, Available: SoldOut},
		{Provider: "vast", Region: "US", InstanceType: "8x_H100-SXM_m31001", GPUModel: "H100", GPUCount: 8, GPUMemGiB: 79.6, VCPUs: 224, RAMGiB: 2015.36,
			Purchase: Spot, PriceUSDHr: 9.6, Currency: "USD", ObservedAt: at, Source: SourceAPI, Available: AvailableNow,
			Host: Host{Reliability: 0.9981, MaxCUDA: 12.8, Driver: "570.124.06", NetUpMbps: 8012.4, NetDownMbps: 9120.7, DiskGB: 7000, Verification: HostVerified}},
		{Provider: "aws", Region: "us-east-1", InstanceType: "g5.xlarge", GPUModel: "A10G", GPUCount: 1, GPUMemGiB: 22, VCPUs: 4, RAMGiB: 16,
			Purchase: OnDemand, PriceUSDHr: 1.006, Currency: "USD", Source: SourceAPI, Available: AvailableNow},
		{}, // every field zero, the zero time included
	}
	var d OfferDecoder
	p := AppendOffers(nil, offers)
	got, err := d.Decode(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, offers) {
		t.Fatalf("decoded %+v\nwant %+v", got, offers)
	}
	again, err := d.Decode(AppendOffers(nil, offers[:1]))
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.StringData(again[0].Provider) != unsafe.StringData(got[0].Provider) {
		t.Error("a provider name repeated across payloads was not shared")
	}
	// The availability byte of offers[2] (no host facts): before its five host numbers
	// (8 bytes each) and two empty host strings (a length byte each).
	badAvail := AppendOffers(nil, offers[2:3])
	badAvail[len(badAvail)-(5*8+2)-1] = 7
	for name, bad := range map[string][]byte{
		"empty":            nil,
		"cut short":        p[:len(p)-1],
		"padded":           append(append([]byte(nil), p...), 0),
		"count lies":       append([]byte{0xff, 0x01}, p[1:]...),
		"bad varint":       {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"no offers":        {1},
		"bad availability": badAvail,
	} {
		if out, err := d.Decode(bad); err == nil {
			t.Errorf("%s: decoded %d offers from malformed data", name, len(out))
		}
	}
}

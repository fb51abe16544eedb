package gcp

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// TestFetchReadsDiskPrices: asked for market data, the fetch takes Persistent Disk prices
// from the SKUs it lists anyway (through the real Cloud Billing client, no extra call):
// the EXACT SSD-backed PD SKU of us-east4 at $0.187/GiB-month; Standard (HDD) PD is left
// out; a configured region without a PD SKU is reported failed. Not asked, no market.
func TestFetchReadsDiskPrices(t *testing.T) {
	fake := newFakeGoogle(t)
	p3 := fake.pages[skusPath][2]
	if !bytes.Contains(p3, []byte(`"nextPageToken": ""`)) {
		t.Fatal("skus_page3.json no longer ends the list")
	}
	fake.pages[skusPath] = append(fake.pages[skusPath][:2],
		bytes.Replace(p3, []byte(`"nextPageToken": ""`), []byte(`"nextPageToken": "pd-page"`), 1),
		readFixture(t, "skus_pd_capacity.json"))
	p := newTestProvider(t, fake.serve(t), []string{"us-central1", "us-east4"})
	snap, err := p.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Market != nil {
		t.Fatalf("not asked, market %+v", snap.Market)
	}
	calls := fake.count(skusPath)
	snap, err = p.Fetch(providers.WithMarketRead(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	if got := fake.count(skusPath) - calls; got != 4 {
		t.Errorf("%d ListSkus pages with market data; want the same 4 as without", got)
	}
	m := snap.Market
	if m == nil {
		t.Fatal("asked, no market data")
	}
	want := pricing.StoragePrice{Provider: Name, Region: "us-east4", Product: "pd-ssd", USDPerGiBMonth: 0.187,
		Source: "GCP Cloud Billing Catalog (Compute Engine SKUs, SSD backed PD Capacity, GiBy.mo)", ObservedAt: testNow}
	if len(m.Storage) != 1 || m.Storage[0] != want {
		t.Errorf("storage %+v; want only %+v (no Standard PD)", m.Storage, want)
	}
	if !slices.Equal(m.Regions, []string{"us-east4"}) || m.Failed["us-central1"] == nil || m.Requests != 0 {
		t.Errorf("regions %v failed %v requests %d; want us-east4 read, us-central1 failed, no requests of its own", m.Regions, m.Failed, m.Requests)
	}
}

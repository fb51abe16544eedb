package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/pickergpu/picker/pricing"
)

// lazyPages answers GetProducts with pages made on demand, so the only copies of the
// stream alive are the ones the adapter keeps. After each page it samples the heap.
type lazyPages struct {
	tmpl     []byte
	pages    int
	perPage  int
	peakHeap uint64
	base     uint64
}

func (f *lazyPages) GetProducts(_ context.Context, in *awspricing.GetProductsInput, _ ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error) {
	i := 0
	if in.NextToken != nil {
		fmt.Sscanf(*in.NextToken, "%d", &i)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > f.peakHeap {
		f.peakHeap = ms.HeapAlloc
	}
	list := make([]string, f.perPage)
	for k := range list {
		list[k] = string(f.tmpl)
	}
	out := &awspricing.GetProductsOutput{PriceList: list, FormatVersion: awssdk.String("aws_v1")}
	if i+1 < f.pages {
		out.NextToken = awssdk.String(fmt.Sprint(i + 1))
	}
	return out, nil
}

// TestGetProductsMemoryBoundedByOnePage streams 50k PriceList items (about 150 MB of
// JSON in all) and checks that the heap never grows by more than a few pages: the
// adapter decodes each page and drops it before asking for the next (issue 5).
func TestGetProductsMemoryBoundedByOnePage(t *testing.T) {
	var fx struct{ Pages [][]json.RawMessage }
	if err := json.Unmarshal(readFixture(t, "products_us-east-1.json"), &fx); err != nil {
		t.Fatal(err)
	}
	var tmpl string
	if err := json.Unmarshal(fx.Pages[1][1], &tmpl); err != nil {
		tmpl = string(fx.Pages[1][1]) // the fixture stores the item as an object
	}
	f := &lazyPages{tmpl: []byte(tmpl), pages: 500, perPage: 100}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.base = ms.HeapAlloc
	items := 0
	if err := getProducts(context.Background(), f, "us-east-1", 100, func(*priceItem) { items++ }, nil); err != nil {
		t.Fatal(err)
	}
	if items != 50_000 {
		t.Fatalf("streamed %d items; want 50000", items)
	}
	page := uint64(len(tmpl) * f.perPage)
	total := page * uint64(f.pages)
	growth := f.peakHeap - min(f.base, f.peakHeap)
	t.Logf("page %d KiB, whole stream %d MiB, peak heap growth %d KiB", page>>10, total>>20, growth>>10)
	if growth > 4*page {
		t.Errorf("heap grew by %d KiB while streaming; want at most 4 pages (%d KiB), far below the stream's %d MiB", growth>>10, 4*page>>10, total>>20)
	}

	// The measurement can see accumulation: a client that keeps every page (what reading
	// the whole catalog before decoding would do) shows most of the stream on the heap.
	g := &lazyPages{tmpl: []byte(tmpl), pages: 500, perPage: 100}
	keep := &keepingPages{inner: g}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	g.base = ms.HeapAlloc
	if err := getProducts(context.Background(), keep, "us-east-1", 100, func(*priceItem) {}, nil); err != nil {
		t.Fatal(err)
	}
	if kept := g.peakHeap - min(g.base, g.peakHeap); kept < total/2 {
		t.Errorf("a client keeping every page grew the heap by only %d MiB of %d MiB: the check cannot see accumulation", kept>>20, total>>20)
	}
	runtime.KeepAlive(keep.kept)
}

// keepingPages retains every page it returns.
type keepingPages struct {
	inner *lazyPages
	kept  [][]string
}

func (k *keepingPages) GetProducts(ctx context.Context, in *awspricing.GetProductsInput, opts ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error) {
	out, err := k.inner.GetProducts(ctx, in, opts...)
	if err == nil {
		k.kept = append(k.kept, out.PriceList)
	}
	return out, err
}

// TestStreamEmitsRegionsAsTheyComplete: us-west-2's on-demand part is emitted while
// us-east-1 is still fetching (its GetProducts waits for that part); each part is one
// region's, no key repeats, spot parts come after every on-demand part, and the parts
// together are Fetch's offers.
func TestStreamEmitsRegionsAsTheyComplete(t *testing.T) {
	fake := newFakeAWS(t)
	westEmitted := make(chan struct{})
	fake.fault = func(w http.ResponseWriter, api, region string, n int) bool {
		if api == "GetProducts" && region == "us-east-1" && n == 0 {
			select {
			case <-westEmitted:
			case <-time.After(10 * time.Second):
				t.Error("us-west-2's part was not emitted while us-east-1 was fetching")
			}
		}
		return false
	}
	p := newTestProvider(t, fake.serve(t))
	var parts [][]pricing.Offer
	seen := map[pricing.Key]bool{}
	snap, err := p.Stream(context.Background(), func(offers []pricing.Offer) error {
		parts = append(parts, offers)
		for _, o := range offers {
			if o.Region != offers[0].Region {
				t.Errorf("part of %s holds an offer of %s", offers[0].Region, o.Region)
			}
			if seen[o.Key()] {
				t.Errorf("%s emitted twice", o.Key())
			}
			seen[o.Key()] = true
		}
		if len(parts) == 1 {
			if offers[0].Region != "us-west-2" {
				t.Errorf("first part is %s's; want us-west-2's (us-east-1 is held back)", offers[0].Region)
			}
			close(westEmitted)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Offers != nil || !slices.Equal(snap.Regions, []string{"us-east-1", "us-west-2"}) {
		t.Errorf("snapshot offers %d, regions %v; want none and both regions", len(snap.Offers), snap.Regions)
	}
	spotSeen := false
	for _, part := range parts {
		spot := part[0].Purchase == pricing.Spot
		for _, o := range part {
			if (o.Purchase == pricing.Spot) != spot {
				t.Errorf("part mixes purchases: %s", o.Key())
			}
		}
		if spotSeen && !spot {
			t.Errorf("an on-demand part after a spot part")
		}
		spotSeen = spotSeen || spot
	}
	fetched, err := newTestProvider(t, newFakeAWS(t).serve(t)).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(fetched.Offers) != len(seen) {
		t.Errorf("stream emitted %d offers, Fetch returned %d", len(seen), len(fetched.Offers))
	}
	for _, o := range fetched.Offers {
		if !seen[o.Key()] {
			t.Errorf("Fetch's %s was not streamed", o.Key())
		}
	}
}

// TestStreamStopsOnEmitError: an emit error ends the stream with that error.
func TestStreamStopsOnEmitError(t *testing.T) {
	p := newTestProvider(t, newFakeAWS(t).serve(t))
	full := errors.New("disk full")
	calls := 0
	_, err := p.Stream(context.Background(), func([]pricing.Offer) error { calls++; return full })
	if !errors.Is(err, full) || calls != 1 {
		t.Errorf("Stream: %v after %d emits; want the emit's error after 1", err, calls)
	}
}

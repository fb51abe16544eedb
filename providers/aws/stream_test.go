package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
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
	if err := getProducts(context.Background(), f, "us-east-1", 100, func(*priceItem) { items++ }); err != nil {
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
	if err := getProducts(context.Background(), keep, "us-east-1", 100, func(*priceItem) {}); err != nil {
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

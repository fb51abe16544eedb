package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// streamItems is how many PriceList items the benchmarks ingest.
const streamItems = 50_000

// syntheticPages builds a GetProducts stream of n items in pages of 100: one in five is a
// decoy (Windows), the rest are Linux rows of distinct GPU instance types.
func syntheticPages(tb testing.TB, n int) (pages [][]string, facts map[string]gpuFacts) {
	tb.Helper()
	var fx struct{ Pages [][]json.RawMessage }
	if err := json.Unmarshal(readFixture(tb, "products_us-east-1.json"), &fx); err != nil {
		tb.Fatal(err)
	}
	var tmpl map[string]any
	_ = json.Unmarshal(fx.Pages[1][1], &tmpl) // g6.xlarge, Linux
	facts = map[string]gpuFacts{}
	var page []string
	for i := range n {
		typ := fmt.Sprintf("g%d.%dxlarge", 6+i%4, i)
		attrs := tmpl["product"].(map[string]any)["attributes"].(map[string]any)
		attrs["instanceType"] = typ
		attrs["operatingSystem"] = "Linux"
		if i%5 == 4 {
			attrs["operatingSystem"] = "Windows"
		}
		b, _ := json.Marshal(tmpl)
		page = append(page, string(b))
		facts[typ] = gpuFacts{model: "L4", count: 1, memGiB: 24, vcpus: 4, ramGiB: 16}
		if len(page) == 100 {
			pages = append(pages, page)
			page = nil
		}
	}
	if len(page) > 0 {
		pages = append(pages, page)
	}
	return pages, facts
}

// pagedFake implements getProductsAPI from memory (karpenter's narrow-interface fake).
type pagedFake struct{ pages [][]string }

func (f *pagedFake) GetProducts(_ context.Context, in *awspricing.GetProductsInput, _ ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error) {
	i := 0
	if in.NextToken != nil {
		fmt.Sscanf(*in.NextToken, "%d", &i)
	}
	out := &awspricing.GetProductsOutput{PriceList: f.pages[i], FormatVersion: awssdk.String("aws_v1")}
	if i+1 < len(f.pages) {
		out.NextToken = awssdk.String(fmt.Sprint(i + 1))
	}
	return out, nil
}

// BenchmarkIngest measures decoding and mapping a 50k-item GetProducts stream (the
// double JSON decode, decoy checks, join and offer building), without the network.
func BenchmarkIngest(b *testing.B) {
	pages, facts := syntheticPages(b, streamItems)
	c := &pagedFake{pages: pages}
	b.ReportAllocs()
	b.ResetTimer()
	var offers int
	for b.Loop() {
		ing := newIngester("us-east-1", facts, time.Now())
		if err := getProducts(context.Background(), c, "us-east-1", 100, ing.add, nil); err != nil {
			b.Fatal(err)
		}
		offers = len(ing.offers)
	}
	if offers != streamItems*4/5 {
		b.Fatalf("%d offers; want %d", offers, streamItems*4/5)
	}
	b.ReportMetric(float64(offers)*float64(b.N)/b.Elapsed().Seconds(), "offers/s")
	b.ReportMetric(float64(streamItems)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkIngestHTTP is the same stream through the real SDK client, SigV4 and the
// awsJson1_1 wire format against a local server.
func BenchmarkIngestHTTP(b *testing.B) {
	pages, facts := syntheticPages(b, streamItems)
	bodies := make([][]byte, len(pages))
	for i, p := range pages {
		body := map[string]any{"FormatVersion": "aws_v1", "PriceList": p}
		if i+1 < len(pages) {
			body["NextToken"] = fmt.Sprint(i + 1)
		}
		bodies[i], _ = json.Marshal(body)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ NextToken string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		i := 0
		fmt.Sscanf(in.NextToken, "%d", &i)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Write(bodies[i])
	}))
	defer srv.Close()
	b.Setenv("AWS_ACCESS_KEY_ID", "AKIDBENCH")
	b.Setenv("AWS_SECRET_ACCESS_KEY", "bench")
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	p, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	p.cfg.Endpoint = srv.URL
	cfg, err := p.loadConfig(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	c := awspricing.NewFromConfig(cfg)
	b.ReportAllocs()
	b.ResetTimer()
	var offers int
	for b.Loop() {
		ing := newIngester("us-east-1", facts, time.Now())
		if err := getProducts(context.Background(), c, "us-east-1", 100, ing.add, nil); err != nil {
			b.Fatal(err)
		}
		offers = len(ing.offers)
	}
	b.ReportMetric(float64(offers)*float64(b.N)/b.Elapsed().Seconds(), "offers/s")
}

// BenchmarkRefresh90k is issue 17's AWS refresh without the network: a 112,500-item
// GetProducts stream ingested (90k Linux offers), then written by store.WriteSnapshot
// into a fresh database ("first"), again unchanged an hour later ("unchanged": no row
// rewritten) and with 1 % of prices moved ("1pct"). Instance types repeat across regions
// as AWS's do (300 types), so the store's shapes are realistic.
func BenchmarkRefresh90k(b *testing.B) {
	pages, facts := syntheticPages(b, 112_500)
	ingest := func() []pricing.Offer {
		ing := newIngester("us-east-1", facts, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
		if err := getProducts(context.Background(), &pagedFake{pages: pages}, "us-east-1", 100, ing.add, nil); err != nil {
			b.Fatal(err)
		}
		offers := ing.offers
		for i := range offers {
			offers[i].InstanceType = fmt.Sprintf("g6.%dxlarge", i%300)
			offers[i].Region = fmt.Sprintf("region-%03d", i/300)
		}
		return offers
	}
	ctx := context.Background()
	open := func(b *testing.B) *store.Store {
		st, err := store.Open(ctx, filepath.Join(b.TempDir(), "picker.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}
	write := func(st *store.Store, offers []pricing.Offer, h int) store.WriteResult {
		at := time.Date(2026, 11, 1, h, 0, 0, 0, time.UTC)
		for i := range offers {
			offers[i].ObservedAt = at
		}
		r, err := st.WriteSnapshot(ctx, Name, store.WriteInput{Offers: offers, Finished: at})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			st := open(b)
			b.StartTimer()
			if r := write(st, ingest(), 0); r.New != 90_000 {
				b.Fatalf("%+v", r)
			}
		}
	})
	for _, tt := range []struct {
		name  string
		every int // one price in every moves
	}{{"unchanged", 0}, {"1pct", 100}, {"all", 1}} {
		b.Run(tt.name, func(b *testing.B) {
			st := open(b)
			write(st, ingest(), 0)
			h := 0
			for b.Loop() {
				h++
				offers := ingest()
				if tt.every > 0 {
					for i := h % tt.every; i < len(offers); i += tt.every {
						offers[i].PriceUSDHr *= 1 + float64(h)/100
					}
				}
				if r := write(st, offers, h); r.Seen != 90_000 {
					b.Fatalf("%+v", r)
				}
			}
		})
	}
}

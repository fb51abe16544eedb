package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// offersOnly hides a store's shape read, so RunRecommend takes the full scan.
type offersOnly struct{ offerStore }

// TestRecommendFastPathMatchesFullScan: on randomized offer sets in a real database,
// RunRecommend through the shape read answers byte for byte as through the full scan,
// across jobs, filters, rankings and top counts, with the daemon's caches (the store's
// and the recommendation memo) on and off; the last four rounds are marketplaces, every
// offer its own instance type (its own shape), read by fit-fact set (store/facts.go),
// and in the last two most hosts state random host facts (reliability for
// --min-reliability, CUDA ceilings too old for the stack or for Blackwell, drivers,
// speeds, disks, verification): the set read answers for them too (fullReads), the
// old-cuda exclusions counted as over every offer.
func TestRecommendFastPathMatchesFullScan(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(17, 17))
	gpus := pricing.GPUs()
	answered := 0 // answers with offers: the comparison is not all "nothing fits"
	var setAnswers, oldCUDA int
	for round := range 8 {
		st, err := store.Open(ctx, filepath.Join(t.TempDir(), "picker.db"))
		if err != nil {
			t.Fatal(err)
		}
		st.UseImage(round < 2 || round == 6) // the offers image (a small catalogue), then the tables
		var memo *recommendMemo
		if round%2 == 1 { // the daemon's caches
			st.CacheOffers(offerCacheSize)
			memo = newRecommendMemo(recommendMemoSize)
		}
		for _, prov := range []string{"aws", "gcp", "lambda"} {
			type proto = pricing.Offer
			var protos []proto
			for i := range 5 + r.IntN(40) {
				g := gpus[r.IntN(len(gpus))]
				c := []float64{0.25, 1, 1, 2, 4, 8}[r.IntN(6)]
				protos = append(protos, proto{Provider: prov, InstanceType: fmt.Sprintf("%s-t%d", prov, i), GPUModel: g.Model, GPUCount: c,
					GPUMemGiB: g.MemGB, VCPUs: float64(4 + r.IntN(90)), RAMGiB: float64(16 + r.IntN(1500)), Currency: "USD", Source: pricing.SourceAPI})
			}
			seen := map[pricing.Key]bool{}
			var offers []pricing.Offer
			for k := range 300 + r.IntN(900) {
				o := protos[r.IntN(len(protos))]
				if round >= 4 { // a marketplace host: its own instance type, a few sizes of RAM
					o.InstanceType = fmt.Sprintf("%s-m%d", o.InstanceType, k)
					o.RAMGiB = float64(int(64) << (k % 3))
					if k%7 == 0 {
						o.InstanceType += "-pcie"
					}
				}
				if round >= 6 && r.IntN(5) > 0 { // a host stating facts
					o.Host = pricing.Host{Reliability: []float64{0, 0.85, 0.95, 0.98, 0.999}[r.IntN(5)],
						MaxCUDA: []float64{0, 11.8, 12.2, 12.4, 12.8, 13}[r.IntN(6)], Driver: []string{"", "535.183.01", "570.124.06"}[r.IntN(3)],
						NetUpMbps: float64(r.IntN(3) * 300), NetDownMbps: float64(r.IntN(3) * 900), DiskGB: float64(r.IntN(4) * 250),
						Verification: []string{"", pricing.HostVerified, pricing.HostUnverified}[r.IntN(3)]}
				}
				o.Region = fmt.Sprintf("region-%d", r.IntN(8))
				o.Zone = o.Region + string(rune('a'+r.IntN(3)))
				o.Purchase = []pricing.Purchase{pricing.OnDemand, pricing.Spot}[r.IntN(2)]
				o.PriceUSDHr = float64(1+r.IntN(80)) / 8 * max(o.GPUCount, 0.5)
				if !seen[o.Key()] {
					seen[o.Key()] = true
					offers = append(offers, o)
				}
			}
			if _, err := st.WriteSnapshot(ctx, prov, store.WriteInput{Offers: offers, Finished: fixedNow.Add(-time.Duration(r.IntN(300)) * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		models := []string{"llama-2-7b", "llama-2-13b", "llama-2-70b", "mistral-7b", "phi-2"}
		tasks := []string{"inference", "full-ft", "lora", "qlora"}
		for range 25 {
			vals := url.Values{"model": {models[r.IntN(len(models))]}, "task": {tasks[r.IntN(len(tasks))]}, "batch": {fmt.Sprint(1 + r.IntN(8))}}
			opt := func(k string, v ...string) {
				if r.IntN(3) == 0 {
					vals.Set(k, v[r.IntN(len(v))])
				}
			}
			opt("top", "1", "3", "10", "25")
			opt("purchase", "any", "spot", "on-demand")
			opt("region", "region-1", "region-2,region-5", "REGION-3")
			opt("provider", "aws", "gcp,lambda")
			opt("max-price", "4", "12.5")
			opt("max-gpus", "1", "4")
			opt("gpus", "1", "2", "4")
			opt("seq-len", "512", "4096")
			opt("quant", "fp8") // GPUs without fp8 excluded and counted
			opt("by-region", "true")
			opt("vendor", "nvidia", "amd")
			opt("min-reliability", "0.9", "0.97")
			if r.IntN(3) == 0 {
				vals.Set("tokens", "5e8")
				opt("rank", "job")
			}
			answer := func(s offerStore, memo *recommendMemo) string {
				o, err := newFakeRecommend(nil, vals)
				if err != nil {
					t.Fatalf("%v: %v", vals, err)
				}
				o.Store = func(context.Context) (offerStore, error) { return s, nil }
				o.Memo = memo
				out, err := RunRecommend(ctx, o)
				if err != nil {
					return "error: " + err.Error()
				}
				b, _ := json.Marshal(out)
				return string(b)
			}
			counted := &fullReads{Store: st}
			fast, full := answer(counted, memo), answer(offersOnly{st}, nil)
			if round >= 6 && counted.n == 0 {
				setAnswers++
			}
			if round >= 6 && strings.Contains(fast, `"code":"old-cuda"`) {
				oldCUDA++
			}
			if again := answer(st, memo); again != fast {
				t.Fatalf("round %d %s: asked again (memo %v):\n%s\nfirst:\n%s", round, vals.Encode(), memo != nil, again, fast)
			}
			if strings.Contains(fast, `"offers":[{`) {
				answered++
			}
			if fast != full {
				t.Fatalf("round %d %s:\nfast path: %s\nfull scan: %s", round, vals.Encode(), fast, full)
			}
		}
		// A write moves the data version: cached answers give way to the new prices.
		vals := url.Values{"model": {"llama-2-7b"}, "task": {"qlora"}}
		ask := func(s offerStore, memo *recommendMemo) string {
			o, err := newFakeRecommend(nil, vals)
			if err != nil {
				t.Fatal(err)
			}
			o.Store, o.Memo = func(context.Context) (offerStore, error) { return s, nil }, memo
			out, err := RunRecommend(ctx, o)
			if err != nil {
				return "error: " + err.Error()
			}
			b, _ := json.Marshal(out)
			return string(b)
		}
		before := ask(st, memo)
		cheap := pricing.Offer{Provider: "lambda", Region: "region-0", InstanceType: "cheap-h100", GPUModel: "H100", GPUCount: 1, GPUMemGiB: 80,
			VCPUs: 26, RAMGiB: 200, Purchase: pricing.OnDemand, PriceUSDHr: 0.01, Currency: "USD", Source: pricing.SourceAPI}
		if _, err := st.WriteSnapshot(ctx, "lambda", store.WriteInput{Offers: []pricing.Offer{cheap}, Finished: fixedNow}); err != nil {
			t.Fatal(err)
		}
		after, full := ask(st, memo), ask(offersOnly{st}, nil)
		if after != full || after == before || !strings.Contains(after, "cheap-h100") {
			t.Errorf("round %d: after a write the answer is\n%s\nwant (full scan)\n%s", round, after, full)
		}
		st.Close()
	}
	if answered < 60 {
		t.Errorf("only %d of 200 answers had offers", answered)
	}
	t.Logf("with host facts: %d of 50 answers from the set read alone, %d with old-cuda exclusions", setAnswers, oldCUDA)
	if setAnswers < 25 || oldCUDA < 10 {
		t.Errorf("with host facts, %d of 50 answers came from the set read alone, %d excluded old-CUDA hosts", setAnswers, oldCUDA)
	}
}

// fullReads is a store that counts its full reads (Offers): recommend reads every
// matching offer only where the set read cannot answer (nothing fits: the nearest miss).
type fullReads struct {
	*store.Store
	n int
}

func (f *fullReads) Offers(ctx context.Context, q store.Query) ([]pricing.Offer, error) {
	f.n++
	return f.Store.Offers(ctx, q)
}

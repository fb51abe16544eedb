package recommend

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

func nodeOffer(provider, typ, gpu string, gpus, mem, price float64) pricing.Offer {
	return pricing.Offer{Provider: provider, Region: "r1", InstanceType: typ, GPUModel: gpu, GPUCount: gpus, GPUMemGiB: mem, PriceUSDHr: price, RAMGiB: 2000}
}

func TestInterconnectTable(t *testing.T) {
	rows, err := parseInterconnects(interconnectCSV)
	if err != nil {
		t.Fatal(err)
	}
	for _, ic := range rows {
		if !strings.HasPrefix(ic.Source, "https://") {
			t.Errorf("%s %s: source %q is not a URL", ic.Provider, ic.InstanceType, ic.Source)
		}
	}
	for _, c := range []struct {
		provider, typ string
		want          bool
	}{
		{"aws", "p5.48xlarge", true}, {"aws", "p4d.24xlarge", true}, {"gcp", "a3-megagpu-8g", true},
		{"azure", "Standard_ND96isr_H100_v5", true}, {"aws", "g5.48xlarge", false}, {"lambda", "gpu_8x_h100_sxm5", false},
	} {
		if _, ok := LookupInterconnect(c.provider, c.typ); ok != c.want {
			t.Errorf("%s %s: interconnect %v, want %v", c.provider, c.typ, ok, c.want)
		}
	}
	if _, err := parseInterconnects([]byte("provider,instance_type,interconnect,gbps_per_node,source\naws,x,EFA,0,\n")); err == nil {
		t.Error("a row without bandwidth and source parsed")
	}
}

// TestMultiNodeEstimate: N nodes of G GPUs divide the weights by G×N for inference
// (tensor parallel in a node, pipeline parallel across), and ZeRO-3 divides the training
// states by G×N.
func TestMultiNodeEstimate(t *testing.T) {
	m, _, _ := model.CatalogModel("llama-3.1-405b")
	res, err := fit.Estimate(m, fit.Job{GPUs: 8, Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := fit.Round3(float64(m.Params()) * 2 / 16 / fit.GiB); res.Breakdown.Weights != want {
		t.Errorf("405B on 2x8 GPUs: weights %v GiB per GPU, want %v (params x 2 B / 16)", res.Breakdown.Weights, want)
	}
	if res.Job.Nodes != 2 || res.Job.Shard != "tp" || !strings.Contains(res.Layout, "pipeline parallel 2") {
		t.Errorf("job %+v layout %q", res.Job, res.Layout)
	}
	m70, _, _ := model.CatalogModel("llama-3.1-70b")
	tr, err := fit.Estimate(m70, fit.Job{Task: fit.TaskFullFT, GPUs: 8, Nodes: 4, GradCkpt: true})
	if err != nil {
		t.Fatal(err)
	}
	// bf16-mixed under ZeRO-3: fp32 master weights + Adam m and v = 12 B/param over 32 GPUs.
	if want := fit.Round3(12 * float64(m70.Params()) / 32 / fit.GiB); tr.Breakdown.Optimizer != want || tr.Job.Shard != "zero3" {
		t.Errorf("70B full-ft on 4x8 GPUs: optimizer %v GiB (shard %s), want %v (12 B x params / 32)", tr.Breakdown.Optimizer, tr.Job.Shard, want)
	}
	for _, j := range []fit.Job{{NodesAuto: true}, {Nodes: 2, Shard: "none"}, {Task: fit.TaskFullFT, Nodes: 2, Shard: "tp"}, {Task: fit.TaskFullFT, Nodes: 2, Shard: "zero3", Offload: "optimizer"}} {
		if _, err := fit.Estimate(m70, j); pricing.ErrorCode(err) != pricing.Invalid {
			t.Errorf("%+v: %v, want an input error", j, err)
		}
	}
}

// TestRecommendNodesAuto: Llama-3.1-405B in bf16 needs 756 GiB of weights: more than one
// 8 x H100 80GB instance (640 GiB) holds, so --nodes auto picks two clustered instances
// (47 GiB of weights per GPU) and prices them twice; the type without interconnect is
// never clustered.
func TestRecommendNodesAuto(t *testing.T) {
	m, _, _ := model.CatalogModel("llama-3.1-405b")
	offers := []pricing.Offer{
		nodeOffer("aws", "p5.48xlarge", "H100", 8, 80, 55.04),
		nodeOffer("lambda", "gpu_8x_h100_sxm5", "H100", 8, 80, 31.92),
	}
	rec, err := Recommend(RecommendInput{Model: m, Job: fit.Job{NodesAuto: true}, Offers: offers, HeadroomPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Offers) != 1 {
		t.Fatalf("offers %+v, nearest miss %q", rec.Offers, rec.NearestMiss)
	}
	f := rec.Offers[0]
	if f.InstanceType != "p5.48xlarge" || f.Nodes != 2 || math.Abs(f.ClusterPriceUSDHr-110.08) > 1e-9 || !strings.Contains(f.Layout, "tensor parallel 8") || !strings.Contains(f.Interconnect, "EFA") {
		t.Errorf("plan %+v", f)
	}
	// Without --nodes nothing fits, and the nearest miss names the node count.
	rec, err = Recommend(RecommendInput{Model: m, Job: fit.Job{}, Offers: offers, HeadroomPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Offers) != 0 || !strings.Contains(rec.NearestMiss, "`--nodes 2` would fit: 2 × aws r1 p5.48xlarge") {
		t.Errorf("nearest miss %q", rec.NearestMiss)
	}
	// --nodes 2 where no offered type has an interconnect is an input error.
	_, err = Recommend(RecommendInput{Model: m, Job: fit.Job{Nodes: 2}, Offers: offers[1:], HeadroomPct: -1})
	if pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), "gpu_8x_h100_sxm5") {
		t.Errorf("--nodes 2 on lambda: %v", err)
	}
}

// TestRecommendNodesFullFT70B: a 70B full fine-tune (16 B/param of states = 1.05 TiB)
// fits no single 8-GPU instance here; --nodes auto finds the fewest clustered instances.
func TestRecommendNodesFullFT70B(t *testing.T) {
	m, _, _ := model.CatalogModel("llama-3.1-70b")
	offers := []pricing.Offer{nodeOffer("azure", "Standard_ND96isr_MI300X_v5", "MI300X", 8, 192, 48)}
	job := fit.Job{Task: fit.TaskFullFT, NodesAuto: true}
	rec, err := Recommend(RecommendInput{Model: m, Job: job, Offers: offers, HeadroomPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Offers) != 1 || rec.Offers[0].Nodes < 2 || !strings.Contains(rec.Offers[0].Layout, "ZeRO-3") {
		t.Fatalf("offers %+v, nearest miss %q", rec.Offers, rec.NearestMiss)
	}
	n := rec.Offers[0].Nodes
	// Fewest: one node fewer does not fit.
	one, err := fit.Estimate(m, fit.Job{Task: fit.TaskFullFT, GPUs: 8, Nodes: n - 1})
	if err != nil {
		t.Fatal(err)
	}
	if n > 2 && one.DeviceTotalGiB*1.05 <= 192 {
		t.Errorf("%d nodes chosen but %d fit (%v GiB)", n, n-1, one.DeviceTotalGiB)
	}
}

// TestNearestMissNamesNodes: 405B and 671B full fine-tunes fit no single instance; the
// nearest miss names how many clustered instances would run them (with gradient
// checkpointing when the activations alone overflow a GPU).
func TestNearestMissNamesNodes(t *testing.T) {
	offers := []pricing.Offer{
		nodeOffer("azure", "Standard_ND96isr_MI300X_v5", "MI300X", 8, 192, 48),
		nodeOffer("aws", "p6-b300.48xlarge", "B300", 8, 262.5, 142.4),
	}
	for _, c := range []struct {
		model string
		job   fit.Job
		want  string
	}{
		{"llama-3.1-405b", fit.Job{Task: fit.TaskFullFT}, "--grad-ckpt` would fit"},
		{"deepseek-v3", fit.Job{Task: fit.TaskFullFT, Quant: fit.QuantNone, GradCkpt: true}, "` would fit"},
	} {
		m, _, _ := model.CatalogModel(c.model)
		rec, err := Recommend(RecommendInput{Model: m, Job: c.job, Offers: offers, HeadroomPct: -1})
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		if len(rec.Offers) != 0 || !strings.Contains(rec.NearestMiss, "`--nodes ") || !strings.Contains(rec.NearestMiss, c.want) || !strings.Contains(rec.NearestMiss, "ZeRO-3") {
			t.Errorf("%s: nearest miss %q", c.model, rec.NearestMiss)
		}
	}
}

// TestNearestMissPinnedGPUsAcrossNodes: --gpus 64 pins more GPUs than any instance has;
// --gpus is the GPUs the job runs on: 64 GPUs when the largest clustered instance has 8
// is 8 instances × 8 GPUs, priced 8 × the instance, on clustered instance types only
// (the cheaper 8-GPU instance without an interconnect cannot be one of them).
func TestPinnedGPUsBeyondInstanceSpanNodes(t *testing.T) {
	m, _, _ := model.CatalogModel("llama-3.1-70b")
	offers := []pricing.Offer{
		nodeOffer("aws", "p5.48xlarge", "H100", 8, 80, 55.04),
		nodeOffer("lambda", "gpu_8x_h100_sxm5", "H100", 8, 80, 23.92), // no cluster interconnect
	}
	job := fit.Job{Task: fit.TaskFullFT, Shard: "fsdp", GPUs: 64, GradCkpt: true}
	rec, err := Recommend(RecommendInput{Model: m, Job: job, PinGPUs: true, Offers: offers, HeadroomPct: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Offers) != 1 {
		t.Fatalf("got %d offers, want the one clustered type; nearest miss %q", len(rec.Offers), rec.NearestMiss)
	}
	f := rec.Offers[0]
	if f.InstanceType != "p5.48xlarge" || f.Nodes != 8 || f.GPUsUsed != 8 || math.Abs(f.ClusterPriceUSDHr-8*55.04) > 1e-6 {
		t.Errorf("got %s × %d nodes, %d GPUs each, cluster $%.2f/h; want p5.48xlarge × 8 nodes, 8 GPUs, $%.2f/h",
			f.InstanceType, f.Nodes, f.GPUsUsed, f.ClusterPriceUSDHr, 8*55.04)
	}
	want := "planned as 8 instances × 8 GPUs"
	if !slices.ContainsFunc(rec.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings %q: want one saying %q", rec.Warnings, want)
	}
}

func TestSpanPinnedGPUs(t *testing.T) {
	p5 := nodeOffer("aws", "p5.48xlarge", "H100", 8, 80, 55.04)
	p4 := nodeOffer("aws", "p4d.24xlarge", "A100", 8, 40, 32.77)
	g4 := nodeOffer("aws", "g5.12xlarge", "A10G", 4, 24, 5.67) // no interconnect
	for _, tc := range []struct {
		name        string
		gpus, nodes int
		pin         bool
		offers      []pricing.Offer
		wantGPUs    int
		wantNodes   int
		wantSpanned bool
	}{
		{"an instance holds the job", 8, 0, true, []pricing.Offer{p5}, 8, 0, false},
		{"64 over 8-GPU clusters", 64, 0, true, []pricing.Offer{p5, p4}, 8, 8, true},
		{"16 over 8-GPU clusters", 16, 0, true, []pricing.Offer{p5, g4}, 8, 2, true},
		{"no clustered count divides 12", 12, 0, true, []pricing.Offer{p5}, 12, 0, false},
		{"only unclustered instances", 16, 0, true, []pricing.Offer{g4}, 16, 0, false},
		{"--nodes given", 64, 2, true, []pricing.Offer{p5}, 64, 2, false},
		{"not pinned", 64, 0, false, []pricing.Offer{p5}, 64, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := RecommendInput{Job: fit.Job{GPUs: tc.gpus, Nodes: tc.nodes}, PinGPUs: tc.pin, Offers: tc.offers}
			note := spanPinnedGPUs(&in)
			if in.Job.GPUs != tc.wantGPUs || in.Job.Nodes != tc.wantNodes || (note != "") != tc.wantSpanned {
				t.Errorf("got --gpus %d --nodes %d note %q; want --gpus %d --nodes %d spanned %v",
					in.Job.GPUs, in.Job.Nodes, note, tc.wantGPUs, tc.wantNodes, tc.wantSpanned)
			}
		})
	}
}

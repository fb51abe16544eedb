package fit

import (
	"math"
	"strings"
	"testing"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// TestNewArchitectureParamCounts holds every catalog model added for issue 13 to two
// independent figures: the exact count computed from the same config.json with the
// counting rules written out in shared/models/README.md ("Computed" column, derived by
// hand/script outside this code), and the publisher's figure, which is rounded, so within
// 2 %. OpenAI counts gpt-oss's active parameters without the input embedding
// (activeExclEmbed); everyone else includes it.
func TestNewArchitectureParamCounts(t *testing.T) {
	cases := []struct {
		model               string
		total, active       int64   // README "Computed"
		pubTotal, pubActive float64 // publisher's figure
		activeExclEmbed     bool
		source              string
	}{
		{"qwen3-0.6b", 596_049_920, 596_049_920, 0.6e9, 0.6e9, false, "https://huggingface.co/Qwen/Qwen3-0.6B (Number of Parameters: 0.6B)"},
		{"qwen3-8b", 8_190_735_360, 8_190_735_360, 8.2e9, 8.2e9, false, "https://huggingface.co/Qwen/Qwen3-8B (8.2B)"},
		{"qwen3-32b", 32_762_123_264, 32_762_123_264, 32.8e9, 32.8e9, false, "https://huggingface.co/Qwen/Qwen3-32B (32.8B)"},
		{"qwen3-30b-a3b", 30_532_122_624, 3_353_032_704, 30.5e9, 3.3e9, false, "https://huggingface.co/Qwen/Qwen3-30B-A3B (30.5B in total and 3.3B activated)"},
		{"qwen3-235b-a22b", 235_093_634_560, 22_190_763_520, 235e9, 22e9, false, "https://huggingface.co/Qwen/Qwen3-235B-A22B (235B in total and 22B activated)"},
		{"deepseek-v3", 671_026_419_200, 37_552_297_472, 671e9, 37e9, false, "https://huggingface.co/deepseek-ai/DeepSeek-V3 (671B total parameters with 37B activated for each token)"},
		{"deepseek-r1", 671_026_419_200, 37_552_297_472, 671e9, 37e9, false, "https://huggingface.co/deepseek-ai/DeepSeek-R1 (671B total, 37B activated)"},
		{"gemma-3-27b", 27_432_406_640, 27_009_346_304, 27e9, 27e9, false, "https://huggingface.co/google/gemma-3-27b-it (27B); Gemma 3 report table 1: 417M vision + 1,416M embedding + 25,600M non-embedding"},
		{"llama-4-scout", 108_641_793_536, 17_172_894_720, 109e9, 17e9, false, "https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E-Instruct (17B activated, 109B total)"},
		{"llama-4-maverick", 400_711_848_960, 17_184_691_200, 400e9, 17e9, false, "https://huggingface.co/meta-llama/Llama-4-Maverick-17B-128E-Instruct (17B activated, 400B total)"},
		{"gpt-oss-20b", 20_914_757_184, 4_187_440_704, 20.91e9, 3.61e9, true, "https://huggingface.co/openai/gpt-oss-20b model card (arXiv:2508.10925) table 1: 20.91B total, 3.61B active"},
		{"gpt-oss-120b", 116_829_156_672, 5_711_982_912, 116.83e9, 5.13e9, true, "https://huggingface.co/openai/gpt-oss-120b model card (arXiv:2508.10925) table 1: 116.83B total, 5.13B active"},
		{"mistral-small-24b", 23_572_403_200, 23_572_403_200, 24e9, 24e9, false, "https://huggingface.co/mistralai/Mistral-Small-24B-Base-2501 (24B)"},
		{"phi-4", 14_659_507_200, 14_659_507_200, 14.7e9, 14.7e9, false, "https://huggingface.co/microsoft/phi-4 (14B; Hub safetensors metadata 14.7B)"},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			m, ok, err := model.CatalogModel(c.model)
			if !ok || err != nil {
				t.Fatalf("not in the catalog: %v", err)
			}
			if m.Params() != c.total || m.ActiveParams() != c.active {
				t.Errorf("params %d active %d, want %d / %d (README computed)", m.Params(), m.ActiveParams(), c.total, c.active)
			}
			active := float64(m.ActiveParams())
			if c.activeExclEmbed {
				active -= float64(m.EmbedParams)
			}
			if r := float64(m.Params())/c.pubTotal - 1; math.Abs(r) > 0.02 {
				t.Errorf("total %d is %+.1f%% from the published %.4g (%s)", m.Params(), 100*r, c.pubTotal, c.source)
			}
			if r := active/c.pubActive - 1; math.Abs(r) > 0.02 {
				t.Errorf("active %.0f is %+.1f%% from the published %.4g (%s)", active, 100*r, c.pubActive, c.source)
			}
			if m.MoEExperts > 0 && m.ActiveParams() >= m.Params() {
				t.Errorf("MoE active %d not below total %d", m.ActiveParams(), m.Params())
			}
		})
	}
}

// TestKVCachePerToken derives the KV cache of the MLA and sliding-window models by hand.
func TestKVCachePerToken(t *testing.T) {
	// DeepSeek-V3: MLA caches kv_lora_rank (512) + qk_rope_head_dim (64) values per token
	// per layer, 61 layers: 61 x 576 = 35,136 values = 70,272 bytes in bf16, whatever the
	// sequence length. Full multi-head K/V would be 61 x 2 x 128 heads x (128+64 | 128)
	// ~ 4.0 M values: 114 x more.
	ds, _, err := model.CatalogModel("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []int{1, 4096, 163840} {
		if got := ds.KVBytesPerToken(seq, 2); got != 70272 {
			t.Errorf("deepseek-v3 seq %d: %v bytes/token, want 61*(512+64)*2 = 70272", seq, got)
		}
	}
	// Gemma 3 27B: 62 layers, 16 KV heads x head_dim 128, K and V: 4096 values per layer
	// per token. 10 global layers (indices 5, 11, ..., 59) keep every token; the 52
	// sliding layers keep at most 1024. At 8192 tokens: (10 x 8192 + 52 x 1024) x 4096 x 2 B
	// = (81,920 + 53,248) x 8192 B = 1,107,296,256 B for the sequence = 135,168 B/token.
	// At 1024 tokens or fewer every layer keeps every token: 62 x 4096 x 2 = 507,904 B/token.
	g, _, err := model.CatalogModel("gemma-3-27b")
	if err != nil {
		t.Fatal(err)
	}
	if got := g.KVBytesPerToken(8192, 2) * 8192; got != 1_107_296_256 {
		t.Errorf("gemma-3-27b KV at 8192 tokens: %v bytes, want 1,107,296,256", got)
	}
	if got := g.KVBytesPerToken(1024, 2); got != 507_904 {
		t.Errorf("gemma-3-27b KV at 1024 tokens: %v bytes/token, want 62*4096*2 = 507,904", got)
	}
	// The estimate's KV cache uses the same count: batch 2 x 8192 tokens in bf16.
	res, err := Estimate(g, Job{Task: TaskInference, Batch: 2, SeqLen: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if want := Round3(2 * 1_107_296_256 / GiB); res.Breakdown.KVCache != want {
		t.Errorf("gemma-3-27b estimate kv_cache %v GiB, want %v", res.Breakdown.KVCache, want)
	}
}

// TestMoEActiveDrivesActivations: an MoE model's training activations follow its top-k
// experts, not the expert count, so Qwen3-30B-A3B (3.3B active) keeps fewer activations
// per token than the dense Qwen3-32B.
func TestMoEActiveDrivesActivations(t *testing.T) {
	moe, _, _ := model.CatalogModel("qwen3-30b-a3b")
	dense, _, _ := model.CatalogModel("qwen3-32b")
	j := Job{Task: TaskLoRA, Batch: 1, SeqLen: 2048, GradCkpt: false}
	a, err := Estimate(moe, j)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Estimate(dense, j)
	if err != nil {
		t.Fatal(err)
	}
	if a.Breakdown.Activations >= b.Breakdown.Activations {
		t.Errorf("MoE activations %v GiB not below dense %v GiB", a.Breakdown.Activations, b.Breakdown.Activations)
	}
	if a.Model.ActiveParams != moe.ActiveParams() || a.Model.Params != moe.Params() {
		t.Errorf("result names %d/%d, want %d/%d", a.Model.Params, a.Model.ActiveParams, moe.Params(), moe.ActiveParams())
	}
}

// TestOverflowingConfig: absurd dimensions are an input error, never a negative count.
func TestOverflowingConfig(t *testing.T) {
	cases := map[string]string{
		"field too large":   `{"model_type":"llama","hidden_size":1e15,"num_hidden_layers":32,"num_attention_heads":32,"intermediate_size":11008,"vocab_size":32000}`,
		"product overflows": `{"model_type":"llama","hidden_size":16777216,"num_hidden_layers":16777216,"num_attention_heads":1,"intermediate_size":16777216,"vocab_size":16777216}`,
		"moe overflows":     `{"model_type":"qwen3_moe","hidden_size":16777216,"num_hidden_layers":16777216,"num_attention_heads":1,"num_experts":16777216,"num_experts_per_tok":1,"moe_intermediate_size":16777216,"vocab_size":10}`,
	}
	for name, cfg := range cases {
		m, err := model.ModelFromConfig("huge.json", []byte(cfg))
		if err == nil {
			t.Errorf("%s: got a model with %d params, want an error", name, m.Params())
			continue
		}
		if pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), "huge.json") {
			t.Errorf("%s: %v, want an Invalid error naming the file", name, err)
		}
	}
}

// TestMLATensorParallelKV: the MLA latent is shared by all heads, so tensor parallelism
// replicates it instead of dividing it: DeepSeek-V3's KV cache per GPU is the same on 8
// GPUs as on one.
func TestMLATensorParallelKV(t *testing.T) {
	m, _, _ := model.CatalogModel("deepseek-v3")
	one, err := Estimate(m, Job{SeqLen: 8192})
	if err != nil {
		t.Fatal(err)
	}
	eight, err := Estimate(m, Job{SeqLen: 8192, GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	if one.Breakdown.KVCache != eight.Breakdown.KVCache || one.Breakdown.KVCache != Round3(8192*70272/GiB) {
		t.Errorf("KV per GPU: %v on 1 GPU, %v on 8, want %v", one.Breakdown.KVCache, eight.Breakdown.KVCache, Round3(8192*70272/GiB))
	}
}

// TestChunkedAndBandedKV: Llama 4 Scout's 36 RoPE layers (every layer but 3, 7, …, 47)
// attend within 8192-token chunks, gpt-oss-20b's 12 sliding layers within 128 tokens.
func TestChunkedAndBandedKV(t *testing.T) {
	cases := []struct {
		model string
		seq   int
		want  float64 // bytes for one sequence in bf16
	}{
		// Scout: 8 KV heads x 128 x (K,V) = 2048 values per layer per token.
		// (12 x 100,000 + 36 x 8192) x 2048 x 2 B = 1,494,912 x 4096 B.
		{"llama-4-scout", 100_000, (12*100_000 + 36*8192) * 2048 * 2},
		// gpt-oss-20b: 8 KV heads x 64 x 2 = 1024 values per layer; 12 full + 12 banded.
		// (12 x 4096 + 12 x 128) x 1024 x 2 B.
		{"gpt-oss-20b", 4096, (12*4096 + 12*128) * 1024 * 2},
	}
	for _, c := range cases {
		m, _, err := model.CatalogModel(c.model)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.KVBytesPerToken(c.seq, 2) * float64(c.seq); math.Abs(got-c.want) > 1e-3*c.want {
			t.Errorf("%s at %d tokens: %.0f bytes, want %.0f", c.model, c.seq, got, c.want)
		}
	}
}

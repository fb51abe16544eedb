package model

import (
	"os"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// TestParamCounts checks every count in shared/models/README.md ("Computed from this
// config") against the configs embedded in the catalog.
func TestParamCounts(t *testing.T) {
	tests := []struct {
		model        string
		arch         string
		total        int64
		activeApprox int64 // 0 = equal to total
	}{
		{"openai-community/gpt2", "gpt2", 124_439_808, 0},
		{"google-bert/bert-large-uncased", "bert", 335_141_888, 0},
		{"meta-llama/Llama-2-7b-hf", "llama", 6_738_415_616, 0},
		{"meta-llama/Llama-2-13b-hf", "llama", 13_015_864_320, 0},
		{"meta-llama/Llama-2-70b-hf", "llama", 68_976_648_192, 0},
		{"meta-llama/Meta-Llama-3-8B", "llama", 8_030_261_248, 0},
		{"meta-llama/Llama-3.1-8B", "llama", 8_030_261_248, 0},
		{"meta-llama/Meta-Llama-3-70B", "llama", 70_553_706_496, 0},
		{"meta-llama/Llama-3.1-405B", "llama", 405_853_388_800, 0}, // 8 KV heads, as the README advises
		{"mistralai/Mistral-7B-v0.1", "mistral", 7_241_732_096, 0},
		{"mistralai/Mixtral-8x7B-v0.1", "mixtral", 46_702_792_704, 12_879_925_248},
		{"Qwen/Qwen2.5-7B", "qwen2", 7_615_616_512, 0},
		{"Qwen/Qwen2.5-72B", "qwen2", 72_706_203_648, 0},
		{"google/gemma-2-9b", "gemma2", 9_241_705_984, 0},
		{"microsoft/phi-2", "phi", 2_779_683_840, 0},
		{"tiiuae/falcon-7b", "falcon", 6_921_720_704, 0},
		{"EleutherAI/pythia-6.9b", "gpt_neox", 6_857_302_016, 0},
		{"deepseek-ai/DeepSeek-V2-Lite", "deepseek_v2", 15_706_484_224, 2_661_150_208},
		{"bigscience/bloom-7b1", "bloom", 7_069_016_064, 0},
		{"facebook/opt-6.7b", "opt", 6_658_473_984, 0},
		{"google-t5/t5-large", "t5", 737_668_096, 0},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			m, ok, err := CatalogModel(tt.model)
			if err != nil || !ok {
				t.Fatalf("CatalogModel(%q) = ok %v, err %v", tt.model, ok, err)
			}
			if m.Architecture != tt.arch {
				t.Errorf("architecture = %q, want %q", m.Architecture, tt.arch)
			}
			if got := m.Params(); got != tt.total {
				t.Errorf("Params() = %d, want %d (diff %d)", got, tt.total, got-tt.total)
			}
			want := tt.activeApprox
			if want == 0 {
				want = tt.total
			}
			if got := m.ActiveParams(); got != want {
				t.Errorf("ActiveParams() = %d, want %d", got, want)
			}
		})
	}
}

// TestDeepseekActive: the README gives ~2.66B active incl. embeddings and lm_head.
func TestDeepseekActive(t *testing.T) {
	m, _, err := CatalogModel("deepseek-v2-lite")
	if err != nil {
		t.Fatal(err)
	}
	if a := m.ActiveParams(); a < 2.6e9 || a > 2.7e9 {
		t.Errorf("ActiveParams() = %d, want ~2.66e9", a)
	}
}

// TestLlama405BOriginalConfig: the first release's config (16 KV heads) counts 410.08B.
func TestLlama405BOriginalConfig(t *testing.T) {
	data, err := os.ReadFile("testdata/Llama-3.1-405B-original-16kv.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ModelFromConfig("405b.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Params(), int64(410_081_247_232); got != want {
		t.Errorf("Params() = %d, want %d", got, want)
	}
}

func TestSupportedArchitecturesParse(t *testing.T) {
	// One catalog entry per architecture the issue lists must build.
	for _, ref := range []string{"llama-2-7b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "gemma-7b", "gemma-2-9b",
		"phi-2", "phi-3-mini-4k", "falcon-7b", "falcon-40b", "gpt2", "pythia-6.9b", "octocoder", "bloom-7b1",
		"opt-6.7b", "t5-large", "mt0-xxl", "bert-large-uncased", "deepseek-v2-lite"} {
		m, ok, err := CatalogModel(ref)
		if !ok || err != nil {
			t.Errorf("%s: ok %v err %v", ref, ok, err)
			continue
		}
		if m.Params() < 1e8 {
			t.Errorf("%s: params %d", ref, m.Params())
		}
	}
}

func TestMalformedConfig(t *testing.T) {
	tests := []struct {
		name, json, wantInErr string
	}{
		{"not json", `{"model_type": "llama",`, "not a JSON object"},
		{"missing hidden", `{"model_type":"llama","num_hidden_layers":2,"num_attention_heads":2,"intermediate_size":8,"vocab_size":10}`, `"hidden_size"`},
		{"wrong type", `{"model_type":"llama","hidden_size":"4096","num_hidden_layers":2,"num_attention_heads":2,"intermediate_size":8,"vocab_size":10}`, `"hidden_size": want a number`},
		{"negative", `{"model_type":"gpt2","n_embd":-1,"n_layer":2,"n_head":2,"vocab_size":10,"n_positions":8}`, `"n_embd": want a positive integer`},
		{"falcon legacy missing", `{"model_type":"falcon","hidden_size":64,"n_head":4,"vocab_size":10}`, `"num_hidden_layers" (or n_layer)`},
		{"kv heads", `{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":3,"intermediate_size":8,"vocab_size":10}`, `num_key_value_heads`},
		{"unknown arch", `{"model_type":"mamba"}`, `"mamba" is not supported`},
		{"no type", `{"hidden_size": 4}`, `missing field "model_type"`},
		{"diffusers", `{"_class_name":"UNet2DConditionModel"}`, "diffusers component"},
		// Optional fields are checked too, not read with their error dropped.
		{"max positions a string", `{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":8,"vocab_size":10,"max_position_embeddings":"4k"}`, `"max_position_embeddings": want a number`},
		{"gemma2 softcap a string", `{"model_type":"gemma2","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":8,"vocab_size":10,"final_logit_softcapping":"yes"}`, `"final_logit_softcapping": want a number`},
		{"gpt2 dropout a string", `{"model_type":"gpt2","n_embd":64,"n_layer":2,"n_head":2,"vocab_size":10,"n_positions":8,"resid_pdrop":"0.1"}`, `"resid_pdrop": want a number`},
		{"bert dropout a string", `{"model_type":"bert","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":2,"intermediate_size":8,"vocab_size":10,"max_position_embeddings":8,"attention_probs_dropout_prob":"x"}`, `"attention_probs_dropout_prob": want a number`},
		{"t5 dropout a string", `{"model_type":"t5","d_model":64,"d_kv":8,"num_heads":2,"d_ff":8,"num_layers":2,"vocab_size":10,"dropout_rate":false}`, `"dropout_rate": want a number`},
		{"class name not a string", `{"_class_name":7}`, `"_class_name": want a string`},
	}
	for _, tt := range tests {
		_, err := ModelFromConfig("x/config.json", []byte(tt.json))
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantInErr) {
			t.Errorf("%s: error %q does not mention %q", tt.name, err, tt.wantInErr)
		}
		if c := pricing.ErrorCode(err); c != pricing.Invalid {
			t.Errorf("%s: code %s, want invalid", tt.name, c)
		}
	}
}

func TestFalconLegacyAndNewKeys(t *testing.T) {
	legacy := `{"model_type":"falcon","hidden_size":4544,"n_head":71,"n_layer":32,"vocab_size":65024,"multi_query":true,"parallel_attn":true}`
	modern := `{"model_type":"falcon","hidden_size":4544,"num_attention_heads":71,"num_hidden_layers":32,"vocab_size":65024,"multi_query":true,"parallel_attn":true}`
	for _, js := range []string{legacy, modern} {
		m, err := ModelFromConfig("falcon.json", []byte(js))
		if err != nil {
			t.Fatal(err)
		}
		if m.Params() != 6_921_720_704 {
			t.Errorf("falcon params = %d", m.Params())
		}
		if m.KVPerToken != 2*32*64 { // multi-query: one KV head
			t.Errorf("falcon KV elements/token = %d, want %d", m.KVPerToken, 2*32*64)
		}
	}
}

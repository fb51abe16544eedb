package fit

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// withQuantConfig returns a catalog config.json with a quantization_config added.
func withQuantConfig(t *testing.T, config string, qc map[string]any) []byte {
	t.Helper()
	data, err := os.ReadFile("../model/catalog/configs/" + config)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if qc != nil {
		m["quantization_config"] = qc
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func weightsBytes(t *testing.T, m *model.Model, j Job) float64 {
	t.Helper()
	r, err := resolve(m, j)
	if err != nil {
		t.Fatal(err)
	}
	return weightBytes(m, r)
}

// TestGPTQLlama2Weights: TheBloke/Llama-2-7B-GPTQ (4-bit, group 128) is a 3.90 GB file.
// Per layer (AutoGPTQ layout, K in -> N out: qweight K·N/2, qzeros (K/128)·N/2, fp16
// scales (K/128)·N·2, int32 g_idx 4K, fp16 bias 2N):
//
//	q,k,v,o 4096->4096:  8,388,608 + 65,536 + 262,144 + 16,384 + 8,192 =  8,740,864 x 4
//	gate,up 4096->11008: 22,544,384 + 176,128 + 704,512 + 16,384 + 22,016 = 23,463,424 x 2
//	down 11008->4096:    22,544,384 + 176,128 + 704,512 + 44,032 + 8,192 = 23,477,248
//	= 105,367,552 per layer x 32 = 3,371,761,664
//
// + fp16 embedding and lm_head 2 x 32000 x 4096 x 2 = 524,288,000 + norms 65 x 4096 x 2 =
// 532,480: 3,896,582,144 B = 3.90 GB (3.63 GiB), against 13.48 GB in fp16.
func TestGPTQLlama2Weights(t *testing.T) {
	data := withQuantConfig(t, "meta-llama__Llama-2-7b-hf.json", map[string]any{
		"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false, "sym": true})
	m, err := model.ModelFromConfig("Llama-2-7B-GPTQ/config.json", data)
	if err != nil {
		t.Fatal(err)
	}
	m.Name = "llama-2-7b-gptq"
	if got := weightsBytes(t, m, Job{}); got != 3_896_582_144 {
		t.Errorf("weights %v B, want 3,896,582,144", got)
	}
	res, err := Estimate(m, Job{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Job.Quant != "int4" || math.Abs(res.Breakdown.Weights-3.629) > 0.001 {
		t.Errorf("quant %q weights %v GiB, want int4 3.629", res.Job.Quant, res.Breakdown.Weights)
	}
	// --quant int4 agrees; anything else conflicts and names both.
	if _, err := Estimate(m, Job{Quant: "int4"}); err != nil {
		t.Errorf("--quant int4 on a GPTQ 4-bit checkpoint: %v", err)
	}
	for _, q := range []string{"int8", "nf4", "fp8"} {
		_, err := Estimate(m, Job{Quant: Quant(q)})
		if pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), "--quant "+q) || !strings.Contains(err.Error(), "gptq 4-bit") {
			t.Errorf("--quant %s: %v, want an input error naming --quant %s and gptq 4-bit", q, err, q)
		}
	}
}

// TestDequantizedCheckpoint: --quant none asks for a pre-quantized checkpoint's weights in
// 16 bits (DeepSeek's fp8_cast_bf16.py, gpt-oss dequantized for training): 2 bytes per
// parameter, and a full fine-tune is possible again.
func TestDequantizedCheckpoint(t *testing.T) {
	m, _, _ := model.CatalogModel("gpt-oss-20b")
	if got, want := weightsBytes(t, m, Job{Quant: QuantNone}), float64(m.Params())*2; got != want {
		t.Errorf("dequantized weights %v B, want %v", got, want)
	}
	if _, err := Estimate(m, Job{Task: TaskFullFT, Quant: QuantNone, GPUs: 8, Shard: "zero3"}); err != nil {
		t.Errorf("full-ft of a dequantized checkpoint: %v", err)
	}
	if _, err := Estimate(m, Job{Task: TaskFullFT}); pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), "--quant none") {
		t.Errorf("full-ft of the MXFP4 checkpoint as stored: %v, want an input error suggesting --quant none", err)
	}
}

// TestGPTQMirrorSizes: the Wizard-Vicuna-30B GPTQ branch (4-bit, group 128, act-order)
// is a 17,554,104,664 B file on the Hub mirror (shared/models/README.md); the tensors are
// that less the safetensors JSON header (~274 KB for its ~2,900 tensor entries).
func TestGPTQMirrorSizes(t *testing.T) {
	data, err := os.ReadFile("testdata/TheBloke__Wizard-Vicuna-30B-Uncensored-GPTQ.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.ModelFromConfig("wizard.json", data)
	if err != nil {
		t.Fatal(err)
	}
	const file = 17_554_104_664
	if got := weightsBytes(t, m, Job{}); got > file || file-got > 300_000 {
		t.Errorf("weights %.0f B, want within the ~274 KB header below the %d B file", got, file)
	}
}

// TestMXFP4GptOss: gpt-oss stores its experts in MXFP4 (4.25 bits per weight: 4-bit
// values + an 8-bit scale per 32) and everything else in bf16. 120b: experts
// 114,661,785,600 weights... the README derives 65,248,815,744 B = 60.77 GiB; 20b
// 13,761,264,768 B = 12.82 GiB (model card: 60.8 GiB and 12.8 GiB checkpoints). The
// 120b model fits one 80 GB GPU for inference, as its model card says.
func TestMXFP4GptOss(t *testing.T) {
	for name, want := range map[string]float64{"gpt-oss-120b": 65_248_815_744, "gpt-oss-20b": 13_761_264_768} {
		m, _, err := model.CatalogModel(name)
		if err != nil {
			t.Fatal(err)
		}
		// The expert biases are bf16 parameters, not MXFP4 blocks: allow them (<0.1 %).
		if got := weightsBytes(t, m, Job{}); math.Abs(got/want-1) > 0.001 {
			t.Errorf("%s weights %.0f B, want %.0f", name, got, want)
		}
	}
	m, _, _ := model.CatalogModel("gpt-oss-120b")
	// Asking for a different quantization of an MXFP4 checkpoint is an input error.
	if _, err := Estimate(m, Job{Quant: "nf4"}); pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), "MXFP4") {
		t.Errorf("--quant nf4 on gpt-oss: %v", err)
	}
}

// TestFP8BlockCheckpoint: Qwen3-32B-FP8 stores every linear layer in e4m3 (1 byte) with
// an fp32 scale per 128x128 block. Per layer: q 5120->8192 (40x64 = 2,560 blocks), k and v
// 5120->1024 (320 each), o 8192->5120 (2,560), gate/up 5120->25600 and down 25600->5120
// (8,000 each): 29,760 blocks x 4 B x 64 layers = 7,618,560 B of scales; linear weights
// 487,587,840 per layer x 64 = 31,205,621,760 B; the other 1,556,501,504 parameters
// (embedding, lm_head, norms) in bf16: 34,326,243,328 B in all.
func TestFP8BlockCheckpoint(t *testing.T) {
	m, _, err := model.CatalogModel("qwen3-32b-fp8")
	if err != nil {
		t.Fatal(err)
	}
	if got := weightsBytes(t, m, Job{}); got != 34_326_243_328 {
		t.Errorf("weights %v B, want 34,326,243,328", got)
	}
	if _, err := Estimate(m, Job{Quant: "fp8"}); err != nil {
		t.Errorf("--quant fp8 on an fp8 checkpoint: %v", err)
	}
}

// TestBitsandbytesAndAWQCheckpoints sizes the other methods from their documented layouts.
func TestBitsandbytesAndAWQCheckpoints(t *testing.T) {
	base, _, _ := model.CatalogModel("llama-2-7b")
	lin := float64(base.LinearParams)
	plain := float64(base.ParamCount-base.LinearParams) * 2
	var rows float64 // output rows of all linear layers (LLM.int8 keeps an fp32 scale per row)
	for _, mod := range base.Modules {
		rows += float64(mod.Out * mod.Count)
	}
	// AWQ GEMM, 4-bit g128 with zeros: per weight 0.5 + (0.5 + 2)/128 bytes (every K of
	// Llama-2-7B divides by 128).
	cases := []struct {
		name  string
		qc    map[string]any
		quant string
		want  float64
	}{
		{"bnb nf4", map[string]any{"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4"}, "nf4", plain + lin*model.Bytes4bit},
		{"bnb nf4 dq", map[string]any{"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true}, "nf4", plain + lin*model.Bytes4bitDQ},
		{"bnb int8", map[string]any{"quant_method": "bitsandbytes", "load_in_8bit": true}, "int8", plain + lin + 4*rows},
		{"awq", map[string]any{"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true, "version": "gemm"}, "int4", plain + lin*(0.5+2.5/128)},
	}
	for _, c := range cases {
		m, err := model.ModelFromConfig(c.name+".json", withQuantConfig(t, "meta-llama__Llama-2-7b-hf.json", c.qc))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		m.Name = c.name
		if got := weightsBytes(t, m, Job{}); math.Abs(got-c.want) > 1 {
			t.Errorf("%s: weights %.0f B, want %.0f", c.name, got, c.want)
		}
		res, err := Estimate(m, Job{})
		if err != nil || string(res.Job.Quant) != c.quant {
			t.Errorf("%s: quant %v, %v; want %s", c.name, res, err, c.quant)
		}
	}
}

// TestBadQuantConfig: unknown methods and shapes the layout cannot hold are input errors.
func TestBadQuantConfig(t *testing.T) {
	cases := map[string]map[string]any{
		"unknown method": {"quant_method": "hqq", "bits": 4},
		"missing method": {"bits": 4},
		"bits":           {"quant_method": "gptq", "bits": 16},
		"bnb neither":    {"quant_method": "bitsandbytes"},
		"fp8 fmt":        {"quant_method": "fp8", "fmt": "e3m4"},
		"group":          {"quant_method": "gptq", "bits": 4, "group_size": -7},
	}
	for name, qc := range cases {
		_, err := model.ModelFromConfig("q.json", withQuantConfig(t, "meta-llama__Llama-2-7b-hf.json", qc))
		if pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), "quantization_config") {
			t.Errorf("%s: %v, want an input error naming quantization_config", name, err)
		}
	}
	// A 3-bit GPTQ layer must pack its outputs into 32-bit words: 100 outputs cannot.
	odd := `{"model_type":"llama","hidden_size":100,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":256,"vocab_size":1000,
		"quantization_config":{"quant_method":"gptq","bits":3,"group_size":-1}}`
	if _, err := model.ModelFromConfig("odd.json", []byte(odd)); pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), "does not match the layer shapes") {
		t.Errorf("3-bit GPTQ with 100 outputs: %v", err)
	}
}

// TestStatedParams: --params with --model must describe the same model.
func TestStatedParams(t *testing.T) {
	m, _, _ := model.CatalogModel("llama-2-7b")
	for stated, ok := range map[string]bool{"7b": true, "6.74e9": true, "70b": false, "1b": false} {
		err := m.CheckStatedParams(stated)
		if ok != (err == nil) || (err != nil && (pricing.ErrorCode(err) != pricing.Invalid || !strings.Contains(err.Error(), "6738415616"))) {
			t.Errorf("--params %s: %v", stated, err)
		}
	}
}

package fit

import (
	"strings"
	"testing"

	"github.com/pickergpu/picker/model"
)

// TestLitGPTGPTQQuantizesHead: LitGPT's GPTQ (quantize/gptq.py blockwise_quantization)
// quantizes model.lm_head after the blocks, so --framework litgpt --quant int4 stores the
// head at the int4 bytes per weight where transformers keeps it 16-bit. Llama-2-7B has an
// untied head (vocab x hidden), so the weights differ by exactly that matrix at
// (2 - int4 bytes) per parameter; bitsandbytes nf4 keeps the head 16-bit in both
// frameworks, and the assumptions say which.
func TestLitGPTGPTQQuantizesHead(t *testing.T) {
	m, ok, err := model.CatalogModel("llama-2-7b")
	if err != nil || !ok {
		t.Fatalf("catalog llama-2-7b: ok=%v err=%v", ok, err)
	}
	if m.HeadParams != m.Vocab*m.Hidden {
		t.Fatalf("llama-2-7b head %d params; want an untied vocab x hidden head", m.HeadParams)
	}
	est := func(fw Framework, q Quant) *Result {
		t.Helper()
		res, err := Estimate(m, Job{Task: TaskInference, Precision: "bf16", Quant: q, Framework: fw})
		if err != nil {
			t.Fatalf("%s %s: %v", fw, q, err)
		}
		return res
	}
	hf, lit := est(FrameworkHF, "int4"), est(FrameworkLitGPT, "int4")
	want := float64(m.HeadParams) * (2 - QuantBytes(m, "int4", false)) / GiB
	if got := hf.Breakdown.Weights - lit.Breakdown.Weights; got < want-0.002 || got > want+0.002 {
		t.Errorf("LitGPT's GPTQ weights %.3f GiB, transformers' %.3f GiB: %.3f GiB apart; want %.3f (the head at int4)", lit.Breakdown.Weights, hf.Breakdown.Weights, got, want)
	}
	if a := strings.Join(lit.Assumptions, "\n"); !strings.Contains(a, "lm_head quantized too") {
		t.Errorf("LitGPT int4 assumptions do not say the head is quantized:\n%s", a)
	}
	if a := strings.Join(hf.Assumptions, "\n"); !strings.Contains(a, "lm_head, norms and biases stay") {
		t.Errorf("transformers int4 assumptions do not say the head stays 16-bit:\n%s", a)
	}
	if h, l := est(FrameworkHF, "nf4"), est(FrameworkLitGPT, "nf4"); h.Breakdown.Weights != l.Breakdown.Weights {
		t.Errorf("nf4 weights %.3f GiB under LitGPT, %.3f under transformers; bitsandbytes keeps the head 16-bit in both", l.Breakdown.Weights, h.Breakdown.Weights)
	}
}

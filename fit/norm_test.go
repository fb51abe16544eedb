package fit

import (
	"strings"
	"testing"

	"github.com/pickergpu/picker/model"
)

// TestFusedNorm: a fused norm kernel (--norm fused: Liger, Apex, torchtitan's
// fused_rmsnorm) keeps each norm's input in the compute dtype instead of the fp32 copy
// transformers' LlamaRMSNorm keeps: Llama-2-13B has two norms per layer, so the
// activations shrink by 2 norms x hidden x (4-2) bytes x tokens x layers, and the
// assumptions say so. Inference rejects the flag.
func TestFusedNorm(t *testing.T) {
	m, ok, err := model.CatalogModel("llama-2-13b")
	if err != nil || !ok {
		t.Fatalf("catalog llama-2-13b: ok=%v err=%v", ok, err)
	}
	job := Job{Task: TaskFullFT, Precision: "bf16-mixed", Batch: 2, SeqLen: 4096, GPUs: 8, Shard: "fsdp"}
	std, err := Estimate(m, job)
	if err != nil {
		t.Fatal(err)
	}
	job.Norm = "fused"
	fused, err := Estimate(m, job)
	if err != nil {
		t.Fatal(err)
	}
	want := 2 * float64(m.Hidden) * 2 * 2 * 4096 * float64(m.Dec.Layers) / GiB
	if got := std.Breakdown.Activations - fused.Breakdown.Activations; got < want*0.999 || got > want*1.001 {
		t.Errorf("--norm fused saves %.3f GiB of activations; want %.3f", got, want)
	}
	if !strings.Contains(strings.Join(fused.Assumptions, "\n"), "--norm fused") || strings.Contains(strings.Join(std.Assumptions, "\n"), "--norm fused") {
		t.Errorf("only the fused estimate names --norm fused in its assumptions")
	}
	if _, err := Estimate(m, Job{Task: TaskInference, Norm: "fused"}); err == nil || !strings.Contains(err.Error(), "norm") {
		t.Errorf("inference with --norm fused: err %v; want it rejected naming the flag", err)
	}
}

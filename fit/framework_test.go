package fit

import (
	"math"
	"strings"
	"testing"
)

func estimateJob(t *testing.T, model string, flags map[string]string) *Result {
	t.Helper()
	j, err := ParseJob(flags)
	if err != nil {
		t.Fatalf("ParseJob(%v): %v", flags, err)
	}
	r, err := Estimate(catModel(t, model), j)
	if err != nil {
		t.Fatalf("Estimate(%s, %v): %v", model, flags, err)
	}
	return r
}

func hasAssumption(r *Result, sub string) bool {
	return strings.Contains(strings.Join(r.Assumptions, "\n"), sub)
}

// hf LoRA loads the base in bf16: weights are 2 bytes per parameter (+ the fp32 adapters),
// and the answer says so.
func TestFrameworkHFLoRABaseBF16(t *testing.T) {
	m := catModel(t, "llama-3.1-8b")
	r := estimateJob(t, "llama-3.1-8b", map[string]string{"task": "lora"})
	if r.Job.Framework != FrameworkHF || r.Job.Precision != "bf16" {
		t.Fatalf("job = %s/%s; want hf/bf16", r.Job.Framework, r.Job.Precision)
	}
	// weights = 2 bytes x params (base) + 4 bytes x trainable (PEFT's fp32 adapters).
	want := (2*float64(m.ParamCount) + 4*float64(r.TrainableParams)) / GiB
	if math.Abs(r.Breakdown.Weights-want) > 0.002 {
		t.Errorf("weights = %v GiB; want %v (2 bytes/param + fp32 adapters)", r.Breakdown.Weights, want)
	}
	// AdamW m and v of the fp32 adapters: 8 bytes each. No gradient at the peak (the start
	// of backward): Trainer does not accumulate by default.
	if o := r.Breakdown.Optimizer * GiB; math.Abs(o-8*float64(r.TrainableParams)) > 0.001*GiB || r.Breakdown.Gradients != 0 {
		t.Errorf("optimizer = %v bytes, gradients %v; want 8 x %d, 0", o, r.Breakdown.Gradients, r.TrainableParams)
	}
	if !hasAssumption(r, "no gradient accumulation") {
		t.Errorf("assumptions lack the accumulation default: %v", r.Assumptions)
	}
	if !hasAssumption(r, "bf16 (2 bytes/param") || !hasAssumption(r, "hf default: LoRA loads the frozen base in bf16") {
		t.Errorf("assumptions do not state the bf16 base: %v", r.Assumptions)
	}
	// An explicit precision overrides: bf16-mixed keeps the fp32 base (AMP).
	mixed := estimateJob(t, "llama-3.1-8b", map[string]string{"task": "lora", "precision": "bf16-mixed"})
	if mixed.Breakdown.Weights < 1.9*r.Breakdown.Weights {
		t.Errorf("bf16-mixed weights %v; want the fp32 base (about twice %v)", mixed.Breakdown.Weights, r.Breakdown.Weights)
	}
}

// hf QLoRA turns gradient checkpointing on (prepare_model_for_kbit_training); an explicit
// --grad-ckpt=false keeps it off. Llama-2-7B QLoRA needs under 10 GiB.
func TestFrameworkHFQLoRACheckpointing(t *testing.T) {
	r := estimateJob(t, "llama-2-7b", map[string]string{"task": "qlora"})
	if !r.Job.GradCkpt || !hasAssumption(r, "prepare_model_for_kbit_training") {
		t.Errorf("hf qlora: grad_ckpt %v, assumptions %v; want checkpointing on and named", r.Job.GradCkpt, r.Assumptions)
	}
	if r.DeviceTotalGiB*1.05 >= 10 {
		t.Errorf("llama-2-7b qlora needs %v GiB with headroom; want < 10 (fits a 16 GB T4)", r.DeviceTotalGiB*1.05)
	}
	off := estimateJob(t, "llama-2-7b", map[string]string{"task": "qlora", "grad-ckpt": "false"})
	if off.Job.GradCkpt || off.DeviceTotalGiB <= r.DeviceTotalGiB {
		t.Errorf("--grad-ckpt=false: grad_ckpt %v, %v GiB; want off and more than %v", off.Job.GradCkpt, off.DeviceTotalGiB, r.DeviceTotalGiB)
	}
	if !(Job{Task: TaskQLoRA}).WantsGradCkpt() || (Job{Task: TaskLoRA}).WantsGradCkpt() {
		t.Error("WantsGradCkpt: want hf qlora on, hf lora off")
	}
}

// --lora-dropout p > 0 keeps, per adapted module and token, a dropped-out copy of its input
// (2 bytes in bf16) and a 1-byte mask: llama-2-7b q_proj+v_proj, 32 layers, 4096 inputs:
// 32 x 2 x 4096 x 3 bytes per token.
func TestLoRADropout(t *testing.T) {
	base := map[string]string{"task": "lora", "batch": "1", "seq-len": "512"}
	r0 := estimateJob(t, "llama-2-7b", base)
	if r0.Job.LoRADropout == nil || *r0.Job.LoRADropout != 0 {
		t.Fatalf("hf lora_dropout = %v; want PEFT's 0", r0.Job.LoRADropout)
	}
	with := map[string]string{"lora-dropout": "0.1"}
	for k, v := range base {
		with[k] = v
	}
	r1 := estimateJob(t, "llama-2-7b", with)
	want := 32.0 * 2 * 4096 * 3 * 512 / GiB
	if d := r1.Breakdown.Activations - r0.Breakdown.Activations; math.Abs(d-want) > 0.002 {
		t.Errorf("dropout activations = %v GiB; want %v", d, want)
	}
	if _, err := ParseJob(map[string]string{"lora-dropout": "1.5"}); err == nil {
		t.Error("--lora-dropout 1.5 accepted")
	}
}

// LitGPT: bf16-true (adapters bf16 too), lora_dropout 0.05, and the chunked head/loss keeps
// 3 x 2 bytes per token per vocabulary entry instead of the 14 of Hugging Face's loss.
func TestFrameworkLitGPT(t *testing.T) {
	m := catModel(t, "llama-2-7b")
	flags := map[string]string{"task": "lora", "batch": "2", "seq-len": "512", "framework": "litgpt"}
	r := estimateJob(t, "llama-2-7b", flags)
	if r.Job.Precision != "bf16" || r.Job.LoRADropout == nil || *r.Job.LoRADropout != 0.05 {
		t.Fatalf("litgpt job = %s, dropout %v; want bf16, 0.05", r.Job.Precision, r.Job.LoRADropout)
	}
	wantW := (2*float64(m.ParamCount) + 2*float64(r.TrainableParams)) / GiB
	if math.Abs(r.Breakdown.Weights-wantW) > 0.002 {
		t.Errorf("weights = %v; want %v (bf16 base and adapters)", r.Breakdown.Weights, wantW)
	}
	// workspace: the loss, 1024 tokens x 32000 vocab x 6 bytes, plus the AdamW sqrt(v)
	// temporary only when it exceeds the activations (it does not here).
	wantWS := 1024.0 * 32000 * 6 / GiB
	if math.Abs(r.Breakdown.Workspace-wantWS) > 0.002 {
		t.Errorf("workspace = %v GiB; want %v", r.Breakdown.Workspace, wantWS)
	}
	hf := estimateJob(t, "llama-2-7b", map[string]string{"task": "lora", "batch": "2", "seq-len": "512", "precision": "bf16"})
	if want := 1024.0 * 32000 * 14 / GiB; math.Abs(hf.Breakdown.Workspace-want) > 0.002 {
		t.Errorf("hf workspace = %v GiB; want %v (14 bytes/token/vocab)", hf.Breakdown.Workspace, want)
	}
}

// torchtune: bf16, activation checkpointing on; single-GPU full fine-tune uses
// PagedAdamW8bit with the optimizer in backward (gradients of one tensor at a time); QLoRA
// double-quantizes (torchao) and needs no bitsandbytes.
func TestFrameworkTorchtune(t *testing.T) {
	m := catModel(t, "llama-3.2-1b")
	r := estimateJob(t, "llama-3.2-1b", map[string]string{"task": "full-ft", "framework": "torchtune"})
	if r.Job.Precision != "bf16" || !r.Job.GradCkpt || r.Job.Optimizer != "paged-adamw-8bit" {
		t.Fatalf("torchtune full-ft = %s ckpt %v %s; want bf16, on, paged-adamw-8bit", r.Job.Precision, r.Job.GradCkpt, r.Job.Optimizer)
	}
	if want := float64(m.LargestTensor) * 2 / GiB; math.Abs(r.Breakdown.Gradients-want) > 0.002 {
		t.Errorf("gradients = %v GiB; want the largest tensor's %v (optimizer_in_bwd)", r.Breakdown.Gradients, want)
	}
	q := estimateJob(t, "llama-3.2-1b", map[string]string{"task": "qlora", "framework": "torchtune"})
	if !q.Job.DoubleQuant || q.Job.Optimizer != "adamw" {
		t.Errorf("torchtune qlora double_quant %v optimizer %s; want true, adamw (fused)", q.Job.DoubleQuant, q.Job.Optimizer)
	}
	// explicit flags override the framework
	x := estimateJob(t, "llama-3.2-1b", map[string]string{"task": "full-ft", "framework": "torchtune", "grad-ckpt": "false", "optimizer": "adamw", "double-quant": "false"})
	if x.Job.GradCkpt || x.Job.Optimizer != "adamw" {
		t.Errorf("explicit flags overridden: %+v", x.Job)
	}
}

// peak_reserved_gib = peak allocated + allocator slack; device_total = reserved + context.
func TestPeakReserved(t *testing.T) {
	r := estimateJob(t, "llama-2-7b", map[string]string{"task": "lora"})
	if math.Abs(r.PeakReservedGiB-(r.PeakAllocatedGiB+r.AllocatorOverheadGiB)) > 0.002 {
		t.Errorf("reserved %v != allocated %v + allocator %v", r.PeakReservedGiB, r.PeakAllocatedGiB, r.AllocatorOverheadGiB)
	}
	if math.Abs(r.DeviceTotalGiB-(r.PeakReservedGiB+CUDAContextGiB)) > 0.002 {
		t.Errorf("device %v != reserved %v + context %v", r.DeviceTotalGiB, r.PeakReservedGiB, CUDAContextGiB)
	}
}

// Every row of the CONTRACT's framework table names a framework the parser accepts.
func TestFrameworkDefaultsTable(t *testing.T) {
	for _, d := range FrameworkDefaults {
		if _, err := parseEnum("framework", d.Framework, Frameworks); err != nil || d.Default == "" || d.Source == "" {
			t.Errorf("row %+v: %v", d, err)
		}
	}
}

// Without gradient accumulation (hf) the peak is the larger of the start of backward (no
// gradients) and the optimizer step (gradients + foreach temporaries, no activations);
// with it (litgpt) gradients add to the activations. Hand-computed for TinyLlama full-ft
// fp32 weights under AMP, b4 s512: step = 4 (weights) + 4 (grads) + 8 (m, v) + 4 (sqrt v)
// bytes/param = 20 x 1.1B.
func TestGradientAccumulationPeak(t *testing.T) {
	m := catModel(t, "tinyllama-1.1b")
	P := float64(m.ParamCount)
	hf := estimateJob(t, "tinyllama-1.1b", map[string]string{"task": "full-ft", "batch": "4", "seq-len": "512"})
	if want := 20 * P / GiB; math.Abs(hf.PeakAllocatedGiB-want) > 0.01 || hf.Breakdown.Activations != 0 {
		t.Errorf("hf full-ft peak %v GiB (activations %v); want the step's %v", hf.PeakAllocatedGiB, hf.Breakdown.Activations, want)
	}
	lit := estimateJob(t, "tinyllama-1.1b", map[string]string{"task": "full-ft", "batch": "4", "seq-len": "512", "framework": "litgpt"})
	b := lit.Breakdown
	if want := 2 * P / GiB; math.Abs(b.Gradients-want) > 0.002 || b.Activations == 0 {
		t.Errorf("litgpt gradients %v (activations %v); want bf16 gradients %v beside the activations", b.Gradients, b.Activations, want)
	}
}

// TestGradAccum: --grad-accum N resolves to N (the framework's count when not given) and,
// above 1, keeps the gradients beside the next micro-batch's activations, so the peak is
// at least the no-accumulation peak; it applies to training only.
func TestGradAccum(t *testing.T) {
	m := catModel(t, "llama-3.2-1b")
	for _, tc := range []struct {
		name string
		job  Job
		want int
	}{
		{"hf default", Job{Task: TaskFullFT, Batch: 4}, 1},
		{"hf asked", Job{Task: TaskFullFT, Batch: 4, GradAccum: 8}, 8},
		{"litgpt default", Job{Task: TaskLoRA, Batch: 4, Framework: FrameworkLitGPT}, 4},
		{"torchtune lora", Job{Task: TaskLoRA, Framework: FrameworkTorchtune}, 8},
		{"torchtune asked", Job{Task: TaskLoRA, Framework: FrameworkTorchtune, GradAccum: 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Estimate(m, tc.job)
			if err != nil {
				t.Fatal(err)
			}
			if r.Job.GradAccum != tc.want {
				t.Errorf("grad_accum %d, want %d", r.Job.GradAccum, tc.want)
			}
		})
	}
	one, err := Estimate(m, Job{Task: TaskFullFT, Batch: 4, SeqLen: 512, GradAccum: 1})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := Estimate(m, Job{Task: TaskFullFT, Batch: 4, SeqLen: 512, GradAccum: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !(acc.PeakAllocatedGiB > one.PeakAllocatedGiB) || acc.Breakdown.Gradients == 0 || acc.Breakdown.Activations == 0 {
		t.Errorf("accumulation peak %.2f (grads %.2f, act %.2f) not above one micro-batch's %.2f",
			acc.PeakAllocatedGiB, acc.Breakdown.Gradients, acc.Breakdown.Activations, one.PeakAllocatedGiB)
	}
	if _, err := Estimate(m, Job{GradAccum: 2}); err == nil || !strings.Contains(err.Error(), "--grad-accum") {
		t.Errorf("inference with --grad-accum: %v", err)
	}
}

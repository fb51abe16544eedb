package jobtime

import (
	"math"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
)

// Fixed per-step costs of eager PyTorch training (issue 23): what a micro-batch costs
// whatever its size. A roofline step (FLOPs over the tensor peak, bytes over the
// bandwidth) treats a layer as one fused pass; eager PyTorch runs it as dozens of
// kernels, and three floors show at short steps:
//
//   - every kernel takes at least its launch-to-completion time on the GPU, so a layer's
//     GEMMs take the longer of their math and their count's floor, and its elementwise,
//     norm and attention kernels the longer of their bytes and theirs (kernelFloors);
//   - Python dispatches the forward's modules one by one (hfLayerDispatchSec per layer),
//     and Hugging Face's Trainer synchronises on every micro-batch (trainer.py
//     _inner_training_loop: logging_nan_inf_filter, default True, tests
//     torch.isnan(tr_loss_step) in Python), so the queue is empty when each forward
//     starts and the GPU idles through a forward that Python dispatches more slowly
//     than the GPU runs it; the backward is launched by autograd's C++ engine and keeps
//     ahead (dispatchIdle);
//   - collectives have a latency besides their bytes: FSDP gathers and reduce-scatters
//     once per layer, DDP all-reduces once per bucket (collectiveLatency).
//
// The for-loop optimizer step adds a Python-dispatched op per state update per
// parameter tensor (OptLaunches); foreach and fused launch a few kernels per list, whose
// bytes OptStepBytes already times.

const (
	// eagerKernelSec is one small kernel launched on a stream behind the previous one
	// (no synchronisation between them): 3.8 µs per kernel against the 3.4 µs of a CUDA
	// graph replay (graphKernelSec, serve.go) and 9.6 µs with a synchronisation after
	// each, for a kernel that runs 2.9 µs (A. Gray, "Getting Started with CUDA Graphs",
	// NVIDIA Technical Blog, 2019; the 3.8 µs figure is as recalled: the library search
	// could not re-read the post).
	eagerKernelSec = 3.8e-6

	// layerGEMMsDense is a decoder layer's forward GEMMs when the model's modules do not
	// say (transformers modeling_llama.py LlamaAttention and LlamaMLP: q, k, v, o, gate,
	// up, down); TimeModel.LayerGEMMs holds the model's own count.
	layerGEMMsDense = 7.0
	// layerSmallFwd is the other kernels of one transformers decoder layer's forward
	// (modeling_llama.py, transformers 4.4x–5): LlamaRMSNorm launches 8 (to fp32, pow,
	// mean, add eps, rsqrt, mul, to the input dtype, the weight's mul) and runs twice;
	// apply_rotary_pos_emb 5 for q and 5 for k (q·cos, rotate_half's neg and cat, ·sin,
	// the add); scaled_dot_product_attention 1; the transpose().contiguous() copy before
	// o_proj 1; the MLP's SiLU and gate·up product 2; the two residual adds 2: 32.
	// GPT-2 and BERT layers (one fused LayerNorm kernel, no rotary, eager attention's
	// score kernels) count differently; the Llama layer is the one timed.
	layerSmallFwd = 32.0
	// smallBwdPerFwd: autograd runs about two kernels per forward elementwise op: a
	// product of two tensors that both need gradients yields two products, a broadcast
	// weight's gradient a product and a sum, a tensor used twice (the residual stream,
	// the norm's input) an accumulating add (torch/csrc/autograd derivatives.yaml).
	smallBwdPerFwd = 2.0

	// forLoopAdamKernels: torch.optim.AdamW's for-loop step (foreach=False;
	// _single_tensor_adam in PyTorch 2.x torch/optim/adam.py, which AdamW shares since
	// 2.5) runs per parameter tensor: param.mul_ (decoupled weight decay),
	// exp_avg.lerp_, exp_avg_sq.mul_ and addcmul_, sqrt, div_, add_(eps) and
	// param.addcdiv_: 8 ops, each dispatched from Python.
	forLoopAdamKernels = 8.0
)

// eagerOpSec is one op dispatched from Python: gpt-fast's eager forward
// (hfLayerDispatchSec per layer) over the ops of a layer's forward (its GEMMs and
// layerSmallFwd), 31 µs. It is the per-op share of a measured layer, module hooks
// included, so for the optimizer's bare ops it errs slow.
const eagerOpSec = hfLayerDispatchSec / (layerGEMMsDense + layerSmallFwd)

// kernelFloors returns the launch floors of one micro-batch's GEMMs and of its other
// kernels on one GPU: every layer's forward, its backward (two GEMMs per weight that
// trains, one per frozen weight; smallBwdPerFwd elementwise kernels per forward one),
// the recomputed forward under checkpointing, and a 4-bit layer's dequantize_4bit
// before each of its GEMMs' passes (bitsandbytes MatMul4Bit: forward and backward).
func (m *TimeModel) kernelFloors() (gemms, small float64) {
	G := m.LayerGEMMs
	if G <= 0 {
		G = layerGEMMsDense
	}
	bwdG := 2.0
	if m.Task != fit.TaskFullFT {
		bwdG = 1 // frozen weights: the input's gradient only (the adapters' GEMMs are not counted)
	}
	ck := 0.0
	if m.GradCkpt {
		ck = 1
	}
	gk := G * (1 + bwdG + ck)
	sk := layerSmallFwd * (1 + smallBwdPerFwd + ck)
	if m.QuantParams > 0 {
		sk += G * (2 + ck) // one dequantize_4bit per 4-bit linear per pass
	}
	return m.Layers * gk * eagerKernelSec, m.Layers * sk * eagerKernelSec
}

// dispatchIdle is how long the GPU waits for Python in a micro-batch whose forward
// takes fwd seconds on the GPU: the forward's dispatch (hfLayerDispatchSec per layer)
// less the forward itself, or 0.
func (m *TimeModel) dispatchIdle(fwd float64) float64 {
	return math.Max(0, m.Layers*hfLayerDispatchSec-fwd)
}

// collectiveLatency is the fixed cost of one small collective on g: nccl-tests'
// small-message all_reduce on an 8-GPU NVLink system, over PCIe otherwise; a network
// between nodes is at least PCIe's (no separate figure is cited, so this errs fast).
func collectiveLatency(g *TimeGPU) float64 {
	if g.LinkGBs > 0 && g.Count <= gpusPerNode {
		return allReduceLatencyNVLink
	}
	return allReduceLatencyPCIe
}

// ddpBuckets is the all-reduces DDP issues per optimizer step: one per bucket of
// ddpBucketBytes gradients (at least one).
func ddpBuckets(gradBytes float64) float64 {
	return math.Max(1, math.Ceil(gradBytes/ddpBucketBytes))
}

// launchCounts reads a model's forward GEMMs per layer (its non-routed linear modules;
// an MoE layer's experts run as the tokens reach them, counted as one MLP) and, for a
// for-loop optimizer step, the ops it dispatches: forLoopAdamKernels per trainable
// tensor (full fine-tune: each linear module's weight, two norms per
// layer, the embedding, the final norm and a separate head; LoRA: A and B per adapted
// module, read as the trainable parameters over one adapter pair's size).
func launchCounts(mod *model.Model, r *fit.Result) (gemms, launches float64) {
	L := float64(mod.Dec.Layers)
	if mod.Enc != nil {
		L += float64(mod.Enc.Layers)
	}
	var linear, routed float64
	for _, md := range mod.Modules {
		if md.Routed {
			routed = math.Max(routed, 1)
			continue
		}
		linear += float64(md.Count)
	}
	if L > 0 && linear > 0 {
		gemms = linear/L + 2*routed // routed experts: an up and a down GEMM per layer
	}
	j := &r.Job // read only: the resolved job is not copied
	if !j.IsTraining() || j.OptimizerStep != "for-loop" || j.Offload == "optimizer" || j.Offload == "optimizer+params" {
		return gemms, 0
	}
	tensors := linear + 2*L + 2
	if mod.HeadParams > 0 {
		tensors++
	}
	if j.Task != fit.TaskFullFT {
		tensors = 0
		if rank := float64(j.LoRARank); rank > 0 && mod.Hidden > 0 {
			// One adapter pair on a d×d weight holds 2·r·d parameters.
			tensors = 2 * float64(r.TrainableParams) / (2 * rank * float64(mod.Hidden))
		}
	}
	return gemms, tensors * forLoopAdamKernels
}

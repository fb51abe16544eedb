package jobtime

import (
	"math"

	"github.com/pickergpu/picker/fit"
)

// The optimizer step and the fixed costs of a training step. A step is one micro-batch
// per GPU; every GradAccum micro-batches (--grad-accum, default the framework's: hf 1)
// pay one optimizer step, one gradient reduction and its exposed collectives.
//
// The step streams what the optimizer keeps through HBM: it reads the optimizer states,
// the fp32 master weights (mixed precision) and the gradients, and writes the states, the
// masters and the 16-bit copy the next forward uses. Elementwise updates are
// memory-bound (roofline, Williams et al. 2009), so it takes those bytes over the
// sustained bandwidth (bwEfficiency). Example: Llama-3.1-8B, AdamW, bf16-mixed, one H100,
// 2048 tokens per micro-batch: 28 B per parameter (m and v 8 B read and written, fp32
// masters 4 B read and written, fp32 gradients 4 B read) = 225 GB = 84 ms, +31 % on the
// 266 ms of forward and backward; a LoRA step moves its adapters' few MB (TestOptimizerStep).
//
// torch.optim's three implementations move the same bytes; they differ in kernel launches
// (for-loop: several per parameter tensor; foreach: several per list; fused: one). The
// for-loop step also pays forLoopAdamKernels Python-dispatched ops per trainable tensor
// at eagerOpSec each (stepfixed.go); foreach's and fused's few launches per list are
// not timed beyond their bytes. foreach also materialises intermediates (sqrt(v), the update) that a fused kernel keeps
// in registers, more traffic than one pass; no published figure separates it, so both are
// one pass, which errs fast.

const (
	// cpuAdamSecPerParam: DeepSpeedCPUAdam, the optimizer ZeRO-Offload runs on the host
	// (Ren et al. 2021, arXiv:2101.06840 section 5.1, Table 3: 2.57 s per step for 10B
	// parameters on the DGX-2 host's CPUs; the DeepSpeed ZeRO-Offload tutorial: 5x-7x
	// faster than PyTorch's CPU Adam). Each GPU's process updates its own partition, so the
	// time divides by the data-parallel degree. The table's digits are as recalled from the
	// paper: the library search could not reach its text to re-read them.
	cpuAdamSecPerParam = 2.57 / 10e9
	// ddpBucketBytes: DistributedDataParallel's bucket_cap_mb default, 25 MiB (PyTorch DDP
	// docs). DDP all-reduces a bucket as soon as its gradients are ready, overlapping the
	// backward (Li et al. 2020, arXiv:2006.15704 section 3.2.3), except the last one: its
	// gradients, the first layers' (the embedding among them), are ready only when the
	// backward ends, so its all-reduce adds to the step.
	ddpBucketBytes = 25 << 20
)

// optimizerStepBytes is what one optimizer step reads and writes in one GPU's memory:
// the states as the memory model holds them (fit.Result.Breakdown.Optimizer: m and v,
// fp32 masters under ZeRO/FSDP mixed precision, 8-bit for adamw-8bit, sharded, none when
// offloaded), read and written; the gradients read; and the weights the step updates. The
// gradients and weights are rebuilt from the trainable parameters because the breakdown's
// figures are peak-time ones (Gradients is 0 when the backward's start is the peak, one
// tensor under optimizer_in_bwd) while every gradient still passes through the step.
func optimizerStepBytes(r *fit.Result) float64 {
	j := &r.Job // read only: the resolved job is not copied
	if !j.IsTraining() || j.Offload == "optimizer" || j.Offload == "optimizer+params" {
		return 0 // offloaded: the host runs the step (cpuAdamSecPerParam)
	}
	T := float64(r.TrainableParams)
	shard := stateShards(j) // ZeRO and FSDP: each GPU steps its own partition
	full := j.Task == fit.TaskFullFT
	b := 2.0 // the compute dtype
	if j.Precision == "fp32" {
		b = 4
	}
	// Gradients as the memory model stores them (fit trainGrads): fp32 under PyTorch AMP
	// (mixed without ZeRO/FSDP) and for LoRA adapters trained in fp32 (mixed precision or
	// PEFT's autocast_adapter_dtype under the hf framework), else the compute dtype;
	// ZeRO-2/3 and FSDP shard them.
	gradB := b
	amp := j.Precision.Mixed() && !j.Shard.Sharded()
	adapterFP32 := adapterFP32(j)
	if (full && amp) || adapterFP32 {
		gradB = 4
	}
	gradShard := 1.0
	if j.Shard == "zero2" || j.Shard.ShardsParams() {
		gradShard = shard
	}
	bytes := 2*r.Breakdown.Optimizer*fit.GiB + T*gradB/gradShard
	switch {
	case full && j.Precision.Mixed() && j.Shard.Sharded():
		// The fp32 masters are in the states; the step writes the 16-bit copy.
		bytes += T * b / shard
	case full && amp:
		// AMP: the fp32 weights are the masters, read and written.
		bytes += 2 * T * 4 / shard
	default:
		// Weights (or fp32 adapters) updated in place.
		wB := b
		if adapterFP32 {
			wB = 4
		}
		bytes += 2 * T * wB / shard
	}
	return bytes
}

// lastBucketBytes is the gradient bytes DDP all-reduces after the backward: one bucket,
// or the embedding's gradient when that is larger (a tensor over the cap gets a bucket
// of its own), at most all the gradients.
func lastBucketBytes(embedParams, trainable, gradBytes float64) float64 {
	return math.Min(math.Max(ddpBucketBytes, embedParams*gradBytes), trainable*gradBytes)
}

// exposedComm is the communication a data-parallel step cannot overlap: DDP's last
// bucket, and for ZeRO-3/FSDP the first layer's all-gather (the forward has nothing to
// prefetch behind) and the last one's reduce-scatter (FSDP's prefetching overlaps the
// rest: Zhao et al. 2023, arXiv:2304.11277 section 3.3.2).
func (m *TimeModel) exposedComm(n, link float64) float64 {
	if n <= 1 {
		return 0
	}
	switch m.Shard {
	case "tp":
		return 0 // timed with the step
	case "zero3", "fsdp", "hsdp":
		layer := (m.Params - m.QuantParams) / math.Max(m.Layers, 1) * m.ComputeBytes
		return (n - 1) / n * 2 * layer / link
	}
	return 2 * (n - 1) / n * m.LastBucketBytes / link
}

// optimizerSeconds is the optimizer step: the GPU's HBM stream, or with the optimizer
// offloaded the host's CPU Adam over this GPU's partition. The PCIe traffic of offload
// (gradients out, weights back) is timed in train, not here.
func (m *TimeModel) optimizerSeconds(bw float64) float64 {
	return m.OptStepBytes/bw + m.OptCPUParams*cpuAdamSecPerParam + m.OptLaunches*eagerOpSec
}

// optimizerCPUParams is the parameters each GPU's process updates on the host.
func optimizerCPUParams(r *fit.Result) float64 {
	j := &r.Job // read only: the resolved job is not copied
	if j.Offload != "optimizer" && j.Offload != "optimizer+params" || !j.IsTraining() {
		return 0
	}
	n := 1.0
	if j.Shard.Sharded() {
		n = float64(max(j.GPUs, 1) * max(j.Nodes, 1))
	}
	return float64(r.TrainableParams) / n
}

package fit

import (
	"fmt"
	"math"

	"github.com/pickergpu/picker/model"
)

// The training stack beyond the tensors (issue 23): what a sharded or accumulating job
// holds besides weights, gradients, optimizer states and activations, and which stack's
// defaults say so. Every size below is a library default at a named version; none is
// fitted to a calibration row.
//
//   - DeepSpeed ZeRO's gradient reduce bucket (reduce_bucket_size) and ZeRO-3's
//     prefetch bucket (stage3_prefetch_bucket_size);
//   - FSDP's unsharded gradient of the unit being reduced (FSDP1 and FSDP2 alike), and
//     under gradient accumulation with no_sync the whole model's unsharded gradients;
//   - NCCL's per-channel FIFO buffers, which live outside PyTorch's caching allocator
//     (device memory, not torch.cuda.max_memory_allocated);
//   - DeepSpeed's bf16/fp16 modes, which keep fp32 masters in the optimizer;
//   - hybrid sharding (--shard hsdp): sharded within a node, replicated across nodes;
//   - an encoder–decoder job's target length (--target-tokens);
//   - the modules transformers keeps in fp32 when it quantizes (_keep_in_fp32_modules).

// DeepSpeed ZeRO defaults (deepspeed/runtime/zero/config.py, DeepSpeedZeroConfig, at
// commit 03dc2b92 of microsoft/DeepSpeed; unchanged since DeepSpeed 0.6).
const (
	// reduce_bucket_size = 5e8 elements. ZeRO-1/2 allocate the bucket (ipg_buffer) at
	// every backward() with contiguous_gradients=True (the default), in the 16-bit
	// dtype, full size whatever the model (stage_1_and_2.py backward: torch.empty(
	// int(self.reduce_bucket_size), dtype=self.dtype)), a second one when overlap_comm
	// is on (default on only for stage 3: overlap_comm_valid). ZeRO-3 keeps one flat
	// ipg bucket of the same size. The Hugging Face integration's "auto" value is
	// hidden_size², far smaller: a config written for Trainer may differ.
	dsReduceBucketElems = 5e8
	// stage3_prefetch_bucket_size = 5e7 elements fetched ahead of use (ZeRO-3).
	dsPrefetchBucketElems = 5e7
)

// NCCL's per-connection FIFO buffers (NVIDIA/nccl src/include/device.h, NCCL 2.x): one set
// per channel and receiving peer, one buffer per protocol. A ring has a single receiving
// peer per channel whatever the GPU count ("Ring uses a limited amount of memory as it only
// has 2 connections regardless of the scale", memory "linearly tied to the number of
// channels": S. Jeaugey, NVIDIA/nccl#864 and #986), and NVLink systems open the maximum
// number of channels (32 logged on 8×H100, NVIDIA/nccl#1685). The buffers are cudaMalloc'd
// by NCCL, outside PyTorch's caching allocator: they count in device memory only.
const (
	ncclSimpleBytes = 4 << 20           // NCCL_BUFFSIZE default, 4 MiB (NCCL env docs)
	ncclLL128Bytes  = 120 * 640 * 8 * 8 // NCCL_LL128_ELEMS_PER_THREAD × NCCL_LL128_MAX_NTHREADS × NCCL_STEPS × 8 B
	ncclLLBytes     = 8 * 512 * 8 * 16  // NCCL_LL_LINES_PER_THREAD × NCCL_LL_MAX_NTHREADS × NCCL_STEPS × 16 B lines
	ncclMaxChannels = 32                // MAXCHANNELS (device.h, NCCL ≤ 2.18)
)

// ncclCommBytes is one communicator's ring buffers on one GPU.
const ncclCommBytes = float64(ncclMaxChannels * (ncclSimpleBytes + ncclLL128Bytes + ncclLLBytes))

// ShardsParams reports whether parameters are sharded (ZeRO-3, FSDP, HSDP), so that layers
// are gathered for compute.
func (s Shard) ShardsParams() bool { return s == "zero3" || s == "fsdp" || s == "hsdp" }

// FSDP reports PyTorch FSDP (FULL_SHARD, or HYBRID_SHARD for hsdp), as opposed to DeepSpeed.
func (s Shard) FSDP() bool { return s == "fsdp" || s == "hsdp" }

// DeepSpeed reports a DeepSpeed ZeRO stage.
func (s Shard) DeepSpeed() bool { return s == "zero1" || s == "zero2" || s == "zero3" }

// shardDegree is the GPUs states are divided over: every GPU of every node, except that
// hybrid sharding shards within a node and replicates across nodes (FSDP
// ShardingStrategy.HYBRID_SHARD; FSDP2 fully_shard over a 2-D device mesh).
func (r *resolved) shardDegree() int {
	if r.Shard == "hsdp" {
		return r.GPUs
	}
	return r.world()
}

// resolveStack checks the stack-specific knobs and records the stack whose defaults the
// estimate applies (a resolve step, after the parallelism and the length are resolved).
func resolveStack(m *model.Model, r *resolved) error {
	training := r.IsTraining()
	switch {
	case r.Shard == "hsdp" && !training:
		return invalid("shard", "--shard hsdp with --task %s: hybrid sharding shards training states within a node; inference uses --shard tp", r.Task)
	case r.Shard == "hsdp" && r.Offload.Enabled():
		return invalid("offload", "--shard hsdp with --offload %s: offload is modelled with zero1-3 or fsdp", r.Offload)
	case r.TargetTokens != 0 && m.Kind != model.KindSeq2Seq:
		return invalid("target-tokens", "--target-tokens %d: %s is not an encoder–decoder model; the decoder's length is --seq-len", r.TargetTokens, m.Name)
	}
	if m.Kind == model.KindSeq2Seq && r.TargetTokens == 0 {
		r.TargetTokens = r.SeqLen
	}
	if r.Shard == "hsdp" && r.Nodes <= 1 {
		r.addWarning("--shard hsdp on one node is FULL_SHARD over its " + itoa(r.GPUs) + " GPUs; hybrid sharding replicates across --nodes")
	}
	if !training {
		return nil
	}
	// DeepSpeed's bf16 and fp16 modes train a 16-bit model with fp32 master weights and
	// fp32 optimizer states (BF16_Optimizer and the ZeRO optimizers keep
	// single_partition_of_fp32_groups; DeepSpeed config docs, "bf16"/"fp16": mixed
	// precision training): --precision bf16 with --shard zero1-3 is the ZeRO paper's
	// 2+2+12 bytes, not pure bf16.
	if r.Shard.DeepSpeed() && !r.mixed && r.b == 2 && (r.Task == TaskFullFT || !r.adapterFP32) {
		r.dsMasters = true
		r.addNote("DeepSpeed " + string(r.Precision) + ": the model and its gradients in 16 bits, fp32 master weights and optimizer states on the optimizer's partition (DeepSpeed bf16/fp16 modes always keep fp32 masters)")
	}
	// FSDP with gradient accumulation: Trainer/Accelerate (GradientAccumulationPlugin
	// sync_each_batch=False, the default) and LitGPT (fabric.no_backward_sync) run the
	// non-final micro-batches under no_sync, which "will accumulate the full model
	// gradients (instead of gradient shards) until the eventual sync"
	// (torch.distributed.fsdp.FullyShardedDataParallel.no_sync docs, FSDP1; FSDP2's
	// set_requires_gradient_sync(False) likewise keeps unsharded gradients). torchtune's
	// distributed recipes reduce-scatter every micro-batch.
	// LitGPT shards with Lightning's FSDPStrategy(auto_wrap_policy={Block},
	// use_orig_params=True): each Block is one FSDP1 FlatParameter holding the frozen
	// weights and the LoRA adapters together, and "FSDP supports mixing frozen and
	// non-frozen, but ... the gradient memory usage will be higher than expected (namely,
	// equivalent to not freezing those parameters)" (torch.distributed.fsdp
	// FullyShardedDataParallel docs). PEFT's fsdp_auto_wrap_policy (hf) wraps the adapters
	// in units of their own, and torchtune's FSDP2 shards per parameter: neither pays it.
	if r.Shard.FSDP() && r.Framework == FrameworkLitGPT && r.Task != TaskFullFT {
		r.flatFrozenGrads = true
		r.addNote("litgpt FSDP LoRA: every Block is one flat parameter of frozen weights and adapters (auto_wrap_policy={Block}, use_orig_params=True), so FSDP holds gradients for the frozen block weights too, as if they were trained")
	}
	if r.Shard.FSDP() && r.gradAccum && r.GradAccum > 1 && r.Framework != FrameworkTorchtune {
		r.unshardedGrads = true
		r.addNote("FSDP with " + itoa(r.GradAccum) + "-step accumulation under no_sync (Accelerate sync_each_batch=False / Fabric no_backward_sync): every GPU holds the full unsharded gradients until the last micro-batch reduces them; sync_each_batch=True keeps them sharded at the cost of a reduce-scatter per micro-batch")
	}
	return nil
}

// commBuffers is what the sharding strategy allocates for its collectives beside the
// tensors (bytes per GPU, in the caching allocator), and the NCCL buffers (outside it).
func (t *trainMem) commBuffers(m *model.Model, r *resolved) {
	if r.world() <= 1 {
		return
	}
	comms := 1.0 // the data-parallel process group's communicator
	if r.Shard == "hsdp" && r.Nodes > 1 {
		comms = 2 // the shard group and the replicate group (a 2-D device mesh)
	}
	t.nccl = comms * ncclCommBytes
	gradB := r.b // DeepSpeed reduces in the 16-bit dtype; fp32 training in fp32
	switch {
	case r.Shard.DeepSpeed():
		// One bucket: ZeRO-1/2 keep overlap_comm off by default, ZeRO-3 keeps one flat
		// bucket. ZeRO-Offload still reduces on the GPU, bucket by bucket, before copying
		// to pinned host memory.
		t.comm = dsReduceBucketElems * gradB
		what := "the reduce bucket (reduce_bucket_size 5e8 elements)"
		if r.Shard == "zero3" {
			t.comm += dsPrefetchBucketElems * gatherBytes(r)
			what = "the reduce bucket (reduce_bucket_size 5e8) and the prefetch bucket (stage3_prefetch_bucket_size 5e7 elements)"
		}
		r.addNote("workspace holds " + fixed(t.comm/GiB, 2) + " GiB of DeepSpeed's collective buffers: " + what)
	case r.Shard.FSDP():
		// The unit being reduced: its unsharded gradient (reduce dtype = param_dtype,
		// MixedPrecision docs) is the reduce-scatter's input while the next unit's
		// backward runs (BACKWARD_PRE, the FSDP1 default; FSDP2 prefetches the same way).
		perLayer := float64(r.trainable) / float64(max(m.TotalLayers(), 1))
		if r.Task == TaskFullFT || r.flatFrozenGrads {
			perLayer = math.Max(perLayer, float64(m.Dec.LayerParams))
		}
		if !r.unshardedGrads {
			t.comm = perLayer * gradB
			r.addNote("workspace holds " + fixed(t.comm/GiB, 2) + " GiB of FSDP's reduce-scatter input: one layer's unsharded gradient")
		}
	}
	// DDP's gradient buckets are counted with the workspace (activations).
}

// rootUnitBytes is what FSDP keeps gathered of its root unit, the parameters outside the
// wrapped layers (embedding, final norm, LM head): fully_shard's default
// reshard_after_forward=None means "False for the root module" (PyTorch fully_shard docs;
// PEFT's FSDP guide, caveat 6, relies on it), so they stay unsharded from the forward
// through the backward that starts with the head (FSDP1 likewise, for its root
// instance). DeepSpeed ZeRO-3 gathers them like any module.
func rootUnitBytes(m *model.Model, r *resolved) float64 {
	if !r.Shard.FSDP() {
		return 0
	}
	root := float64(m.EmbedParams) + frameworkHead(m, r) // the norms are negligible
	return root * (1 - 1/float64(r.shardDegree())) * gatherBytes(r)
}

// gatherBytes is the dtype of gathered (all-gathered) parameters: the compute dtype
// under mixed precision, else as stored.
func gatherBytes(r *resolved) float64 {
	if r.mixed {
		return r.b
	}
	return r.store
}

// keepFP32Params is the linear weights transformers keeps out of quantization and in fp32
// (PreTrainedModel._keep_in_fp32_modules): T5's, mT5's and UMT5's feed-forward output
// projection "wo" (modeling_t5.py: _keep_in_fp32_modules = ["wo"]), which the
// bitsandbytes quantizers add to modules_to_not_convert (quantizer_bnb_4bit/8bit
// _process_model_before_weight_loading).
func keepFP32Params(m *model.Model, r *resolved) float64 {
	if r.quantB == 0 || m.Ckpt != nil {
		return 0
	}
	switch m.Architecture {
	case "t5", "mt5", "umt5":
	default:
		return 0
	}
	var n float64
	for _, mod := range m.Modules {
		if mod.Name == "wo" {
			n += float64(mod.In * mod.Out * mod.Count)
		}
	}
	return n
}

// appendStackNotes appends the notes that say which stack's defaults the estimate
// applies and where older versions differ markedly (built without fmt: Estimate's hot
// path, format.go).
func appendStackNotes(out []string, m *model.Model, r *resolved) []string {
	if !r.IsTraining() {
		return out
	}
	out = append(out,
		"stack: PyTorch >= 2.1 (foreach AdamW by default on CUDA; the pre-2.0 for-loop step held one parameter's temporaries), transformers >= 4.46 (ForCausalLMLoss upcasts the logits to fp32), PEFT >= 0.12 (adapters in fp32)",
		// The time model's stack (jobtime/stepfixed.go, jobtime/dequant.go).
		"time: eager PyTorch as transformers' Trainer runs it (a host sync every micro-batch: logging_nan_inf_filter), so each forward waits on Python's dispatch where that is slower than its kernels, and every kernel takes at least its ~3.8 µs launch; torch.compile or CUDA graphs run faster at short steps")
	if r.quantB > 0 && (r.Quant == "nf4" || r.Quant == "fp4") {
		out = append(out, "bitsandbytes >= 0.43.2: a 4-bit layer saves its input for backward only while its gradient is pending (bitsandbytes < 0.43.2 kept every 4-bit layer's input past backward, far more memory); each 4-bit matmul dequantizes its weight to 16 bits (the largest copy, "+fixed(dequantTransient(m, r)/GiB, 2)+" GiB, in workspace), timed at the branching dequantize kernel's speed (bitsandbytes before PR #1746, Sep 2025; the lookup-table kernel is 1.36-2.07x faster)")
	}
	if keep := keepFP32Params(m, r); keep > 0 {
		out = append(out, m.Architecture+" keeps its feed-forward output projection wo in fp32 and unquantized (_keep_in_fp32_modules = [\"wo\"]): "+fixed(keep*4/GiB, 2)+" GiB of linear weights at 4 bytes")
	}
	switch {
	case r.Shard.DeepSpeed():
		zero3 := ""
		if r.Shard == "zero3" {
			zero3 = ", stage3_prefetch_bucket_size 5e7, stage3_max_live_parameters 1e9"
		}
		out = append(out, "DeepSpeed ZeRO-"+string(r.Shard[len(r.Shard)-1:])+" defaults (DeepSpeed >= 0.6, deepspeed/runtime/zero/config.py): reduce_bucket_size 5e8 elements ("+fixed(dsReduceBucketElems*r.b/GiB, 2)+" GiB in 16 bits)"+zero3+"; a Trainer config with \"auto\" sets hidden_size² instead")
	case r.Shard == "fsdp":
		out = append(out, "PyTorch FSDP (FSDP1 FullyShardedDataParallel or FSDP2 fully_shard, torch >= 2.4): FULL_SHARD over "+itoa(r.shardDegree())+" GPUs, BACKWARD_PRE prefetch (the current and the next layer gathered, the current layer's unsharded gradient being reduce-scattered), limit_all_gathers=True; the root unit (embedding, LM head: "+fixed(rootUnitBytes(m, r)/GiB, 2)+" GiB) stays gathered from the forward through the backward")
	case r.Shard == "hsdp":
		out = append(out, "PyTorch FSDP HYBRID_SHARD (FSDP2: fully_shard on a 2-D mesh): parameters, gradients and optimizer states sharded over the "+itoa(r.GPUs)+" GPUs of a node, replicated across "+itoa(max(r.Nodes, 1))+" nodes (gradients all-reduced between replicas)")
	}
	if r.world() > 1 {
		comms := 1
		if r.Shard == "hsdp" && r.Nodes > 1 {
			comms = 2
		}
		out = append(out, ncclNotes[comms])
	}
	if m.Kind == model.KindSeq2Seq {
		out = append(out, "encoder–decoder: the encoder runs over --seq-len "+itoa(r.SeqLen)+" tokens, the decoder and the LM head over --target-tokens "+itoa(r.TargetTokens)+" (cross-attention keys and values over the encoder's tokens)")
	}
	if r.Task != TaskFullFT {
		out = append(out, "LoRA bookkeeping: a frozen layer saves its input once, shared by every adapter reading it; each adapted module applies its own dropout, so a fused projection (qkv_proj, c_attn) has one")
	}
	return out
}

// ncclNotes[n] is the NCCL buffers' assumption for n communicators per GPU (one, or two
// under hybrid sharding across nodes): constants only, formatted once.
var ncclNotes = [3]string{1: ncclNote(1), 2: ncclNote(2)}

func ncclNote(comms int) string {
	return fmt.Sprintf("NCCL ring buffers: %d communicator(s) × %d channels × (4 MiB simple + 4.7 MiB LL128 + 0.5 MiB LL) = %.2f GiB per GPU outside PyTorch's allocator (NCCL 2.x defaults; NCCL_BUFFSIZE and NCCL_MAX_NCHANNELS change it; NVLS on NVSwitch systems adds more)",
		comms, ncclMaxChannels, float64(comms)*ncclCommBytes/GiB)
}

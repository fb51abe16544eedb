package fit

import (
	"math"
	"slices"

	"github.com/pickergpu/picker/model"
)

// trainMem is a training job's memory per GPU in bytes, filled step by step by
// estimateTraining.
type trainMem struct {
	weights, adapters, autocastCache, gathered float64
	grads, opt, stepTemp                       float64
	act, ws, cpu                               float64
	// comm: the sharding strategy's collective buffers (in workspace); nccl: NCCL's
	// buffers outside the allocator (stack.go).
	comm, nccl float64
}

// estimateTraining sums a training job's memory: weights, gradients and optimizer states,
// then sharding and offload move parts of them, then activations and workspace.
func estimateTraining(m *model.Model, r *resolved) (Breakdown, float64) {
	var t trainMem
	t.trainWeights(m, r)
	t.trainGrads(m, r)
	t.optimizerStates(m, r)
	t.shard(m, r)
	t.offload(m, r)
	t.commBuffers(m, r) // stack.go
	t.activations(m, r)
	t.ws += t.comm
	r.allocChurn, r.ncclBytes = t.gathered, t.nccl
	bd := Breakdown{Weights: t.weights + t.adapters + t.gathered + r.fp8WeightCache(m), Gradients: t.grads, Optimizer: t.opt,
		Activations: t.act, Workspace: t.ws}
	if !r.gradAccum {
		bd = t.peakWithoutAccumulation(bd) // framework.go
	}
	return bd, t.cpu
}

// amp reports plain PyTorch AMP: mixed precision without ZeRO/FSDP, which keeps fp32
// weights and gradients.
func (r *resolved) amp() bool { return r.mixed && !r.Shard.Sharded() }

// trainWeights: the stored weights, autocast's half copies and the LoRA adapters.
func (t *trainMem) trainWeights(m *model.Model, r *resolved) {
	P, T := float64(m.ParamCount), float64(r.trainable)
	full := r.Task == TaskFullFT
	t.weights = weightBytes(m, r)
	if full && r.amp() {
		// fp32 model + autocast's cached half copies of trainable weights, which live until
		// the forward pass leaves the autocast region (torch.autocast caches casts of leaf
		// tensors that require grad; frozen weights are cast on the fly).
		t.autocastCache = P * 2
		t.weights = P*4 + t.autocastCache
	}
	if !full && r.amp() && r.store == 4 && r.quantB == 0 && !r.GradCkpt {
		// A frozen fp32 base under autocast: every linear layer's half-precision cast of its
		// weight is saved by autograd for the backward pass (the input's gradient needs the
		// weight), so all casts live from their forward to their backward: +2 bytes per
		// linear weight (lm_head included; embeddings are looked up, not cast). Gradient
		// checkpointing recomputes the casts layer by layer instead. Measured on an H200
		// (issue 8, calibration/measured_gpu.csv lora-m7-r8-mixed-s512: Mistral-7B LoRA r=8
		// bf16-mixed, fp32 base): 43.0 GiB allocated, 30.1 GiB estimated without this term,
		// 43.1 with it.
		t.autocastCache = float64(m.LinearParams+m.HeadParams) * 2
		t.weights += t.autocastCache
	}
	if !full {
		ab := r.b
		if r.mixed || r.adapterFP32 {
			ab = 4
		}
		t.adapters = T * ab
	}
}

// trainGrads: gradients of the trainable parameters.
//
// Gradients are counted alongside the activations. With gradient accumulation (the
// usual recipe: LitGPT, HF Trainer with gradient_accumulation_steps > 1) or DDP buckets
// they persist through the next micro-batch's forward, and the sum is what is measured
// (calibration lit-hub-27, TinyLlama full-ft bf16 b4 s512 with accumulation: 13.13 GiB,
// estimate 12.84). A single micro-batch per step with zero_grad(set_to_none=True) peaks
// lower, since the gradients replace the activations during the backward pass (H200,
// measured_gpu.csv ft-tl-bf16true-b4-s512, same job without accumulation: 10.76 GiB):
// the estimate keeps the accumulation case, which errs on the side of fitting.
func (t *trainMem) trainGrads(m *model.Model, r *resolved) {
	gradB := r.b
	if r.amp() || (r.Task != TaskFullFT && (r.mixed || r.adapterFP32)) {
		gradB = 4
	}
	t.grads = float64(r.trainable) * gradB
	if r.flatFrozenGrads {
		// FSDP1 flat parameters mixing frozen and trainable weights (stack.go): the frozen
		// block weights get gradients too, in the flat parameter's dtype.
		t.grads += float64(m.Dec.Layers*m.Dec.LayerParams) * r.b
	}
	if r.optimInBwd {
		// torchtune optimizer_in_bwd: a hook steps and frees each parameter's gradient as
		// soon as it is computed, so at most the largest tensor's gradient is live.
		t.grads = math.Min(t.grads, float64(m.LargestTensor)*gradB)
	}
}

// optimizerStates: the optimizer's states (+ fp32 master weights under ZeRO-style mixed
// precision) and the temporaries of its step.
func (t *trainMem) optimizerStates(m *model.Model, r *resolved) {
	T := float64(r.trainable)
	full := r.Task == TaskFullFT
	stateB := 4.0
	if !r.mixed && r.b == 2 && (full || !r.adapterFP32) && !r.dsMasters {
		stateB = 2 // true bf16/fp16 training keeps the states in that dtype
	}
	switch r.Optimizer {
	case "adamw":
		t.opt = 2 * stateB * T                   // m and v
		t.stepTemp = stepTempBytes(m, r, stateB) // foreach AdamW materialises sqrt(v) for all params at once
	case "adamw-8bit", "paged-adamw-8bit":
		t.opt = 2 * T // 8-bit blockwise m and v (Dettmers et al. 2021)
	case "adafactor":
		t.opt = 4 * float64(factoredSize(m, r, full)) // factored second moment, no momentum (HF default beta1=None)
	case "sgd":
	case "sgd-momentum":
		t.opt = stateB * T
	}
	if (r.mixed && !r.amp()) || r.dsMasters {
		t.opt += 4 * T // fp32 master copy (ZeRO paper's 12 = 4 master + 8 Adam; DeepSpeed bf16, stack.go)
	}
	if !full && r.mixed && !r.amp() {
		t.opt -= 4 * T // adapters are already fp32: no separate master copy
	}
}

// gatherCap is what ZeRO-3/FSDP keep gathered: the layer being computed and the one
// prefetched, or DeepSpeed's stage3_max_live_parameters when larger.
func gatherCap(m *model.Model, r *resolved) float64 {
	// FSDP MixedPrecision(param_dtype=bf16) all-gathers the unsharded parameters in the
	// compute dtype (torch.distributed.fsdp.MixedPrecision docs: full precision only
	// outside forward/backward, in the shards); DeepSpeed's bf16/fp16 modes hold the
	// parameters in 16 bits.
	gatherB := gatherBytes(r) // stack.go
	layerBytes := float64(m.Dec.LayerParams) * gatherB
	if r.quantB > 0 {
		layerBytes = float64(m.Dec.LayerParams) * r.quantB
	}
	capB := 2 * layerBytes
	if r.Shard == "zero3" {
		capB = math.Max(capB, zero3MaxLiveParams*gatherB)
	}
	return capB
}

// shard divides states by the GPU count: ZeRO-1 the optimizer, ZeRO-2 also gradients,
// ZeRO-3/FSDP also parameters, which are gathered a layer or two at a time. HSDP shards
// within a node; FSDP under no_sync accumulation keeps the gradients unsharded
// (stack.go).
func (t *trainMem) shard(m *model.Model, r *resolved) {
	g := float64(r.shardDegree()) // every GPU of every node (nodes.go), a node's for hsdp
	switch r.Shard {
	case "zero1":
		t.opt /= g
		t.stepTemp /= g
	case "zero2":
		t.opt /= g
		t.grads /= g
		t.stepTemp /= g
	case "zero3", "fsdp", "hsdp":
		t.opt /= g
		if !r.unshardedGrads {
			t.grads /= g
		}
		t.stepTemp /= g
		fullW := t.weights
		t.weights /= g
		t.adapters /= g
		t.gathered = math.Min(fullW-t.weights, gatherCap(m, r)+rootUnitBytes(m, r)) // stack.go
	}
}

// offload moves states (and parameters) to host memory; loading the checkpoint holds one
// shard in host memory on every GPU's process.
func (t *trainMem) offload(m *model.Model, r *resolved) {
	g, T := float64(r.GPUs), float64(r.trainable)
	switch r.Offload {
	case "optimizer":
		t.cpu += t.opt*g + T*4 // states and fp32 gradients for the CPU Adam (ZeRO-Offload)
		t.opt, t.stepTemp, t.grads = 0, 0, 0
	case "optimizer+params":
		t.cpu += t.opt*g + T*4 + t.weights*g + t.adapters*g
		t.opt, t.stepTemp, t.grads = 0, 0, 0
		t.weights, t.adapters = 0, 0
		t.gathered = math.Min(weightBytes(m, r), gatherCap(m, r))
	}
	t.cpu += math.Min(weightBytes(m, r), checkpointShardBytes) * g
}

// activations: what every layer keeps for backward, the embedding output, and the
// workspace of logits and loss, DDP buckets and the optimizer step.
func (t *trainMem) activations(m *model.Model, r *resolved) {
	B, S := float64(r.Batch), float64(r.SeqLen)
	tokens := B * S
	t.act = stackActivations(m, r, &m.Dec, tokens, S, S)
	if m.Enc != nil {
		// Encoder–decoder: the encoder over the source, the decoder (and the LM head) over
		// the target, cross-attending to the source (stack.go, --target-tokens).
		T := float64(max(r.TargetTokens, 1))
		srcTokens := tokens
		tokens = B * T
		t.act = stackActivations(m, r, &m.Dec, tokens, T, S)
		t.act += stackActivations(m, r, m.Enc, srcTokens, S, S)
		t.act += srcTokens * float64(m.Hidden) * r.b // the encoder's embedding output
	}
	t.act += tokens * float64(m.Hidden) * r.b // embedding output
	// Logits and loss (transformers >= 4.46 ForCausalLMLoss): the LM head's output in the
	// compute dtype (kept by the model output), its fp32 upcast, the fp32 log-softmax that
	// cross-entropy keeps for backward, and the fp32 gradient of the logits.
	if m.Kind == model.KindCausalLM || m.Kind == model.KindSeq2Seq || m.Kind == model.KindParams {
		perTok := r.b + 4 + 4
		if r.b < 4 {
			perTok += 4
		}
		if m.LogitSoftcap {
			perTok += 2 * 4 // tanh soft-capping keeps its fp32 input and output
		}
		if m.Kind == model.KindParams {
			perTok = model.GenericLossBytes(r.b) // no known implementation: the published count
		}
		if r.chunkedLoss {
			// Chunked head and loss keep every chunk's logits (compute dtype) and the
			// log-softmax cross-entropy saves for backward: LitGPT's chunked_cross_entropy
			// runs on the bf16 chunks, torchtune's CEWithChunkedOutputLoss upcasts each chunk
			// to fp32 first. No fp32 copy of the whole logits exists, but autograd runs every
			// chunk's loss backward (later sequence numbers first) before any chunk's head
			// backward, so all the logits' gradients (compute dtype) are live at once.
			perTok = r.b + r.b + r.b
			if r.Framework == FrameworkTorchtune {
				perTok = r.b + 4 + r.b
			}
		}
		t.ws = lossTokens(m, r, tokens) * float64(m.Vocab) * perTok
		if r.Loss == "fused-linear" {
			t.ws += tokens * float64(m.Hidden) * r.b // the input gradient the chunks accumulate into
		}
	}
	t.ws += dequantTransient(m, r)
	if r.GPUs > 1 && !r.Shard.Sharded() {
		t.ws += t.grads // DDP gradient buckets
	}
	// The optimizer step runs after the activations (and the autocast cache) are freed: it
	// only raises the peak when its temporaries exceed them.
	if extra := t.stepTemp - t.act - t.ws - t.autocastCache; extra > 0 && r.gradAccum {
		t.ws += extra
	}
}

func stackActivations(m *model.Model, r *resolved, s *model.Stack, tokens, seq, kvSeq float64) float64 {
	one := r.layerBytes(m, s, tokens, seq, kvSeq)
	if r.GradCkpt {
		// Checkpointing keeps each layer's input and recomputes one layer at a time during
		// backward (Chen et al. 2016; HF gradient_checkpointing_enable).
		return float64(s.Layers)*tokens*float64(s.Hidden)*r.b + one
	}
	return float64(s.Layers) * one
}

// factoredSize is the number of Adafactor second-moment elements: a row and a column
// vector per weight matrix (Shazeer & Stern 2018), a full vector for other parameters.
func factoredSize(m *model.Model, r *resolved, full bool) int64 {
	var n int64
	for _, mod := range m.Modules {
		if full {
			n += (mod.In + mod.Out) * mod.Count
		} else if slices.Contains(r.targets, mod.Name) {
			rk := int64(r.LoRARank)
			n += (rk + mod.In + rk + mod.Out) * mod.Count
		}
	}
	if full {
		n += m.OtherParams + 2*(m.Vocab+m.Hidden)
	}
	return n
}

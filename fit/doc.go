// Package fit is the memory model: what a job needs on each GPU. Job is the one job type
// (the CONTRACT's job flags) with JobParams, the one list of job flags and their parsers;
// Estimate(model, job) resolves the job's defaults (per framework) and impossible
// combinations, then sizes weights, gradients, optimizer states, activations, KV cache,
// workspace, the CUDA context and the allocator's slack. It changes when the memory
// physics or a framework's defaults do; it knows nothing of offers, prices or time.
//
// It is pure: it imports model, pricing and the standard library, and reads no files,
// environment or network. Errors about one flag name it as pricing.Error.Param.
//
// The map of the package:
//
//   - job.go: Job, its typed knobs (Task, Precision, Quant, Shard, Offload, …) and
//     JobParams. A new job flag is an entry in JobParams and a Job field, plus its physics
//     in Estimate.
//   - estimate.go: Estimate and resolve (defaults and impossible combinations, one named
//     step per concern); train.go the training breakdown, infer.go inference and image
//     generation (BenchmarkEstimate: ~1-2 µs, so the recommender calls it for every GPU
//     count and every step of its savings ladder).
//   - framework.go: the defaults of --framework hf|litgpt|torchtune, each cited.
//   - techniques.go: the technique flags (--optimizer-step, --loss chunked, --vae-tiling,
//     --offload model) and the one rule for job flags the task does not use.
//   - fp8.go: fp8 weights, KV cache and fp8-mixed training; quantcfg.go: a pre-quantized
//     checkpoint's quantization as the job's; nodes.go: --nodes.
//
// # Memory model (per GPU)
//
// peak_allocated = weights + gradients + optimizer states + activations + KV cache +
// workspace, the largest simultaneous sum of live tensors, which is what
// torch.cuda.max_memory_allocated() reports. device_total adds the CUDA context
// (CUDAContextGiB) and the caching allocator's reserved-but-free memory (a few percent of
// long-lived tensors, 10 % of activations and temporaries); that is what must fit in an
// offer's VRAM.
//
// Weights: fp32 4 bytes, fp16/bf16 2 bytes per parameter. Quantized jobs quantize only the
// linear layers inside transformer blocks, as bitsandbytes does; embeddings, lm_head, norms
// and biases stay in the compute dtype. NF4/FP4 cost 0.5 byte plus one fp32 absmax per
// 64-weight block (bitsandbytes blocksize 64); double quantization stores those constants
// in 8 bits with one fp32 constant per 256 blocks (Dettmers et al. 2023, "QLoRA", §3);
// LLM.int8 keeps one int8 per weight and an fp32 scale per output row; GPTQ/AWQ-style int4
// adds an fp16 scale and a 4-bit zero per 128 weights.
// Pre-quantized checkpoints (model/quantcfg.go) are sized from their quantization_config as
// stored: GPTQ, AWQ, bitsandbytes, fp8 with block scales, MXFP4 experts.
//
// Training states: AdamW keeps m and v (8 bytes/param in fp32), 8-bit AdamW 2 bytes
// (Dettmers et al. 2021), Adafactor a factored second moment (a row and a column per
// matrix, Shazeer & Stern 2018), SGD nothing, SGD with momentum one buffer. Mixed precision
// under ZeRO/FSDP follows the ZeRO paper (Rajbhandari et al. 2020): 2 bytes of 16-bit
// weights + 2 of gradients + 12 of fp32 master weights, m and v. Plain PyTorch AMP keeps
// fp32 weights and gradients plus autocast's cached half copies during the forward pass.
// "True" bf16/fp16 keeps every state in that dtype (LitGPT's bf16-true). torch.optim.AdamW's
// foreach implementation materialises sqrt(v) for all parameters during the step, which
// sets the peak when activations are small.
//
// LoRA: trainable parameters are PEFT's r·(d_in+d_out) per targeted linear layer
// (Llama-2-7B, r=8, q_proj+v_proj: 4,194,304). Defaults are PEFT's per-architecture
// target_modules; "all-linear" is every linear layer but the output head. Only adapters
// have gradients and optimizer states. Frozen layers do not keep their inputs for
// backward unless they are quantized (bitsandbytes' matmul saves them) or adapted.
//
// Activations: counted tensor by tensor as Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", §4) do, but for the Hugging Face layer
// implementations: norm inputs (fp32 for RMSNorm, which upcasts), linear inputs when a
// weight gradient needs them, the MLP's activation inputs and products, the q, k, v and
// output that SDPA/FlashAttention keep (grouped K/V heads are repeated for SDPA/eager, not
// for FlashAttention-2), dropout masks, and for eager attention the s×s softmax
// probabilities (in fp32 where the implementation upcasts). Gradient checkpointing keeps
// only each layer's input and recomputes one layer at a time. The loss keeps the logits,
// their fp32 upcast, the fp32 log-softmax and the fp32 gradient: 14 bytes per token per
// vocabulary entry in 16-bit training, gigabytes for 128k vocabularies at long sequences.
// A model known only by --params has no implementation to follow: it is the paper's
// generic GPT-style layer (model/params.go: 32·s·b·h bytes per layer without dropout and with
// fused attention, + 2·a·s²·b eager) and its loss keeps Korthikanti's fp32 logits (4·s·b·v)
// plus their 16-bit gradient (Megatron-LM computes the gradient in place). ZeRO-3/FSDP have
// resharded every layer before the optimizer step, which therefore holds only the shards.
//
// Inference: weights + KV cache (2 × layers × kv_heads × head_dim × tokens × batch;
// grouped-query and multi-query attention store only their KV heads, DeepSeek's MLA its
// compressed latent, kv_lora_rank + qk_rope_head_dim per layer; sliding-window and chunked
// layers (Gemma 3, gpt-oss, Llama 4) at most their window, model/window.go) + the prefill
// workspace of one layer, the last position's logits, and the largest checkpoint tensor
// copied once more while the weights load.
//
// Mixtures of experts (package model): every expert is resident, so weights scale with
// Params; each token passes through its top-k experts (plus shared experts), so
// ActiveParams drives compute time, and the MLP activations and router logits are those of
// k experts. Multimodal checkpoints (multimodal.go) add their vision tower to Params, not
// to ActiveParams.
//
// Sharding: ZeRO-1 divides optimizer states by the GPU count, ZeRO-2 also gradients,
// ZeRO-3/FSDP also parameters (Rajbhandari et al. 2020), plus the gathered working set (two
// layers for FSDP; DeepSpeed's stage3_max_live_parameters for ZeRO-3). DDP adds gradient
// buckets. Tensor-parallel inference divides weights, KV heads and workspace; a layer
// split (--split layer, llama.cpp's default) divides weights and KV cache by the GPU
// count and leaves one layer's workspace whole. Offload
// moves optimizer states (and parameters) to host memory, reported as cpu_ram_gib.
//
// fp8 (fp8.go): --quant fp8 stores block linear weights in one byte, --kv-cache-dtype fp8
// keeps one byte per KV element, --precision fp8-mixed adds TransformerEngine's cached fp8
// weight and transpose (2 B per linear weight) to bf16-mixed and keeps linear inputs in fp8;
// all three need fp8 tensor cores (pricing.GPU.FP8).
//
// Several instances (nodes.go): --nodes N spans N identical instances of one offer with a
// cluster interconnect (package recommend chooses them): ZeRO-3 over all GPUs for training, tensor
// parallel within a node × pipeline parallel across nodes for inference.
//
// Image generation: every pipeline component's weights (catalog data: UNet/transformer,
// text encoders, VAE, SD 1.5's safety checker) + the larger of the denoiser's temporaries
// at the resolution and batch (doubled by classifier-free guidance; eager attention
// materialises the token×token scores) and the VAE decode peak (full-resolution
// 256-channel tensors; SDXL's VAE decodes in fp32 when the pipeline runs in fp16).
//
// Framework defaults (framework.go): the flags a job leaves unset take the defaults of
// its stack (--framework hf|litgpt|torchtune: base dtype, adapter dtype, checkpointing,
// LoRA dropout, chunked loss, optimizer), each cited from the stack's recipes or code and
// reported in the assumptions.
//
// The calibration tests (cmd/picker/calibration_test.go) run every measured case through
// the CLI's own binder and RunEstimate, as shared/calibration/score.py runs the binary.
package fit

// Package fit estimates the GPU memory a training or inference job needs and, in
// recommend.go, matches it to priced offers. It is pure computation over plain values: it
// imports only pricing and the standard library, reads no files, environment or network
// (the embedded built-in catalog is data), and says nothing about commands; freshness of
// prices and what to run next are the caller's to say.
//
// The map of the package:
//
//   - job.go: Job, the one job type (the CONTRACT's job flags, and resolved in
//     Result.Job), its typed knobs (Task, Precision, Quant, Shard, Offload, …) and
//     JobParams, the one list of job flags with their parsers. A new job flag is an entry
//     in JobParams and a Job field, plus its physics in Estimate.
//   - model.go, hfconfig.go, params.go: *Model, derived once from a config.json byte slice
//     (ModelFromConfig) or a parameter count (ModelFromParams), so that Estimate does
//     arithmetic only. catalog.go holds the embedded built-in models (CatalogModel).
//     Finding a model by name, path or Hub id is package modelref's job.
//   - estimate.go: Estimate(model, job): resolve (defaults and impossible combinations,
//     one named step per concern), then the training, inference or image-generation
//     breakdown (BenchmarkEstimate: ~1-2 µs, so the recommender calls it for every GPU
//     count and every step of its savings ladder).
//   - recommend.go: Recommend ranks offers by price or job cost, builds the savings ladder
//     and the nearest miss. Errors about one flag name it as pricing.Error.Param.
//     group.go folds offers that differ only in region into one with their regions.
//   - techniques.go: the technique flags (--optimizer-step, --loss chunked, --vae-tiling,
//     --offload model) with their memory physics, and the one rule for job flags the task
//     does not use (an error naming flag and task).
//   - ladder.go: the savings ladder. Each rung is the job flags that ask for a technique,
//     applied through JobParams (so the flags shown reproduce the rung's answer); shown
//     only when it lowers the need and the cost, else rejected with why; its slow-down
//     from the time model or a cited factor; and the cheapest combination, the plan.
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
// Pre-quantized checkpoints (quantcfg.go) are sized from their quantization_config as
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
// generic GPT-style layer (params.go: 32·s·b·h bytes per layer without dropout and with
// fused attention, + 2·a·s²·b eager) and its loss keeps Korthikanti's fp32 logits (4·s·b·v)
// plus their 16-bit gradient (Megatron-LM computes the gradient in place). ZeRO-3/FSDP have
// resharded every layer before the optimizer step, which therefore holds only the shards.
//
// Inference: weights + KV cache (2 × layers × kv_heads × head_dim × tokens × batch;
// grouped-query and multi-query attention store only their KV heads, DeepSeek's MLA its
// compressed latent, kv_lora_rank + qk_rope_head_dim per layer; sliding-window and chunked
// layers (Gemma 3, gpt-oss, Llama 4) at most their window, window.go) + the prefill
// workspace of one layer, the last position's logits, and the largest checkpoint tensor
// copied once more while the weights load.
//
// Mixtures of experts (moe.go, mla.go): every expert is resident, so weights scale with
// Params; each token passes through its top-k experts (plus shared experts), so
// ActiveParams drives compute time, and the MLP activations and router logits are those of
// k experts. Multimodal checkpoints (multimodal.go) add their vision tower to Params, not
// to ActiveParams.
//
// Sharding: ZeRO-1 divides optimizer states by the GPU count, ZeRO-2 also gradients,
// ZeRO-3/FSDP also parameters (Rajbhandari et al. 2020), plus the gathered working set (two
// layers for FSDP; DeepSpeed's stage3_max_live_parameters for ZeRO-3). DDP adds gradient
// buckets. Tensor-parallel inference divides weights, KV heads and workspace. Offload
// moves optimizer states (and parameters) to host memory, reported as cpu_ram_gib.
//
// fp8 (fp8.go): --quant fp8 stores block linear weights in one byte, --kv-cache-dtype fp8
// keeps one byte per KV element, --precision fp8-mixed adds TransformerEngine's cached fp8
// weight and transpose (2 B per linear weight) to bf16-mixed and keeps linear inputs in fp8;
// all three need fp8 tensor cores (pricing.GPU.FP8).
//
// Several instances (nodes.go): --nodes N spans N identical instances of one offer with a
// cluster interconnect (interconnect.csv): ZeRO-3 over all GPUs for training, tensor
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
// reported in the assumptions. The recommender also treats the GPU's software stack as a
// constraint (stack.go: PyTorch wheels, bitsandbytes, bf16, vendor) and judges memory
// against the GPU model's usable figure (pricing/gpus.csv usable_gib).
//
// The calibration test (calibration_test.go) runs every measured case in
// testdata/vram_cases.csv (a copy of shared/calibration/vram_cases.csv, with the
// framework each source used) and testdata/measured_gpu.csv (our H200 runs): together at
// least 85 % within ±15 % and 70 % within ±10 %, judged as
// shared/calibration/score.py judges the CLI.
//
// Job time (throughput.go, TimeModel): training FLOPs over a per-generation share of the
// dense peak, plus memory-bound activation and GEMM I/O traffic, QLoRA dequantization per
// micro-batch, data-parallel/ZeRO-3 collectives over the instance's link (overlapped),
// tensor-parallel all-reduces and PCIe-bound offload; decoding is the slower of the
// engine's share of the bandwidth roof (weights + KV cache per step) and the compute
// roof, prefill is compute-bound. billing.go turns hours into what a provider bills.
// throughput_calibration_test.go scores the model on testdata/throughput_measured.csv
// (a copy of shared/calibration/throughput_measured.csv) with throughput_score.py's
// metric and gates it at 70 % within ±25 % and a median error factor of 1.25.
package fit

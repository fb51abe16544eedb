// Package model says what a model is: the architecture and checkpoint facts the memory
// and time models need, derived once from a config.json byte slice (ModelFromConfig), a
// parameter count (ModelFromParams) or the embedded built-in catalog (CatalogModel), so
// that estimating a job is arithmetic only. It changes when a new architecture or
// checkpoint format appears; it knows nothing of jobs, GPUs or prices.
//
// It is pure: it imports only pricing (for its error type) and the standard library,
// reads no files, environment or network (the embedded catalog is data). Finding a model
// by name, path or Hub id is package modelref's job.
//
// The map of the package:
//
//   - model.go: Model, its layer stacks (Stack), linear modules (Module) and the tensors a
//     layer keeps for backward (ActEntry); the Llama-family builder. archs.go builds the
//     other dense architectures (GPT-2, GPT-NeoX, Falcon, Phi, Bloom, OPT, T5, BERT,
//     DeepSeek-V2), moe.go the mixtures of experts (Qwen3-MoE, Llama 4, gpt-oss), mla.go
//     DeepSeek-V3's multi-head latent attention, multimodal.go vision towers.
//   - hfconfig.go: reading config.json with errors that name the file and the key.
//   - params.go: a model known only by its parameter count (Korthikanti et al.'s generic
//     GPT layer).
//   - window.go: sliding-window and chunked attention, and the KV elements per token.
//   - quantcfg.go, quantbytes.go: a checkpoint's quantization_config (GPTQ, AWQ,
//     bitsandbytes, fp8 block scales, MXFP4) and the bytes per weight of each format.
//   - lora.go: PEFT's LoRA targets and trainable counts; tp.go: tensor-parallel degrees.
//   - catalog.go: the embedded catalog (catalog/models.json, catalog/configs/) and image
//     pipelines (denoiser, text encoders, VAE).
//   - overflow.go: parameter counts saturate instead of wrapping for hostile configs.
//
// Mixtures of experts: every expert is resident, so weights scale with Params; each token
// passes through its top-k experts (plus shared experts), so ActiveParams drives compute.
// Multimodal checkpoints add their vision tower to Params, not to ActiveParams.
package model

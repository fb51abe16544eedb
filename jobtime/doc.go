// Package jobtime says how long a job takes and what it is billed: tokens per second of
// a job (fit.Result) on an offer's GPUs from first principles (TimeModel, TimeGPU), the
// sustained-clock cap of power-limited boards (power.go, gpu_power.csv) and the billing
// rules of each provider (billing.go). It changes when the time model or a provider's
// billing does; it chooses no offer.
//
// It is pure: it imports fit, model and pricing and the standard library, and reads no
// files, environment or network (its CSV tables are embedded data).
//
// Training: FLOPs over a per-generation share of the dense peak, plus memory-bound
// activation and GEMM I/O traffic, QLoRA dequantization per micro-batch, data-parallel /
// ZeRO-3 collectives over the instance's link (overlapped, less the last bucket or layer
// that cannot be), tensor-parallel all-reduces, PCIe-bound offload, the optimizer step
// (its states, masters and gradients streamed through HBM, or CPU Adam when offloaded;
// optimizer.go) and a floor of eager PyTorch's dispatch. Decoding is the slower of the
// engine's share of the bandwidth roof (weights + KV cache per step) and the compute
// roof; prefill is compute-bound. Image generation (image.go) is the denoiser's FLOPs per
// step times the steps, the text encoders and the VAE over a diffusion share of the peak.
// UnitSeconds prices every task by one unit of its work (units.go). The calibration test
// in cmd/picker scores it through `picker recommend`'s own binder.
package jobtime

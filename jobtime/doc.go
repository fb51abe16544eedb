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
// ZeRO-3 collectives over the instance's link (overlapped), tensor-parallel all-reduces
// and PCIe-bound offload. Decoding is the slower of the engine's share of the bandwidth
// roof (weights + KV cache per step) and the compute roof; prefill is compute-bound. The
// calibration test in cmd/picker scores it through `picker recommend`'s own binder.
package jobtime

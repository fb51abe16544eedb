package fit

import "fmt"

// The caching allocator's reserved-but-free memory depends on how it carves segments
// (--allocator). PyTorch's CUDA caching allocator (PyTorch CUDA semantics notes, "Memory
// management" and "Optimizing memory usage with PYTORCH_CUDA_ALLOC_CONF") by default
// cudaMallocs fixed segments and splits blocks out of them; a freed block can serve only
// a request that fits inside it, so tensors whose sizes change from op to op (activations,
// temporaries, layers that ZeRO-3/FSDP gather and free) leave gaps the next request does
// not fit, and reserved grows past allocated (allocDynamicFrac). With
// expandable_segments:True (PyTorch >= 2.1, pytorch/pytorch#96995) the allocator reserves
// the virtual address range of the whole GPU once and maps physical memory into the
// segment's end as it is needed, at the granularity of GPU pages (2 MiB; the
// CUDACachingAllocator.cpp comment on expandable segments), so a churned request grows
// the one segment in place instead of needing a free block of its size: the slack on the
// churned bytes drops to the rounding granularity, one partly used 2 MiB page.
//
// Published measurements show the direction and scale, and none of them sets a constant
// here: torchtune#1185 (Llama 3 8B QLoRA, torchtune 8B_qlora_single_device, A100 80GB,
// 20 steps) reported a peak of 16.39 GiB by default and 10.83 GiB with expandable
// segments; nvidia-cosmos/cosmos-rl#388 (Qwen2.5-7B, 2-way FSDP) 126.97 GB reserved
// against 60.93 GB allocated by default, 96.61 GB against 60.81 GB with them. Those runs
// fragment more than allocDynamicFrac says (older stacks and RL's alternating phases); the
// model keeps the documented mechanism and its fractions.

// expandablePageBytes is the granularity at which an expandable segment maps physical
// memory: 2 MiB GPU pages (PyTorch CUDACachingAllocator.cpp, "This can work at the
// granularity of GPU pages which are 2MiB currently").
const expandablePageBytes = 2 << 20

// Allocator names.
const (
	AllocatorDefault    Allocator = "default"
	AllocatorExpandable Allocator = "expandable"
)

// allocatorSlack is the caching allocator's reserved-but-free bytes per GPU: the static
// fraction on long-lived tensors, and on the churned bytes (activations, workspace and
// gathered layers) the fragmentation fraction with fixed segments or one 2 MiB page with
// expandable ones.
func allocatorSlack(bd Breakdown, r *resolved) float64 {
	static := bd.Weights + bd.Gradients + bd.Optimizer + bd.KVCache - r.allocChurn
	churn := bd.Activations + bd.Workspace + r.allocChurn
	slack := allocStaticFrac * static
	if r.Allocator == AllocatorExpandable {
		if churn > 0 {
			slack += min(churn, expandablePageBytes)
		}
		return slack
	}
	return slack + allocDynamicFrac*churn
}

// allocatorNote is the assumption that names the allocator and what its cache adds.
func allocatorNote(r *resolved) string {
	if r.Allocator == AllocatorExpandable {
		return allocatorNoteExpandable
	}
	return allocatorNoteDefault
}

// The allocator assumptions depend on constants only: formatted once, not per estimate.
var (
	allocatorNoteExpandable = fmt.Sprintf("device_total = peak allocated + %.2f GiB CUDA context + allocator cache: PyTorch >= 2.1 with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (--allocator expandable): %.0f%% of long-lived tensors, and activations/temporaries grow the segment in place, so at most one 2 MiB page on them",
		CUDAContextGiB, allocStaticFrac*100)
	allocatorNoteDefault = fmt.Sprintf("device_total = peak allocated + %.2f GiB CUDA context + allocator cache: PyTorch's caching allocator with fixed segments (--allocator default): %.0f%% of long-lived tensors, %.0f%% of activations/temporaries, which fragment the segments (expandable_segments:True, PyTorch >= 2.1, removes most of that: --allocator expandable)",
		CUDAContextGiB, allocStaticFrac*100, allocDynamicFrac*100)
)

package fit

import (
	"math"
	"testing"
)

// The technique flags' memory, derived by hand from the formulas they cite.
func TestTechniquePhysics(t *testing.T) {
	est := func(model string, j Job) *Result {
		t.Helper()
		r, err := Estimate(catModel(t, model), j)
		if err != nil {
			t.Fatalf("%s %+v: %v", model, j, err)
		}
		return r
	}
	gibOf := func(b float64) float64 { return b / (1 << 30) }

	// SDXL, 4 images at 1024x1024 in bf16: the VAE decode keeps ~3.5 full-resolution
	// 256-channel tensors per image: 4 x 1024 x 1024 x 256 x 2 B x 3.5 = 7 GiB. Slicing
	// and tiling decode one image in tiles of the 1024 px sample size: a quarter.
	full := est("sdxl-base", Job{Images: 4})
	tiled := est("sdxl-base", Job{Images: 4, VAETiling: true})
	if want := gibOf(4 * 1024 * 1024 * 256 * 2 * 3.5); math.Abs(full.Breakdown.Activations-want) > 0.01 {
		t.Errorf("SDXL 4-image decode = %v GiB; want %v", full.Breakdown.Activations, want)
	}
	if tiled.Breakdown.Activations >= full.Breakdown.Activations/2 {
		t.Errorf("tiled decode %v GiB not below half of %v", tiled.Breakdown.Activations, full.Breakdown.Activations)
	}

	// Model CPU offload: the GPU holds the largest component (SDXL's UNet, 2,567,463,684
	// parameters x 2 B) and the host all of them.
	off := est("sdxl-base", Job{Offload: OffloadModel})
	if want := gibOf(2567463684 * 2); math.Abs(off.Breakdown.Weights-want) > 0.01 {
		t.Errorf("offloaded SDXL weights on the GPU = %v GiB; want the UNet's %v", off.Breakdown.Weights, want)
	}
	if off.CPURAMGiB < full.Breakdown.Weights-0.01 {
		t.Errorf("host RAM %v GiB below the pipeline's weights %v", off.CPURAMGiB, full.Breakdown.Weights)
	}

	// AdamW step temporaries: foreach keeps sqrt(v) for every trainable parameter
	// (stateB x T), the for-loop for the largest tensor only, fused none. A pure-bf16 full
	// fine-tune of Qwen2.5-0.5B at 16 tokens is small enough that the step sets the peak.
	j := Job{Task: TaskFullFT, Precision: "bf16", SeqLen: 16}
	fe := est("qwen2.5-0.5b", j)
	j.OptimizerStep = "fused"
	fu := est("qwen2.5-0.5b", j)
	j.OptimizerStep = "for-loop"
	fl := est("qwen2.5-0.5b", j)
	if !(fu.PeakAllocatedGiB < fl.PeakAllocatedGiB && fl.PeakAllocatedGiB < fe.PeakAllocatedGiB) {
		t.Errorf("peaks fused %v, for-loop %v, foreach %v: want fused < for-loop < foreach", fu.PeakAllocatedGiB, fl.PeakAllocatedGiB, fe.PeakAllocatedGiB)
	}
	if fu.Job.OptimizerStep != "fused" || fe.Job.OptimizerStep != "foreach" {
		t.Errorf("resolved optimizer_step %q / %q", fu.Job.OptimizerStep, fe.Job.OptimizerStep)
	}
}

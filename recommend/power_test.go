package recommend

import (
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// TestRecommendPCIeInstancePowerCap: an instance of A100 80GB PCIe cards (named so, as
// cudo and lambda do) is timed at the 300 W card's sustained TFLOPS, the same model in an
// SXM instance at the full peak; a compute-bound job's rate follows the ratio (within the
// memory-bound share of the step).
func TestRecommendPCIeInstancePowerCap(t *testing.T) {
	m := mustModel(t, "llama-2-7b")
	offers := []pricing.Offer{
		offer("lambda", "gpu_1x_a100_sxm4", "A100-80GB", 1, 80, 1.80),
		offer("lambda", "gpu_1x_a100_pcie", "A100-80GB", 1, 80, 1.29),
	}
	in := RecommendInput{Model: m, Job: fit.Job{Task: fit.TaskLoRA, Batch: 1, SeqLen: 2048}, Offers: offers, Tokens: 1e7}
	rec := recommend(t, in)
	hours := map[string]float64{}
	for _, f := range rec.Offers {
		if f.EstHours == nil {
			t.Fatalf("%s: no time", f.InstanceType)
		}
		hours[f.InstanceType] = *f.EstHours
	}
	sxm, pcie := hours["gpu_1x_a100_sxm4"], hours["gpu_1x_a100_pcie"]
	if len(hours) != 2 {
		t.Fatalf("timed offers %v; want both (%s)", hours, rec.NearestMiss)
	}
	capRatio := 312 / (300 / (400.0 / 312)) // 1.333: listed peak over the 300 W card's sustained TFLOPS
	if r := pcie / sxm; r <= 1.1 || r > capRatio*(1+1e-9) {
		t.Errorf("PCIe/SXM time ratio %.3f; want above 1.1 and at most %.3f", r, capRatio)
	}
}

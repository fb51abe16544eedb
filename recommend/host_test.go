package recommend

import (
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// A host whose driver supports an older CUDA than the job's PyTorch wheels need is
// excluded and counted under old-cuda: below 12.0 on any NVIDIA GPU, below 12.8 on
// Blackwell; an offer that states no CUDA (a cloud) and an AMD GPU (ROCm) are not checked.
func TestRecommendOldCUDAExcluded(t *testing.T) {
	m := mustModel(t, "tinyllama-1.1b")
	job := fit.Job{Task: fit.TaskInference, SeqLen: 2048}
	host := func(o pricing.Offer, cuda float64) pricing.Offer {
		o.Host = pricing.Host{MaxCUDA: cuda, Reliability: 0.99}
		return o
	}
	offers := []pricing.Offer{
		host(offer("vast", "3090-cuda11.8", "RTX3090", 1, 24, 0.10), 11.8), // too old
		host(offer("vast", "4090-cuda12.0", "RTX4090", 1, 24, 0.20), 12.0), // the floor itself runs
		host(offer("vast", "b200-cuda12.4", "B200", 1, 180, 0.30), 12.4),   // Blackwell needs 12.8
		host(offer("vast", "b200-cuda12.8", "B200", 1, 180, 0.40), 12.8),
		host(offer("vast", "mi300-cuda0", "MI300X", 1, 192, 0.45), 0),
		offer("aws", "cloud-a10", "A10", 1, 24, 0.50), // states nothing: never excluded
	}
	rec := recommend(t, RecommendInput{Model: m, Job: job, Offers: offers, Rank: RankHourly})
	got := map[string]bool{}
	for _, f := range rec.Offers {
		got[f.InstanceType] = true
	}
	for _, name := range []string{"4090-cuda12.0", "b200-cuda12.8", "mi300-cuda0", "cloud-a10"} {
		if !got[name] {
			t.Errorf("%s missing from the fits %v", name, fitNames(rec.Offers))
		}
	}
	for _, name := range []string{"3090-cuda11.8", "b200-cuda12.4"} {
		if got[name] {
			t.Errorf("%s fits; want it excluded for its host's CUDA", name)
		}
	}
	byModel := map[string]Exclusion{}
	for _, e := range rec.Excluded {
		if e.Code == ExclOldCUDA {
			byModel[e.GPUModel] = e
		}
	}
	if len(byModel) != 2 || byModel["RTX3090"].Offers != 1 || byModel["B200"].Offers != 1 {
		t.Errorf("old-cuda exclusions %+v; want one RTX3090 and one B200 offer", rec.Excluded)
	}
	if tally := TallyExclusions(rec.Excluded).String(); tally != "2 offers on 2 GPU models left out: host CUDA too old (2)" {
		t.Errorf("summary %q", tally)
	}
}

func TestMinCUDA(t *testing.T) {
	for model, want := range map[string]float64{"H100": 12.0, "V100": 12.0, "B200": 12.8, "GB200": 12.8, "MI300X": 0, "Mystery-GPU": 12.0} {
		g, known := pricing.LookupGPU(model)
		if got := minCUDA(&gpuCaps{known: known, spec: g}); got != want {
			t.Errorf("minCUDA(%s) = %v, want %v", model, got, want)
		}
	}
}

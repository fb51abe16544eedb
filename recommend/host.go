package recommend

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// Host facts as fit facts (pricing.Host): a marketplace host whose NVIDIA driver
// supports an older CUDA than the job's PyTorch wheel needs cannot run the job, whatever
// its memory, and is excluded with ExclOldCUDA, counted in Recommendation.Excluded. An
// offer that states no CUDA version (every cloud) is never excluded for it.

// ExclOldCUDA: the host's driver supports an older CUDA than the job's stack needs.
const ExclOldCUDA = "old-cuda"

// The CUDA a job's stack needs of the host's driver. picker's stack is current PyTorch
// (gpus.csv stack_source: the CUDA 12.6/12.8/12.9/13.0 wheels, 12.6 for sm_50-sm_70):
//   - every current wheel is built with a CUDA 12.x toolkit, which runs on any driver of
//     the CUDA 12 family through minor version compatibility (NVIDIA CUDA Compatibility
//     guide, "Minor Version Compatibility": CUDA 12.x needs driver >= 525, i.e. a
//     driver that reports CUDA 12.0); an 11.x driver runs none of them;
//   - Blackwell (compute capability 10.0 and up) is in the wheels from CUDA 12.8 on, the
//     first toolkit with sm_100/sm_120 (CUDA 12.8 release notes; PyTorch 2.7 added the
//     cu128 wheels for it), and its cubins need a driver of that version.
const (
	minCUDAStack     = 12.0
	minCUDABlackwell = 12.8
	blackwellCC      = 10.0
)

// minCUDA is the CUDA version the host's driver must support to run the job's stack on
// the GPU c; 0 when CUDA does not apply (an AMD GPU runs ROCm).
func minCUDA(c *gpuCaps) float64 {
	if !c.known {
		return minCUDAStack
	}
	if !strings.EqualFold(c.spec.Vendor, "NVIDIA") {
		return 0
	}
	if cc, err := strconv.ParseFloat(c.spec.ComputeCapability, 64); err == nil && cc >= blackwellCC {
		return minCUDABlackwell
	}
	return minCUDAStack
}

// cudaFloors are the host CUDA ceilings the rules tell apart, highest first: minCUDA is
// one of them or 0, so cudaTooOld judges a ceiling only by the highest of them it
// reaches; 1 (CUDA 1.0) stands for a stated ceiling below the others. A change to
// minCUDA's thresholds changes them, and FactsVersion with them.
var cudaFloors = []float64{minCUDABlackwell, minCUDAStack, 1}

// CUDAClass is the class of a host CUDA ceiling v the recommender tells apart: 0 when
// unstated (v <= 0), else the highest of CUDAFloors that v reaches (the last when it
// reaches none). Offers whose hosts' ceilings share a class are judged alike (cudaTooOld
// gives the same for v and its class), so a fit-fact set is a FactsKey and a class, not
// a ceiling: a marketplace's dozen CUDA versions are three sets per key, not a dozen.
func CUDAClass(v float64) float64 {
	if !(v > 0) {
		return 0
	}
	for _, f := range cudaFloors {
		if v >= f {
			return f
		}
	}
	return cudaFloors[len(cudaFloors)-1]
}

// CUDAFloors are CUDAClass's floors, highest first (the store's SQL form of it).
func CUDAFloors() []float64 { return slices.Clone(cudaFloors) }

// cudaTooOld reports whether o's host states a CUDA version older than the job's stack
// needs on GPU c.
func cudaTooOld(o *pricing.Offer, c *gpuCaps) bool {
	return o.Host.MaxCUDA > 0 && o.Host.MaxCUDA < minCUDA(c)
}

// hostExclusions counts, per GPU model, the offers whose host's CUDA is too old
// (Recommendation.Excluded, beside the stack's).
func hostExclusions(in *RecommendInput, caps []*gpuCaps) []Exclusion {
	var out []Exclusion
	at := map[*gpuCaps]int{}
	for i := range in.Offers {
		c := caps[i]
		if !cudaTooOld(&in.Offers[i], c) {
			continue
		}
		k, ok := at[c]
		if !ok {
			k = len(out)
			at[c] = k
			out = append(out, Exclusion{GPUModel: in.Offers[i].GPUModel, Code: ExclOldCUDA,
				Reason: fmt.Sprintf("host driver supports an older CUDA than the %g the job's PyTorch wheels need on %s", minCUDA(c), in.Offers[i].GPUModel)})
		}
		out[k].Offers++
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].GPUModel < out[b].GPUModel })
	return out
}

// GPUCounts counts matching offers per GPU model and host CUDA class
// (CUDAClass(pricing.Host.MaxCUDA); 0 where the host states none), or ceiling: what a
// reader that judged only some offers (a shape read) needs of the rest to count
// exclusions exactly (RecountExclusionsByHost; store.CountByGPUCUDA).
type GPUCounts map[string]map[float64]int

// Add counts n offers of model on hosts of CUDA class (or ceiling) cuda.
func (c GPUCounts) Add(model string, cuda float64, n int) {
	m := c[model]
	if m == nil {
		m = map[float64]int{}
		c[model] = m
	}
	m[cuda] += n
}

// Totals are the counts per GPU model, every host alike.
func (c GPUCounts) Totals() map[string]int {
	out := make(map[string]int, len(c))
	for model, m := range c {
		for _, n := range m {
			out[model] += n
		}
	}
	return out
}

// Clone is a deep copy of c.
func (c GPUCounts) Clone() GPUCounts {
	out := make(GPUCounts, len(c))
	for model, m := range c {
		out[model] = maps.Clone(m)
	}
	return out
}

// RecountExclusionsByHost is RecountExclusions from counts per host CUDA class (or
// ceiling: a class judges as its ceilings do): an old-cuda exclusion counts the model's
// offers whose host's CUDA is older than the job's stack needs on it (cudaTooOld), as
// hostExclusions does over every offer; every other exclusion counts all of the model's.
func RecountExclusionsByHost(rec *Recommendation, counts GPUCounts) {
	RecountExclusions(rec, counts.Totals())
	for i := range rec.Excluded {
		x := &rec.Excluded[i]
		if x.Code != ExclOldCUDA {
			continue
		}
		g, known := pricing.LookupGPU(x.GPUModel)
		c := &gpuCaps{known: known, spec: g}
		x.Offers = 0
		for cuda, n := range counts[x.GPUModel] {
			if cudaTooOld(&pricing.Offer{Host: pricing.Host{MaxCUDA: cuda}}, c) {
				x.Offers += n
			}
		}
	}
}

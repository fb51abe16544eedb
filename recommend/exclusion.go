package recommend

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pickergpu/picker/fit"
)

// Exclusion is a group of offers the recommender left out whatever their memory.
type Exclusion struct {
	GPUModel string `json:"gpu_model"`
	Offers   int    `json:"offers"`
	Reason   string `json:"reason"`
	// Code is the reason's kind, for counting: ExclNoFP8 here, the stack's codes in
	// stack.go (no-pytorch, no-bitsandbytes, no-bf16, vendor).
	Code string `json:"code,omitempty"`
}

// fp8Exclusions lists, per GPU model, the offers an fp8 job cannot use.
func fp8Exclusions(in *RecommendInput, caps []*gpuCaps) []Exclusion {
	if !in.Job.FP8Cores() {
		return nil
	}
	var out []Exclusion
	at := map[string]int{}
	for i := range in.Offers {
		c := caps[i]
		if c.known && c.fp8 {
			continue
		}
		name := in.Offers[i].GPUModel
		k, ok := at[name]
		if !ok {
			reason := fmt.Sprintf("%s (%s) has no fp8 tensor cores; %s needs Ada, Hopper, Blackwell or CDNA 3+", name, c.spec.Architecture, fp8Flags(in.Job))
			if !c.known {
				reason = fmt.Sprintf("%s is not in the GPU catalog: fp8 support unknown", name)
			}
			k = len(out)
			at[name] = k
			out = append(out, Exclusion{GPUModel: name, Reason: reason, Code: ExclNoFP8})
		}
		out[k].Offers++
	}
	return out
}

// fp8Flags names the flags that made a job need fp8.
func fp8Flags(j fit.Job) string {
	var f []string
	if j.Quant == "fp8" {
		f = append(f, "--quant fp8")
	}
	if j.KVCacheDtype == "fp8" {
		f = append(f, "--kv-cache-dtype fp8")
	}
	if j.Precision == "fp8-mixed" {
		f = append(f, "--precision fp8-mixed")
	}
	return strings.Join(f, " with ")
}

// exclusionLabels name each exclusion code as a reader says it, short enough that a few
// fit on the summary line; each GPU model's full reason is in Exclusion.Reason.
var exclusionLabels = map[string]string{
	ExclNoBnB:     "no bitsandbytes",
	ExclNoPyTorch: "no current PyTorch",
	ExclNoBF16:    "no bf16",
	ExclNoFP8:     "no fp8",
	ExclVendor:    "another vendor",
	ExclOldCUDA:   "host CUDA too old",
	ExclNoQuota:   "no quota",
	ExclNoKernel:  "no engine kernel",
}

// ExclusionLabel is code's label in the summary line; the code itself when it has none.
func ExclusionLabel(code string) string {
	if l, ok := exclusionLabels[code]; ok {
		return l
	}
	if code == "" {
		return "other"
	}
	return code
}

// ExclusionTally is what a summary of exclusions says: how many offers were left out, on
// how many GPU models, and how many for each reason, most first.
type ExclusionTally struct {
	Offers  int
	Models  []string // in the order of the exclusions
	Reasons []ExclusionReason
}

// ExclusionReason is one reason's label and the offers it left out.
type ExclusionReason struct {
	Label  string
	Offers int
}

// TallyExclusions counts xs for the one line that the CLI and the web page print instead
// of a line per GPU model. A GPU model excluded for two reasons (fp8 and the software
// stack) counts its offers once in the total and once under each reason.
func TallyExclusions(xs []Exclusion) ExclusionTally {
	var t ExclusionTally
	perModel := map[string]int{}
	for _, x := range xs {
		if _, seen := perModel[x.GPUModel]; !seen {
			t.Models = append(t.Models, x.GPUModel)
		}
		perModel[x.GPUModel] = max(perModel[x.GPUModel], x.Offers)
		label := ExclusionLabel(x.Code)
		i := slices.IndexFunc(t.Reasons, func(r ExclusionReason) bool { return r.Label == label })
		if i < 0 {
			i = len(t.Reasons)
			t.Reasons = append(t.Reasons, ExclusionReason{Label: label})
		}
		t.Reasons[i].Offers += x.Offers
	}
	for _, n := range perModel {
		t.Offers += n
	}
	slices.SortStableFunc(t.Reasons, func(a, b ExclusionReason) int { return b.Offers - a.Offers })
	return t
}

// Head is "74 offers on 5 GPU models left out" ("61 offers on M60 left out" for one).
func (t ExclusionTally) Head() string {
	on := plural(len(t.Models), "GPU model")
	if len(t.Models) == 1 {
		on = t.Models[0]
	}
	return plural(t.Offers, "offer") + " on " + on + " left out"
}

// String is the summary line: "74 offers on 5 GPU models left out: no bitsandbytes (66),
// no current PyTorch (8)".
func (t ExclusionTally) String() string {
	parts := make([]string, len(t.Reasons))
	for i, r := range t.Reasons {
		parts[i] = fmt.Sprintf("%s (%d)", r.Label, r.Offers)
	}
	return t.Head() + ": " + strings.Join(parts, ", ")
}

// plural is "1 offer", "2 offers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

package recommend

import (
	"fmt"
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
	if !in.Job.UsesFP8() {
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

func exclusionWarnings(xs []Exclusion) []string {
	var w []string
	for _, x := range xs {
		w = append(w, fmt.Sprintf("%d offer(s) on %s excluded: %s", x.Offers, x.GPUModel, x.Reason))
	}
	return w
}

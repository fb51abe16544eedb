package recommend

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// The software stack as a fit constraint: an offer whose GPU the job's stack cannot run on
// is excluded (or, for bf16 and FlashAttention, run with a fallback that its notes name),
// and every exclusion is counted in Recommendation.Exclusions by reason.

// Exclusion reasons (Exclusion.Reason).
const (
	ExclNoPyTorch = "no-pytorch"      // no current PyTorch wheel runs the GPU (gpus.csv pytorch=no)
	ExclVendor    = "vendor"          // --vendor filters the GPU's vendor out
	ExclNoBnB     = "no-bitsandbytes" // the job needs bitsandbytes kernels the GPU lacks
	ExclNoBF16    = "no-bf16"         // pure-bf16 training has no fp16 fallback
	ExclNoFP8     = "no-fp8"          // fp8 job on a GPU without fp8 tensor cores (fp8.go)
	ExclNoKernel  = "no-kernel"       // the engine has no kernel for the job on the GPU (fit.KernelTable)
)

// Vendor values (--vendor).
const (
	VendorAny    = "any"
	VendorNVIDIA = "nvidia"
	VendorAMD    = "amd"
)

// ParseVendor accepts nvidia, amd or any ("" = any).
func ParseVendor(v string) (string, error) {
	switch s := strings.ToLower(strings.TrimSpace(v)); s {
	case "", VendorAny:
		return VendorAny, nil
	case VendorNVIDIA, VendorAMD:
		return s, nil
	}
	return "", pricing.ParamErrorf(pricing.Invalid, "vendor", "--vendor %q: want nvidia, amd or any", v)
}

// stackNeeds is what a job asks of the GPU's software stack.
type stackNeeds struct {
	bnb      string // why bitsandbytes is needed ("" = not needed)
	pureBF16 bool   // bf16 training without fp32 masters: no fp16 fallback
	vendor   string
	kern     fit.KernelNeeds // a served job's engine kernels (fit/engine_kernels.go)
}

// needsOf derives a job's stack needs from the job as resolved at one GPU (res.Job).
func needsOf(res *fit.Result, vendor string) stackNeeds {
	j := res.Job
	n := stackNeeds{vendor: vendor, kern: fit.KernelNeedsOf(res.Job)}
	switch {
	case j.Task == fit.TaskQLoRA && j.Framework != fit.FrameworkTorchtune && (j.Quant == "nf4" || j.Quant == "fp4"):
		// bitsandbytes Linear4bit (transformers BitsAndBytesConfig, LitGPT bnb.nf4);
		// torchtune's QLoRA quantizes with torchao's NF4Tensor instead.
		n.bnb = "QLoRA's " + string(j.Quant) + " weights"
	case j.Task == fit.TaskLoRA && (j.Quant == "nf4" || j.Quant == "fp4" || j.Quant == "int8"):
		n.bnb = string(j.Quant) + " base weights"
	case !j.IsTraining() && (j.Quant == "nf4" || j.Quant == "fp4" || j.Quant == "int8"):
		n.bnb = string(j.Quant) + " inference"
	case j.Optimizer == "adamw-8bit" || j.Optimizer == "paged-adamw-8bit":
		n.bnb = "the 8-bit optimizer"
	}
	// Training that keeps its states in bf16 (bf16-true, torchtune's dtype bf16, a full
	// fine-tune at --precision bf16) has no loss-scaled fp16 equivalent; hf LoRA at bf16
	// keeps fp32 adapters and falls back to an fp16 base (WithFP16).
	if j.IsTraining() && j.Precision == "bf16" && !(j.Framework == fit.FrameworkHF && (j.Task == fit.TaskLoRA || j.Task == fit.TaskQLoRA)) {
		n.pureBF16 = true
	}
	return n
}

// stackReason is why the job cannot run on the GPU at all ("" = it can, maybe with a
// fallback), with a short detail for messages.
func (n stackNeeds) reason(c *gpuCaps) (string, string) {
	g := c.spec
	switch code := n.code(c); code {
	case ExclVendor:
		return code, fmt.Sprintf("--vendor %s", n.vendor)
	case ExclNoPyTorch:
		return code, "no current PyTorch wheel runs it (" + strings.TrimSpace(g.Architecture+", "+g.ComputeCapability) + ")"
	case ExclNoBnB:
		return code, "no bitsandbytes kernels, needed by " + n.bnb
	case ExclNoBF16:
		return code, "no bf16, and bf16 training has no fp16 fallback"
	case ExclNoKernel:
		_, why, _ := n.kern.Missing(g.Vendor, g.ComputeCapability, c.fp8)
		return code, why
	}
	return "", ""
}

// code is reason's code alone, without building its text: the per-offer check.
func (n stackNeeds) code(c *gpuCaps) string {
	if !c.known {
		return "" // a GPU the catalog lacks: nothing to check against
	}
	g := &c.spec
	switch {
	case n.vendor != "" && n.vendor != VendorAny && !strings.EqualFold(g.Vendor, n.vendor):
		return ExclVendor
	case g.PyTorch == pricing.StackNo:
		return ExclNoPyTorch
	case n.bnb != "" && !g.BitsAndBytes:
		return ExclNoBnB
	case n.pureBF16 && !g.SupportsBF16:
		return ExclNoBF16
	}
	if k, _, _ := n.kern.Missing(g.Vendor, g.ComputeCapability, c.fp8); k != "" {
		return ExclNoKernel
	}
	return ""
}

// stackNotes are what an offer that runs the job should know of its stack.
func stackNotes(c *gpuCaps) []string {
	if !c.known {
		return nil
	}
	g := c.spec
	var out []string
	if g.PyTorch == pricing.StackLegacy {
		out = append(out, fmt.Sprintf("%s (sm_%s) needs PyTorch's CUDA 12.6 wheel: the CUDA 12.8+/13 wheels dropped sm_50-sm_70", g.Model, strings.ReplaceAll(g.ComputeCapability, ".", "")))
	}
	if strings.EqualFold(g.Vendor, "AMD") {
		out = append(out, fmt.Sprintf("%s (%s) runs the ROCm build of PyTorch (and of DeepSpeed/bitsandbytes where used)", g.Model, g.ComputeCapability))
	}
	return out
}

// stackExclusions counts, per GPU model, the offers the stack or --vendor keeps out
// (Recommendation.Excluded, beside fp8.go's).
func stackExclusions(in *RecommendInput, caps []*gpuCaps, ev *evaluator) []Exclusion {
	n := ev.needs
	var out []Exclusion
	at := map[*gpuCaps]int{} // one gpuCaps per GPU model name (prepare)
	for i := range in.Offers {
		c := caps[i]
		if ev.stackCode(c) == "" {
			continue
		}
		k, ok := at[c]
		if !ok {
			code, detail := n.reason(c)
			k = len(out)
			at[c] = k
			out = append(out, Exclusion{GPUModel: in.Offers[i].GPUModel, Reason: detail, Code: code})
		}
		out[k].Offers++
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Code != out[b].Code {
			return out[a].Code < out[b].Code
		}
		return out[a].GPUModel < out[b].GPUModel
	})
	return out
}

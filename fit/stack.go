package fit

import (
	"fmt"
	"slices"
	"sort"
	"strings"

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
	ExclTPDegree  = "tp-degree"       // no tensor-parallel degree dividing the heads fits the pinned --gpus
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

// Exclusion counts the offers one reason kept out of the answer.
type Exclusion struct {
	Reason    string   `json:"reason"`
	Detail    string   `json:"detail"`
	GPUModels []string `json:"gpu_models"`
	Offers    int      `json:"offers"`
}

// stackNeeds is what a job asks of the GPU's software stack.
type stackNeeds struct {
	bnb      string // why bitsandbytes is needed ("" = not needed)
	pureBF16 bool   // bf16 training without fp32 masters: no fp16 fallback
	vendor   string
}

// needsOf derives a job's stack needs from the job as resolved at one GPU (res.Job).
func needsOf(res *Result, vendor string) stackNeeds {
	j := res.Job
	n := stackNeeds{vendor: vendor}
	switch {
	case j.Task == TaskQLoRA && j.Framework != FrameworkTorchtune && (j.Quant == "nf4" || j.Quant == "fp4"):
		// bitsandbytes Linear4bit (transformers BitsAndBytesConfig, LitGPT bnb.nf4);
		// torchtune's QLoRA quantizes with torchao's NF4Tensor instead.
		n.bnb = "QLoRA's " + string(j.Quant) + " weights"
	case j.Task == TaskLoRA && (j.Quant == "nf4" || j.Quant == "fp4" || j.Quant == "int8"):
		n.bnb = string(j.Quant) + " base weights"
	case !j.IsTraining() && (j.Quant == "nf4" || j.Quant == "fp4" || j.Quant == "int8"):
		n.bnb = string(j.Quant) + " inference"
	case j.Optimizer == "adamw-8bit" || j.Optimizer == "paged-adamw-8bit":
		n.bnb = "the 8-bit optimizer"
	}
	// Training that keeps its states in bf16 (bf16-true, torchtune's dtype bf16, a full
	// fine-tune at --precision bf16) has no loss-scaled fp16 equivalent; hf LoRA at bf16
	// keeps fp32 adapters and falls back to an fp16 base (WithFP16).
	if j.IsTraining() && j.Precision == "bf16" && !(j.Framework == FrameworkHF && (j.Task == TaskLoRA || j.Task == TaskQLoRA)) {
		n.pureBF16 = true
	}
	return n
}

// stackReason is why the job cannot run on the GPU at all ("" = it can, maybe with a
// fallback), with a short detail for messages.
func (n stackNeeds) reason(c *gpuCaps) (string, string) {
	if !c.known {
		return "", "" // a GPU the catalog lacks: nothing to check against
	}
	g := c.spec
	switch {
	case n.vendor != "" && n.vendor != VendorAny && !strings.EqualFold(g.Vendor, n.vendor):
		return ExclVendor, fmt.Sprintf("--vendor %s", n.vendor)
	case g.PyTorch == pricing.StackNo:
		return ExclNoPyTorch, "no current PyTorch wheel runs them (Kepler sm_37, RDNA1 gfx1011)"
	case n.bnb != "" && !g.BitsAndBytes:
		return ExclNoBnB, "no bitsandbytes kernels, needed by " + n.bnb
	case n.pureBF16 && !g.SupportsBF16:
		return ExclNoBF16, "no bf16, and bf16 training has no fp16 fallback"
	}
	return "", ""
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

// countExclusions counts, per reason, the offers the stack keeps out, and the GPU models.
func countExclusions(in *RecommendInput, caps []*gpuCaps, n stackNeeds) []Exclusion {
	by := map[string]*Exclusion{}
	for i := range in.Offers {
		r, d := n.reason(caps[i])
		if r == "" {
			continue
		}
		e := by[r]
		if e == nil {
			e = &Exclusion{Reason: r, Detail: d, GPUModels: []string{}}
			by[r] = e
		}
		e.Offers++
		if m := in.Offers[i].GPUModel; !slices.Contains(e.GPUModels, m) {
			e.GPUModels = append(e.GPUModels, m)
		}
	}
	out := make([]Exclusion, 0, len(by))
	for _, e := range by {
		sort.Strings(e.GPUModels)
		out = append(out, *e)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Reason < out[b].Reason })
	return out
}

// exclusionWarning is the one-line count of what the stack kept out.
func exclusionWarning(ex []Exclusion) string {
	if len(ex) == 0 {
		return ""
	}
	total := 0
	var parts []string
	for _, e := range ex {
		total += e.Offers
		parts = append(parts, fmt.Sprintf("%d on %s (%s)", e.Offers, strings.Join(e.GPUModels, ", "), e.Detail))
	}
	return fmt.Sprintf("%d offers excluded: %s", total, strings.Join(parts, "; "))
}

// TPDegrees are the tensor-parallel degrees the model allows up to limit: divisors of its
// attention heads (vLLM and TGI shard the query heads evenly; KV heads are replicated when
// the degree exceeds them). Image pipelines and models without attention shape allow
// any degree.
func (m *Model) TPDegrees(limit int) []int {
	var out []int
	for d := 1; d <= limit; d++ {
		if m.tpValid(d) {
			out = append(out, d)
		}
	}
	return out
}

func (m *Model) tpValid(d int) bool {
	h := m.dec.heads
	return h <= 0 || d <= 1 || h%int64(d) == 0
}

// largestTP is the largest valid tensor-parallel degree not above n.
func (m *Model) largestTP(n int) int {
	for d := n; d > 1; d-- {
		if m.tpValid(d) {
			return d
		}
	}
	return 1
}

package recommend

import (
	"fmt"
	"math"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
)

// Serving picks (issue 27): the job's engine and workload live on the job (fit.Job
// Engine, PromptTokens, OutputTokens), so estimate and recommend size them alike; a pick
// must fit the engine's budget (fit/engine.go), or a shorter max_model_len that the pick
// then names; and its launch line is the engine's command at the numbers estimated.

// syncServing makes the job and the input agree on the engine and the workload (a caller
// may set either) and defaults a language model's engine to vLLM: a serving pick is sized
// as the engine that serves it.
func syncServing(in *RecommendInput) {
	j := &in.Job
	if j.IsTraining() || j.Task == fit.TaskImageGen || in.Model.IsImageModel() {
		return
	}
	if j.PromptTokens == 0 && in.PromptTokens > 0 {
		j.PromptTokens = int(math.Ceil(in.PromptTokens))
	}
	if j.OutputTokens == 0 && in.OutputTokens > 0 {
		j.OutputTokens = int(math.Ceil(in.OutputTokens))
	}
	in.PromptTokens, in.OutputTokens = float64(j.PromptTokens), float64(j.OutputTokens)
	if j.Engine == "" && in.Engine != "" {
		j.Engine = fit.Engine(in.Engine)
	}
	lm := in.Model.Kind == model.KindCausalLM || in.Model.Kind == model.KindParams
	if j.Engine == "" && lm {
		j.Engine = fit.DefaultServeEngine
	}
	if j.Engine != "" {
		in.Engine = string(j.Engine)
	}
}

// shorterContext is the longest max_model_len with which the engine fits in mem GiB per
// GPU with the headroom, when the default (the model's context) does not: vLLM refuses
// to start unless its KV pool holds one max_model_len sequence, and says the longest
// that would ("estimated maximum model length is N").
func (e *evaluator) shorterContext(v *variant, mem float64) (int, float64, bool) {
	s := v.res.Serving
	if s == nil {
		return 0, 0, false
	}
	n, ok := s.LongestFitting(mem / (1 + e.headroom/100))
	if !ok {
		return 0, 0, false
	}
	// The need is the engine's total at the least context that serves the workload; the
	// pick names the longest that fits, which vLLM's pool then fills.
	return n, s.TotalAt(v.res.Job.Batch*v.res.Job.SeqLen) * (1 + e.headroom/100), true
}

// serving is the engine's plan on a pick: the variant's, at the shorter max_model_len
// when the default did not fit; nil for transformers generate and training.
func (e *evaluator) serving(cd *cand) *fit.Serving {
	s := e.variant(cd.vk).res.Serving
	if s == nil {
		return nil
	}
	out := *s
	if cd.maxLen > 0 {
		out = s.WithMaxModelLen(cd.maxLen)
	}
	return &out
}

// servingNotes say how the pick meets the engine's budget.
func (e *evaluator) servingNotes(f *Fit, cd *cand) []string {
	s := f.Serving
	if s == nil {
		return nil
	}
	var out []string
	mem := e.caps[cd.i].memPerDevice(&e.in.Offers[cd.i])
	if cd.maxLen > 0 {
		def := e.variant(cd.vk).res.Serving.MaxModelLen
		out = append(out, fmt.Sprintf("%s's default max_model_len %d does not fit in %s GiB per GPU; --max-model-len %d does (the longest that fits)",
			s.Engine, def, num1(mem), s.MaxModelLen))
	}
	return out // the budget itself is in Fit.Serving (budget_gib, memory_fraction, kv_tokens)
}

// kernelNote names a fallback the kernel table chose (fp8 weights as W8A16 on a GPU
// without fp8 tensor cores).
func kernelNote(n fit.KernelNeeds, c *gpuCaps) string {
	if !c.known {
		return ""
	}
	if _, _, fb := n.Missing(c.spec.Vendor, c.spec.ComputeCapability, c.fp8); fb {
		return fmt.Sprintf("%s has no fp8 tensor cores: %s runs the fp8 weights as W8A16 (Marlin): 1-byte reads, 16-bit GEMMs", c.spec.Model, n.Engine)
	}
	return ""
}

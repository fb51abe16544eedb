package jobtime

import (
	"math"

	"github.com/pickergpu/picker/fit"
)

// A job's unit of work, so that offers can be ranked by what a unit costs whatever the
// task: a trained token, a generated (output) token with its share of the prompt's
// prefill, or an image.

// Units of work (Unit).
const (
	UnitToken       = "token"
	UnitOutputToken = "output token"
	UnitImage       = "image"
)

func (m *TimeModel) training() bool {
	return m.Task == fit.TaskFullFT || m.Task == fit.TaskLoRA || m.Task == fit.TaskQLoRA
}

// Unit names the job's unit of work: "token" (training), "output token" (inference),
// "image" (image generation).
func (m *TimeModel) Unit() string {
	switch {
	case m.Task == fit.TaskImageGen:
		return UnitImage
	case m.training():
		return UnitToken
	}
	return UnitOutputToken
}

// JobSeconds is the run time of a whole job: work is training tokens, generated tokens
// (over requests requests; 0 = work/OutputTokens, or no prompt phase without
// OutputTokens) or images for image generation. It is +Inf when t has no rate.
func (m *TimeModel) JobSeconds(t Timing, work, requests float64) float64 {
	if m.Task == fit.TaskImageGen {
		if t.ImagesPerSec <= 0 {
			return math.Inf(1)
		}
		return work / t.ImagesPerSec
	}
	if t.TokensPerSec <= 0 {
		return math.Inf(1)
	}
	secs := work / t.TokensPerSec
	if m.training() || m.PromptTokens <= 0 {
		return secs
	}
	if requests <= 0 && m.OutputTokens > 0 {
		requests = work / m.OutputTokens
	}
	if requests <= 0 {
		return secs
	}
	if t.serve.continuous && t.serve.batch > 0 {
		// vLLM, SGLang, TensorRT-LLM, llama-server: the prompts are prefilled in chunks
		// inside the decode steps (serve.go).
		return t.serve.continuousSeconds(requests, work/requests)
	}
	// transformers generate: each batch's prompts are prefilled before it decodes.
	return secs + requests*m.PromptTokens/t.PrefillTokensPerSec
}

// UnitSeconds is the seconds one unit of work (Unit) takes on the timed offer: a trained
// token; an output token plus its request's share of the prompt's prefill (the
// accounting of JobSeconds, one request per OutputTokens); an image. It is +Inf when t
// has no rate.
func (m *TimeModel) UnitSeconds(t Timing) float64 {
	return m.JobSeconds(t, 1, 0)
}

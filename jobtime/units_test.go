package jobtime

import (
	"math"
	"testing"

	"github.com/pickergpu/picker/fit"
)

// A unit of work: a trained token, an output token with its request's share of the
// prompt's prefill, an image. JobSeconds of N units is N units' seconds.
func TestUnitSeconds(t *testing.T) {
	for _, c := range []struct {
		name     string
		tm       TimeModel
		t        Timing
		unit     string
		want     float64 // seconds per unit
		work     float64
		requests float64
		jobWant  float64 // JobSeconds(t, work, requests)
	}{
		{"training token", TimeModel{Task: fit.TaskFullFT, PromptTokens: 500}, Timing{TokensPerSec: 4000},
			UnitToken, 1.0 / 4000, 1e6, 0, 250},
		{"lora token", TimeModel{Task: fit.TaskLoRA}, Timing{TokensPerSec: 2000}, UnitToken, 1.0 / 2000, 2000, 0, 1},
		// 1000 prompt tokens per 200 output tokens: each output token carries 5 prompt
		// tokens of prefill at 10000 tokens/s.
		{"output token with prompt", TimeModel{Task: fit.TaskInference, PromptTokens: 1000, OutputTokens: 200},
			Timing{TokensPerSec: 50, PrefillTokensPerSec: 10000}, UnitOutputToken, 1.0/50 + 5.0/10000,
			20000, 0, 20000.0/50 + 100*1000.0/10000},
		// Explicit requests override work/OutputTokens.
		{"output tokens over 10 requests", TimeModel{Task: fit.TaskInference, PromptTokens: 1000, OutputTokens: 200},
			Timing{TokensPerSec: 50, PrefillTokensPerSec: 10000}, UnitOutputToken, 1.0/50 + 5.0/10000,
			20000, 10, 20000.0/50 + 10*1000.0/10000},
		{"output token, no prompt", TimeModel{Task: fit.TaskInference}, Timing{TokensPerSec: 80, PrefillTokensPerSec: 9000},
			UnitOutputToken, 1.0 / 80, 800, 0, 10},
		{"prompt but no output length", TimeModel{Task: fit.TaskInference, PromptTokens: 300}, Timing{TokensPerSec: 80, PrefillTokensPerSec: 9000},
			UnitOutputToken, 1.0 / 80, 800, 0, 10},
		{"image", TimeModel{Task: fit.TaskImageGen}, Timing{ImagesPerSec: 0.25}, UnitImage, 4, 10, 0, 40},
		{"untimed inference", TimeModel{Task: fit.TaskInference}, Timing{}, UnitOutputToken, math.Inf(1), 1, 0, math.Inf(1)},
		{"untimed image", TimeModel{Task: fit.TaskImageGen}, Timing{TokensPerSec: 5}, UnitImage, math.Inf(1), 1, 0, math.Inf(1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if u := c.tm.Unit(); u != c.unit {
				t.Errorf("Unit() = %q; want %q", u, c.unit)
			}
			if got := c.tm.UnitSeconds(c.t); !(got == c.want || near(got, c.want, 1e-12)) {
				t.Errorf("UnitSeconds = %g; want %g", got, c.want)
			}
			if got := c.tm.JobSeconds(c.t, c.work, c.requests); !(got == c.jobWant || near(got, c.jobWant, 1e-12)) {
				t.Errorf("JobSeconds(%g, %g) = %g; want %g", c.work, c.requests, got, c.jobWant)
			}
		})
	}
}

// UnitSeconds of a timed catalog job is JobSeconds of one unit, and N units take N times
// as long (the per-unit accounting is linear in the work).
func TestUnitSecondsOfTimedJobs(t *testing.T) {
	tim, tm := timeFor(t, "llama-3.1-8b", "H100", 1, fit.Job{Task: fit.TaskInference, SeqLen: 2048},
		func(m *TimeModel) { m.PromptTokens, m.OutputTokens = 800, 200 })
	if u, j := tm.UnitSeconds(tim), tm.JobSeconds(tim, 1e5, 0); !near(j, 1e5*u, 1e-12) || u < 1/tim.TokensPerSec*(1-1e-12) {
		t.Errorf("inference: %g s per output token, %g s per 1e5; want 1e5x and no less than decode alone", u, j)
	}
	secs, img, itm, _ := imageTime(t, "sdxl-base", "H100", 1, fit.Job{}, nil)
	if u := itm.UnitSeconds(img); !near(u, secs, 1e-12) || itm.Unit() != UnitImage {
		t.Errorf("image: %g s per %s; want %g s per image", u, itm.Unit(), secs)
	}
}

package jobtime

import (
	"testing"

	"github.com/pickergpu/picker/fit"
)

// Hybrid sharding keeps the parameter all-gathers on the node's NVLink and sends only each
// GPU's gradient shard across the network, so on 16 GPUs it beats FSDP over the network;
// on one node it is FSDP.
func TestHybridSharding(t *testing.T) {
	j := fit.Job{Task: fit.TaskFullFT, SeqLen: 2048, Batch: 1, GPUs: 16, Shard: "fsdp"}
	fsdp, _ := timeFor(t, "llama-2-13b", "H100", 16, j, nil)
	j.Shard = "hsdp"
	hsdp, _ := timeFor(t, "llama-2-13b", "H100", 16, j, nil)
	if !(hsdp.TokensPerSec > 1.2*fsdp.TokensPerSec) {
		t.Errorf("16 H100s: hsdp %.0f tok/s, fsdp %.0f; want hsdp clearly faster (no all-gather over the network)", hsdp.TokensPerSec, fsdp.TokensPerSec)
	}
	j.GPUs = 8
	one, _ := timeFor(t, "llama-2-13b", "H100", 8, j, nil)
	j.Shard = "fsdp"
	f8, _ := timeFor(t, "llama-2-13b", "H100", 8, j, nil)
	if !near(one.TokensPerSec, f8.TokensPerSec, 0.01) {
		t.Errorf("one node: hsdp %.0f tok/s, want fsdp's %.0f", one.TokensPerSec, f8.TokensPerSec)
	}
}

// An encoder–decoder's decoder runs over the target: with 4-token targets the step does
// about half the work of running every layer over the 512-token source (T5: as many
// decoder layers as encoder layers).
func TestEncoderDecoderTarget(t *testing.T) {
	j := fit.Job{Task: fit.TaskLoRA, SeqLen: 512, Batch: 16}
	full, _ := timeFor(t, "t5-large", "A100-80GB", 1, j, func(m *TimeModel) { m.OptStepBytes = 0 })
	j.TargetTokens = 4
	short, tm := timeFor(t, "t5-large", "A100-80GB", 1, j, func(m *TimeModel) { m.OptStepBytes = 0 })
	if want := (512.0 + 4) / (2 * 512); !near(tm.WorkScale, want, 1e-9) {
		t.Errorf("work scale %.4f, want %.4f", tm.WorkScale, want)
	}
	if r := short.TokensPerSec / full.TokensPerSec; r < 1.5 {
		t.Errorf("4-token targets are only x%.2f faster than 512", r)
	}
}

package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// Every L4 offer shows one usable memory figure (gpus.csv usable_gib), whatever its
// provider reported (AWS 22.35, others 24); the provider's figure stays as information.
func TestOffersL4OneUsableFigure(t *testing.T) {
	r := runCLI(t, tempDB(t), false, "offers", "--gpu-model", "L4", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var offers []struct {
		GPUCount float64 `json:"gpu_count"`
		Mem      float64 `json:"gpu_mem_gib"`
		Reported float64 `json:"gpu_mem_reported_gib"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &offers); err != nil || len(offers) == 0 {
		t.Fatalf("offers JSON: %v (%d offers)", err, len(offers))
	}
	l4, _ := pricing.LookupGPU("L4")
	reported := map[float64]bool{}
	for _, o := range offers {
		if o.Mem != l4.UsableGiB {
			t.Fatalf("an L4 offer shows %v GiB; want the usable %v", o.Mem, l4.UsableGiB)
		}
		reported[o.Reported] = true
	}
	if len(reported) < 2 {
		t.Errorf("reported figures %v: want the providers' differing figures kept", reported)
	}
}

// --framework and --lora-dropout are job flags; the answer states the defaults it applied,
// and peak_reserved_gib sits between allocated and device total.
func TestEstimateFrameworkCLI(t *testing.T) {
	r := runCLI(t, tempDB(t), false, "estimate", "--model", "llama-3.1-8b", "--task", "lora", "--framework", "litgpt", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Job struct {
			Framework   string  `json:"framework"`
			Precision   string  `json:"precision"`
			LoRADropout float64 `json:"lora_dropout"`
		} `json:"job"`
		Alloc       float64  `json:"peak_allocated_gib"`
		Reserved    float64  `json:"peak_reserved_gib"`
		Device      float64  `json:"device_total_gib"`
		Assumptions []string `json:"assumptions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Job.Framework != "litgpt" || out.Job.Precision != "bf16" || out.Job.LoRADropout != 0.05 {
		t.Errorf("job = %+v; want litgpt, bf16, dropout 0.05", out.Job)
	}
	if !(out.Alloc < out.Reserved && out.Reserved < out.Device) {
		t.Errorf("allocated %v, reserved %v, device %v: want increasing", out.Alloc, out.Reserved, out.Device)
	}
	if !strings.Contains(strings.Join(out.Assumptions, "\n"), "litgpt default: bf16-true") {
		t.Errorf("assumptions %v lack the litgpt defaults", out.Assumptions)
	}
	bad := runCLI(t, tempDB(t), false, "estimate", "--model", "llama-2-7b", "--framework", "deepspeed")
	if bad.code != 2 || !strings.Contains(bad.stderr, "framework") {
		t.Errorf("--framework deepspeed: exit %d %q; want 2 naming the flag", bad.code, bad.stderr)
	}
	tp := runCLI(t, tempDB(t), false, "estimate", "--model", "llama-2-70b", "--gpus", "3")
	if tp.code != 2 || !strings.Contains(tp.stderr, "1, 2, 4, 8") {
		t.Errorf("--gpus 3 on llama-2-70b: exit %d %q; want 2 naming the valid degrees", tp.code, tp.stderr)
	}
}

// recommend never puts QLoRA on a GPU without bitsandbytes or any job on one no current
// PyTorch runs; -v prints the exclusions per reason, --vendor filters.
func TestRecommendStackCLI(t *testing.T) {
	db := tempDB(t)
	r := runCLI(t, db, false, "-v", "recommend", "--model", "tinyllama-1.1b", "--task", "qlora", "--gpus", "16", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Offers []struct {
			GPUModel string `json:"gpu_model"`
		} `json:"offers"`
		Excluded []struct {
			GPUModel string `json:"gpu_model"`
			Code     string `json:"code"`
			Offers   int    `json:"offers"`
		} `json:"excluded"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Offers {
		g, _ := pricing.LookupGPU(o.GPUModel)
		if !g.RunsPyTorch() || !g.BitsAndBytes {
			t.Errorf("QLoRA placed on %s (pytorch %s, bitsandbytes %v)", o.GPUModel, g.PyTorch, g.BitsAndBytes)
		}
	}
	codes := map[string]bool{}
	for _, e := range out.Excluded {
		codes[e.Code] = true
	}
	if !codes["no-pytorch"] || !codes["no-bitsandbytes"] {
		t.Errorf("excluded = %+v; want no-pytorch (K80) and no-bitsandbytes entries", out.Excluded)
	}
	tbl := runCLI(t, db, false, "-v", "recommend", "--model", "tinyllama-1.1b", "--task", "qlora", "--vendor", "amd")
	if !regexp.MustCompile(`(?m)^H100\t\d+\tvendor\t`).MatchString(tbl.stdout) || !strings.Contains(tbl.stderr, "assumption: ") {
		t.Errorf("-v lacks the exclusions (stdout, H100 under vendor) or the assumptions (stderr):\n%s\n%s", tbl.stdout, tbl.stderr)
	}
	if strings.Contains(tbl.stdout, "NVIDIA") || strings.Contains(tbl.stdout, " H100 ") {
		t.Errorf("--vendor amd listed NVIDIA offers:\n%s", tbl.stdout)
	}
}

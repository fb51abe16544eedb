package fit

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

func TestParseJob(t *testing.T) {
	got, err := ParseJob(map[string]string{
		"model": "llama-2-7b", "task": "LoRA", "precision": "bf16-mixed", "quant": "none", "double-quant": "false",
		"optimizer": "adamw-8bit", "batch": "4", "seq-len": "1024", "grad-ckpt": "", "attention": "flash",
		"lora-r": "16", "lora-targets": "q_proj, v_proj", "gpus": "2", "shard": "zero2", "offload": "optimizer",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Job{Task: "lora", Precision: "bf16-mixed", Quant: "none", Optimizer: "adamw-8bit", Batch: 4, SeqLen: 1024,
		GradCkpt: true, Attention: "flash", LoRARank: 16, LoRATargets: []string{"q_proj", "v_proj"}, GPUs: 2, Shard: "zero2", Offload: "optimizer",
		gradCkptSet: true, doubleQuantSet: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseJob = %+v\nwant %+v", got, want)
	}
	img, err := ParseJob(map[string]string{"task": "image-gen", "resolution": "768x512", "images": "2"})
	if err != nil || img.Resolution != (Resolution{768, 512}) || img.Images != 2 {
		t.Errorf("image job = %+v, %v", img, err)
	}
	empty, err := ParseJob(nil)
	if err != nil || !reflect.DeepEqual(empty, Job{}) {
		t.Errorf("ParseJob(nil) = %+v, %v", empty, err)
	}
}

func TestParseJobErrors(t *testing.T) {
	tests := []struct {
		key, value string
		want       []string // substrings of the message: the flag, the value, the allowed values
	}{
		{"task", "pretrain", []string{"--task", `"pretrain"`, "inference, full-ft, lora, qlora, image-gen"}},
		{"precision", "fp8", []string{"--precision", "fp8", "bf16-mixed"}},
		{"quant", "gptq", []string{"--quant", "nf4"}},
		{"optimizer", "lion", []string{"--optimizer", "adafactor"}},
		{"attention", "xformers", []string{"--attention", "eager, sdpa, flash"}},
		{"shard", "zero4", []string{"--shard", "fsdp"}},
		{"offload", "nvme", []string{"--offload", "optimizer+params"}},
		{"batch", "0", []string{"--batch", "at least 1"}},
		{"batch", "four", []string{"--batch", `"four"`, "whole number"}},
		{"gpus", "0", []string{"--gpus", "at least 1"}},
		{"lora-r", "0", []string{"--lora-r", "at least 1"}},
		{"seq-len", "-5", []string{"--seq-len"}},
		{"images", "0", []string{"--images"}},
		{"grad-ckpt", "maybe", []string{"--grad-ckpt", "true or false"}},
		{"double-quant", "2", []string{"--double-quant"}},
		{"resolution", "1024", []string{"--resolution", "WxH"}},
		{"resolution", "1000x1001", []string{"--resolution", "multiple of 8"}},
		{"lora-targets", "all-linear,q_proj", []string{"--lora-targets", "all-linear"}},
		{"bogus", "1", []string{"unknown job flag --bogus"}},
	}
	for _, tt := range tests {
		_, err := ParseJob(map[string]string{tt.key: tt.value})
		if err == nil {
			t.Errorf("%s=%q: no error", tt.key, tt.value)
			continue
		}
		if pricing.ErrorCode(err) != pricing.Invalid {
			t.Errorf("%s=%q: code %s, want invalid", tt.key, tt.value, pricing.ErrorCode(err))
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s=%q: error %q lacks %q", tt.key, tt.value, err, w)
			}
		}
	}
}

func TestJobHelpers(t *testing.T) {
	tests := []struct {
		job      Job
		bf16     bool
		flash    bool
		fp16Prec Precision
		fp16Attn Attention
	}{
		{Job{}, true, false, "fp16", ""},
		{Job{Task: TaskLoRA}, true, false, "fp16", ""}, // hf: the base loads in fp16, PEFT keeps fp32 adapters
		{Job{Task: TaskLoRA, Framework: FrameworkLitGPT}, true, false, "fp16-mixed", ""},
		{Job{Task: TaskFullFT}, true, false, "fp16-mixed", ""},
		{Job{Precision: "bf16-mixed", Attention: "flash"}, true, true, "fp16-mixed", "sdpa"},
		{Job{Precision: "fp32"}, false, false, "fp32", ""},
		{Job{Precision: "fp16", Attention: "eager"}, false, false, "fp16", "eager"},
	}
	for _, tt := range tests {
		if got := tt.job.UsesBF16(); got != tt.bf16 {
			t.Errorf("%+v UsesBF16 = %v", tt.job, got)
		}
		if got := tt.job.UsesFlashAttention(); got != tt.flash {
			t.Errorf("%+v UsesFlashAttention = %v", tt.job, got)
		}
		f := tt.job.WithFP16()
		if f.Precision != tt.fp16Prec || f.Attention != tt.fp16Attn {
			t.Errorf("%+v WithFP16 = %s/%s, want %s/%s", tt.job, f.Precision, f.Attention, tt.fp16Prec, tt.fp16Attn)
		}
		if f.UsesBF16() || f.UsesFlashAttention() {
			t.Errorf("%+v WithFP16 still needs bf16/flash", tt.job)
		}
	}
}

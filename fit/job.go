package fit

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// Task values (CONTRACT --task).
const (
	TaskInference = "inference"
	TaskFullFT    = "full-ft"
	TaskLoRA      = "lora"
	TaskQLoRA     = "qlora"
	TaskImageGen  = "image-gen"
)

// Allowed values of the enumerated job flags, in the CONTRACT's order.
var (
	Tasks      = []string{TaskInference, TaskFullFT, TaskLoRA, TaskQLoRA, TaskImageGen}
	Precisions = []string{"fp32", "fp16", "bf16", "fp16-mixed", "bf16-mixed", "fp8-mixed"}
	Quants     = []string{"none", "int8", "nf4", "fp4", "int4", "fp8"}
	// KVCacheDtypes are vLLM's --kv-cache-dtype names: auto = the compute dtype.
	KVCacheDtypes = []string{"auto", "fp8"}
	Optimizers    = []string{"adamw", "adamw-8bit", "paged-adamw-8bit", "adafactor", "sgd", "sgd-momentum"}
	Attentions    = []string{"eager", "sdpa", "flash"}
	Shards        = []string{"none", "zero1", "zero2", "zero3", "fsdp", "tp"}
	Offloads      = []string{"none", "optimizer", "optimizer+params"}
	JobFlagKeys   = []string{"task", "precision", "quant", "double-quant", "optimizer", "batch", "seq-len", "grad-ckpt",
		"attention", "lora-r", "lora-targets", "gpus", "shard", "offload", "resolution", "images", "kv-cache-dtype", "nodes"}
)

// Job is one training or inference job, as the CONTRACT's job flags describe it. It is a
// plain value: copy it, change a field and call Estimate again (the recommender does so for
// every GPU count and every step of its savings ladder). Empty strings and zero numbers
// mean "the CONTRACT default"; Estimate resolves them against the model (seq-len and
// resolution depend on it) and Result.Job shows the resolved values.
type Job struct {
	Task        string // Tasks; "" = inference
	Precision   string // Precisions; "" = bf16 for inference/image-gen, bf16-mixed for training
	Quant       string // Quants; "" = none, or nf4 for qlora
	DoubleQuant bool
	Optimizer   string // Optimizers; "" = adamw
	Batch       int    // micro-batch per GPU; 0 = 1
	SeqLen      int    // tokens per sample; 0 = 2048 for LLMs (capped at the model's context), 512 for BERT
	GradCkpt    bool
	Attention   string // Attentions; "" = sdpa
	LoRARank    int    // 0 = 8
	LoRATargets string // comma list or "all-linear"; "" = the architecture's default (PEFT's)
	GPUs        int    // 0 = 1
	Shard       string // Shards; "" = none for training, tp for inference on more than one GPU
	Offload     string // Offloads; "" = none
	Width       int    // image-gen resolution; 0 = the pipeline's default
	Height      int
	Images      int // images per batch; 0 = 1
	// KVCacheDtype is KVCacheDtypes; "" = auto (the compute dtype).
	KVCacheDtype string
	// Nodes is how many identical instances the job spans (nodes.go); 0 or 1 = one.
	// GPUs is then per node. NodesAuto asks the recommender for the fewest that fit.
	Nodes     int
	NodesAuto bool
}

// IsTraining reports whether the job computes gradients.
func (j Job) IsTraining() bool {
	return j.Task == TaskFullFT || j.Task == TaskLoRA || j.Task == TaskQLoRA
}

// UsesBF16 reports whether the job needs bfloat16 support (Ampere or newer). A GPU without
// it (T4, V100) can run the job with WithFP16 instead.
func (j Job) UsesBF16() bool {
	p := j.Precision
	if p == "" {
		return true // the default precisions are bf16 and bf16-mixed
	}
	return p == "bf16" || p == "bf16-mixed"
}

// UsesFlashAttention reports whether the job asks for FlashAttention kernels (Ampere or
// newer); sdpa falls back to memory-efficient kernels on older GPUs.
func (j Job) UsesFlashAttention() bool { return j.Attention == "flash" }

// WithFP16 returns the job switched to what a GPU without bf16 or FlashAttention runs:
// bf16 -> fp16, bf16-mixed -> fp16-mixed, flash -> sdpa. Memory is nearly the same; the
// recommender warns that fp16 may need loss scaling.
func (j Job) WithFP16() Job {
	switch j.Precision {
	case "bf16":
		j.Precision = "fp16"
	case "bf16-mixed":
		j.Precision = "fp16-mixed"
	case "":
		j.Precision = "fp16"
		if j.IsTraining() {
			j.Precision = "fp16-mixed"
		}
	}
	if j.Attention == "flash" {
		j.Attention = "sdpa"
	}
	return j
}

// ParseJob parses the job flags as the user typed them. Keys are the CONTRACT flag names
// without dashes ("task", "seq-len", "grad-ckpt", "lora-targets", "double-quant", ...);
// "model" and "params" are accepted and ignored (ResolveModel takes them). A missing key or
// an empty value takes the default; a boolean given as "" (a bare --grad-ckpt, or
// ?grad-ckpt in a query string) means true. Every bad value is a pricing.Invalid error that
// names the flag, the value and what is allowed. Combinations that depend on the model are
// checked by Estimate.
func ParseJob(values map[string]string) (Job, error) {
	var j Job
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic: the first bad flag in name order is reported
	for _, k := range keys {
		v := strings.TrimSpace(values[k])
		var err error
		switch k {
		case "model", "params":
		case "task":
			j.Task, err = enumFlag(k, v, Tasks)
		case "precision":
			j.Precision, err = enumFlag(k, v, Precisions)
		case "quant":
			j.Quant, err = enumFlag(k, v, Quants)
		case "optimizer":
			j.Optimizer, err = enumFlag(k, v, Optimizers)
		case "attention":
			j.Attention, err = enumFlag(k, v, Attentions)
		case "shard":
			j.Shard, err = enumFlag(k, v, Shards)
		case "offload":
			j.Offload, err = enumFlag(k, v, Offloads)
		case "double-quant":
			j.DoubleQuant, err = boolFlag(k, v)
		case "grad-ckpt":
			j.GradCkpt, err = boolFlag(k, v)
		case "batch":
			j.Batch, err = intFlag(k, v, 1)
		case "seq-len":
			j.SeqLen, err = intFlag(k, v, 1)
		case "lora-r":
			j.LoRARank, err = intFlag(k, v, 1)
		case "gpus":
			j.GPUs, err = intFlag(k, v, 1)
		case "images":
			j.Images, err = intFlag(k, v, 1)
		case "kv-cache-dtype":
			j.KVCacheDtype, err = enumFlag(k, v, KVCacheDtypes)
		case "nodes":
			j.Nodes, j.NodesAuto, err = nodesFlag(v)
		case "lora-targets":
			j.LoRATargets, err = targetsFlag(v)
		case "resolution":
			j.Width, j.Height, err = parseResolution(v)
		default:
			err = pricing.Errorf(pricing.Invalid, "unknown job flag --%s (job flags: --%s)", k, strings.Join(JobFlagKeys, ", --"))
		}
		if err != nil {
			return Job{}, err
		}
	}
	return j, nil
}

func enumFlag(flag, v string, allowed []string) (string, error) {
	if v == "" {
		return "", nil
	}
	lv := strings.ToLower(v)
	for _, a := range allowed {
		if lv == a {
			return a, nil
		}
	}
	return "", pricing.Errorf(pricing.Invalid, "--%s %q: want one of %s", flag, v, strings.Join(allowed, ", "))
}

func boolFlag(flag, v string) (bool, error) {
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(strings.ToLower(v))
	if err != nil {
		return false, pricing.Errorf(pricing.Invalid, "--%s %q: want true or false", flag, v)
	}
	return b, nil
}

func intFlag(flag, v string, lo int) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, pricing.Errorf(pricing.Invalid, "--%s %q: want a whole number >= %d", flag, v, lo)
	}
	if n < lo {
		return 0, pricing.Errorf(pricing.Invalid, "--%s %d: must be at least %d", flag, n, lo)
	}
	if n > 1<<30 {
		return 0, pricing.Errorf(pricing.Invalid, "--%s %d: too large", flag, n)
	}
	return n, nil
}

func targetsFlag(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	var parts []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "", pricing.Errorf(pricing.Invalid, "--lora-targets %q: want a comma list of module names or all-linear", v)
	}
	for _, p := range parts {
		if strings.EqualFold(p, "all-linear") && len(parts) > 1 {
			return "", pricing.Errorf(pricing.Invalid, "--lora-targets %q: all-linear cannot be combined with module names", v)
		}
	}
	return strings.Join(parts, ","), nil
}

func parseResolution(v string) (int, int, error) {
	if v == "" {
		return 0, 0, nil
	}
	bad := func(why string) error {
		return pricing.Errorf(pricing.Invalid, "--resolution %q: %s (want WxH, e.g. 1024x1024)", v, why)
	}
	w, h, ok := strings.Cut(strings.ToLower(v), "x")
	if !ok {
		return 0, 0, bad("missing x")
	}
	W, err1 := strconv.Atoi(strings.TrimSpace(w))
	H, err2 := strconv.Atoi(strings.TrimSpace(h))
	if err1 != nil || err2 != nil {
		return 0, 0, bad("not two whole numbers")
	}
	if W < 64 || H < 64 || W > 16384 || H > 16384 {
		return 0, 0, bad("each side must be 64 to 16384 pixels")
	}
	if W%8 != 0 || H%8 != 0 {
		return 0, 0, bad("each side must be a multiple of 8 (the VAE downsamples by 8)")
	}
	return W, H, nil
}

// resolutionString formats a resolution for the JSON output.
func resolutionString(w, h int) string {
	if w == 0 || h == 0 {
		return ""
	}
	return fmt.Sprintf("%dx%d", w, h)
}

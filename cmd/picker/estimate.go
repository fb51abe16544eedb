package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pickergpu/picker/fit"
)

// registerJobFlags adds the CONTRACT's job flags (shared by estimate and recommend).
// Values are kept as the user typed them and parsed once by fit.ParseJob, the same
// parser the HTTP API uses for query parameters.
func registerJobFlags(fs *pflag.FlagSet) {
	fs.String("model", "", "catalog name (llama-2-7b), Hugging Face id (meta-llama/Llama-2-7b-hf) or path to a config.json")
	fs.String("params", "", "raw parameter count (7b, 6.74e9) when no architecture is known")
	fs.String("task", "inference", "inference, full-ft, lora, qlora or image-gen")
	fs.String("precision", "", "fp32, fp16, bf16, fp16-mixed, bf16-mixed or fp8-mixed (default bf16 for inference, bf16-mixed for training)")
	fs.String("quant", "none", "weight quantization: none, int8, nf4, fp4, int4 or fp8 (qlora implies nf4; a pre-quantized checkpoint implies its own)")
	fs.Bool("double-quant", false, "bitsandbytes double quantization of the 4-bit constants")
	fs.String("optimizer", "adamw", "adamw, adamw-8bit, paged-adamw-8bit, adafactor, sgd or sgd-momentum")
	fs.String("batch", "1", "micro-batch per GPU")
	fs.String("seq-len", "", "tokens per sample; inference: prompt + generated (default 2048 for LLMs)")
	fs.Bool("grad-ckpt", false, "gradient (activation) checkpointing")
	fs.String("attention", "sdpa", "eager, sdpa or flash")
	fs.String("lora-r", "8", "LoRA rank")
	fs.String("lora-targets", "", "LoRA target modules, comma list or all-linear (default q_proj,v_proj or the architecture's equivalent)")
	fs.String("gpus", "", "GPUs the job runs on (estimate: default 1; recommend: default each offer's GPU count)")
	fs.String("shard", "", "none, zero1, zero2, zero3, fsdp or tp (default none for training, tp for inference on >1 GPU)")
	fs.String("offload", "none", "none, optimizer or optimizer+params (ZeRO-Offload / FSDP CPU offload)")
	fs.String("resolution", "", "image generation: WxH (default: the model's)")
	fs.String("images", "", "image generation: images per batch (default 1)")
	fs.String("kv-cache-dtype", "auto", "inference KV cache: auto (the compute dtype) or fp8 (needs an fp8 GPU: Ada, Hopper, Blackwell)")
	fs.String("nodes", "", "instances the job spans: a number, or auto (recommend: the fewest that fit); needs a cluster interconnect")
}

// jobValues returns the job flags the user set, keyed by flag name, for fit.ParseJob.
func jobValues(fs *pflag.FlagSet) map[string]string {
	vals := map[string]string{}
	fs.Visit(func(f *pflag.Flag) {
		if slices.Contains(fit.JobFlagKeys, f.Name) {
			vals[f.Name] = f.Value.String()
		}
	})
	return vals
}

// resolveModel turns --model/--params into a model, fetching unknown Hub ids (cached).
func (a *app) resolveModel(ctx context.Context, fs *pflag.FlagSet) (*fit.Model, error) {
	ref, _ := fs.GetString("model")
	params, _ := fs.GetString("params")
	opt := fit.ResolveOptionsFromEnv()
	opt.Params = params
	m, err := fit.ResolveModel(ctx, ref, opt)
	if err != nil {
		return nil, err
	}
	if ref != "" && params != "" {
		// Both given: the count must describe the same model as the config's shapes.
		if err := m.CheckStatedParams(params); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (a *app) estimateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "estimate",
		Short: "Estimate the GPU memory a job needs, per GPU",
		Example: `  picker estimate --model llama-2-7b --task lora --batch 4 --seq-len 2048
  picker estimate --model meta-llama/Llama-2-70b-hf --task full-ft --gpus 8 --shard zero3 -o json
  picker estimate --model ./config.json --task inference --batch 8 --seq-len 4096`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := a.estimate(cmd.Context(), cmd.Flags())
			if err != nil {
				return err
			}
			return a.writeEstimate(a.stdout, res)
		},
	}
	registerJobFlags(cmd.Flags())
	return cmd
}

func (a *app) estimate(ctx context.Context, fs *pflag.FlagSet) (*fit.Result, error) {
	job, err := fit.ParseJob(jobValues(fs))
	if err != nil {
		return nil, err
	}
	m, err := a.resolveModel(ctx, fs)
	if err != nil {
		return nil, err
	}
	return fit.Estimate(m, job)
}

func (a *app) writeEstimate(w io.Writer, r *fit.Result) error {
	switch a.output {
	case "json":
		return writeJSON(w, r)
	case "csv":
		b := r.Breakdown
		return writeCSV(w, []string{"model", "task", "precision", "quant", "batch", "seq_len", "gpus", "shard", "trainable_params",
			"weights_gib", "gradients_gib", "optimizer_gib", "activations_gib", "kv_cache_gib", "workspace_gib", "peak_allocated_gib", "device_total_gib", "cpu_ram_gib"},
			[][]string{{r.Model.Name, r.Job.Task, r.Job.Precision, r.Job.Quant, fmt.Sprint(r.Job.Batch), fmt.Sprint(r.Job.SeqLen), fmt.Sprint(r.Job.GPUs), r.Job.Shard, fmt.Sprint(r.TrainableParams),
				num(b.Weights, 3), num(b.Gradients, 3), num(b.Optimizer, 3), num(b.Activations, 3), num(b.KVCache, 3), num(b.Workspace, 3), num(r.PeakAllocatedGiB, 3), num(r.DeviceTotalGiB, 3), num(r.CPURAMGiB, 3)}})
	}
	fmt.Fprintf(w, "%s (%s, %s)  %s\n", r.Model.Name, r.Model.Architecture, paramSummary(r.Model), jobSummary(r.Job))
	if r.TrainableParams > 0 {
		fmt.Fprintf(w, "trainable parameters: %s\n", humanCount(r.TrainableParams))
	}
	fmt.Fprintln(w)
	t := &table{headers: []string{"PER GPU", "GiB"}}
	b := r.Breakdown
	for _, row := range []struct {
		name string
		v    float64
	}{{"weights", b.Weights}, {"gradients", b.Gradients}, {"optimizer states", b.Optimizer}, {"activations", b.Activations}, {"kv cache", b.KVCache}, {"workspace", b.Workspace}} {
		t.add(row.name, num(row.v, 2))
	}
	t.add("peak allocated", num(r.PeakAllocatedGiB, 2))
	t.add("+ cuda context & allocator", num(r.DeviceTotalGiB-r.PeakAllocatedGiB, 2))
	t.add("device total (must fit)", num(r.DeviceTotalGiB, 2))
	if r.CPURAMGiB > 0 {
		t.add("host RAM", num(r.CPURAMGiB, 2))
	}
	if err := t.write(w, a.tty); err != nil {
		return err
	}
	if r.Layout != "" {
		fmt.Fprintln(w, "\nlayout: "+r.Layout)
	}
	if len(r.Assumptions) > 0 {
		fmt.Fprintln(w, "\nassumptions:")
		for _, s := range r.Assumptions {
			fmt.Fprintln(w, "  - "+s)
		}
	}
	return nil
}

func jobSummary(j fit.JobInfo) string {
	parts := []string{j.Task, j.Precision}
	if j.Quant != "" && j.Quant != "none" {
		parts = append(parts, j.Quant)
	}
	if j.Task == fit.TaskImageGen {
		parts = append(parts, j.Resolution, fmt.Sprintf("%d image(s)", j.Images))
	} else {
		parts = append(parts, fmt.Sprintf("batch %d", j.Batch), fmt.Sprintf("seq %d", j.SeqLen))
	}
	if j.GradCkpt {
		parts = append(parts, "grad-ckpt")
	}
	if j.Task == fit.TaskLoRA || j.Task == fit.TaskQLoRA {
		parts = append(parts, fmt.Sprintf("r=%d %s", j.LoRAR, strings.Join(j.LoRATargets, ",")))
	}
	if j.GPUs > 1 {
		parts = append(parts, fmt.Sprintf("%d GPUs %s", j.GPUs, j.Shard))
	}
	if j.Offload != "" && j.Offload != "none" {
		parts = append(parts, "offload "+j.Offload)
	}
	if j.KVCacheDtype == "fp8" {
		parts = append(parts, "fp8 KV cache")
	}
	if j.Nodes > 1 {
		parts = append(parts, fmt.Sprintf("%d nodes", j.Nodes))
	}
	return strings.Join(parts, ", ")
}

// paramSummary names total and active parameters: "46.70B params, 12.88B active" for a
// mixture of experts, "6.74B params" when every parameter is used per token.
func paramSummary(m fit.ModelInfo) string {
	if m.ActiveParams > 0 && m.ActiveParams != m.Params {
		return humanCount(m.Params) + " params, " + humanCount(m.ActiveParams) + " active"
	}
	return humanCount(m.Params) + " params"
}

// humanCount writes 6738415616 as 6.74B.
func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return num(float64(n)/1e9, 2) + "B"
	case n >= 1e6:
		return num(float64(n)/1e6, 2) + "M"
	case n >= 1e3:
		return num(float64(n)/1e3, 1) + "K"
	}
	return fmt.Sprint(n)
}

package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/modelref"
)

// resolveModel is the CLI's and the daemon's ModelResolver: modelref with the Hub
// settings of the environment.
func (a *app) resolveModel(ctx context.Context, ref, params string) (*model.Model, error) {
	return modelref.Resolve(ctx, ref, params, modelref.FromEnv(a.m.Getenv))
}

// EstimateOptions is `picker estimate` (GET /v1/estimate): the job and how to find its
// model.
type EstimateOptions struct {
	JobRequest
	// HeadroomPct is recommend's --headroom: the text output shows the need with it.
	HeadroomPct float64
	Resolve     ModelResolver
	IO          *IOStreams // where estimateRun prints
}

// Bind sets the options from request parameters (flags, a query, a form).
func (o *EstimateOptions) Bind(l Lookup) error { return BindParams(o.params(), l) }

// params are the job flags and recommend's --headroom (one job vocabulary).
func (o *EstimateOptions) params() []param {
	return append(o.JobRequest.params(), headroomParam(&o.HeadroomPct))
}

// RunEstimate resolves the model and estimates the job on it.
func RunEstimate(ctx context.Context, o *EstimateOptions) (*fit.Result, error) {
	m, err := o.Resolve(ctx, o.Model, o.Params)
	if err != nil {
		return nil, err
	}
	return fit.Estimate(m, o.Job)
}

func (a *app) newEstimateOptions() *EstimateOptions {
	return &EstimateOptions{Resolve: a.resolveModel, IO: a.streams()}
}

// estimateRun is the CLI's run function: RunEstimate, printed to o.IO.
func estimateRun(ctx context.Context, o *EstimateOptions) error {
	res, err := RunEstimate(ctx, o)
	if err != nil {
		return err
	}
	return writeEstimate(o.IO, res, o.HeadroomPct)
}

// estimateAnswer is estimate's JSON (the CLI's, the API's and MCP's): the estimate and
// the need per GPU that recommend checks against an offer, device_total_gib with
// --headroom (CONTRACT: headroom_pct, need_per_gpu_gib).
type estimateAnswer struct {
	*fit.Result
	HeadroomPct   float64 `json:"headroom_pct"`
	NeedPerGPUGiB float64 `json:"need_per_gpu_gib"`
}

func newEstimateAnswer(r *fit.Result, headroomPct float64) estimateAnswer {
	return estimateAnswer{Result: r, HeadroomPct: headroomPct, NeedPerGPUGiB: fit.Round3(r.DeviceTotalGiB * (1 + headroomPct/100))}
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
			o := a.newEstimateOptions()
			if err := o.Bind(FlagLookup(cmd.Flags())); err != nil {
				return err
			}
			return estimateRun(cmd.Context(), o)
		},
	}
	registerParams(cmd.Flags(), (&EstimateOptions{}).params())
	return cmd
}

func writeEstimate(s *IOStreams, r *fit.Result, headroomPct float64) error {
	w := s.Out
	for _, warn := range r.Warnings {
		fmt.Fprintln(s.ErrOut, "warning:", warn)
	}
	a := newEstimateAnswer(r, headroomPct)
	switch s.Format {
	case "json":
		return writeJSON(w, a)
	case "csv":
		b := r.Breakdown
		return writeCSV(w, []string{"model", "task", "precision", "quant", "batch", "seq_len", "gpus", "shard", "trainable_params",
			"weights_gib", "gradients_gib", "optimizer_gib", "activations_gib", "kv_cache_gib", "workspace_gib", "peak_allocated_gib", "device_total_gib", "cpu_ram_gib", "peak_reserved_gib", "framework", "headroom_pct", "need_per_gpu_gib"},
			[][]string{{r.Model.Name, string(r.Job.Task), string(r.Job.Precision), string(r.Job.Quant), fmt.Sprint(r.Job.Batch), fmt.Sprint(r.Job.SeqLen), fmt.Sprint(r.Job.GPUs), string(r.Job.Shard), fmt.Sprint(r.TrainableParams),
				num(b.Weights, 3), num(b.Gradients, 3), num(b.Optimizer, 3), num(b.Activations, 3), num(b.KVCache, 3), num(b.Workspace, 3), num(r.PeakAllocatedGiB, 3), num(r.DeviceTotalGiB, 3), num(r.CPURAMGiB, 3), num(r.PeakReservedGiB, 3), string(r.Job.Framework), num(a.HeadroomPct, 1), num(a.NeedPerGPUGiB, 3)}})
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
	t.add("peak reserved (+ allocator cache)", num(r.PeakReservedGiB, 2))
	t.add("+ cuda context", num(r.DeviceTotalGiB-r.PeakReservedGiB-r.NCCLBuffersGiB, 2))
	if r.NCCLBuffersGiB > 0 {
		t.add("+ NCCL buffers", num(r.NCCLBuffersGiB, 2))
	}
	t.add("device total (must fit)", num(r.DeviceTotalGiB, 2))
	if sv := r.Serving; sv != nil && sv.MemoryFraction > 0 {
		t.add(fmt.Sprintf("  %s budget (%.2f of the GPU)", sv.Engine, sv.MemoryFraction), num(sv.BudgetGiB, 2))
	}
	if r.CPURAMGiB > 0 {
		t.add("host RAM", num(r.CPURAMGiB, 2))
	}
	if err := t.write(w, s.TTY); err != nil {
		return err
	}
	if r.Layout != "" {
		fmt.Fprintln(w, "\nlayout: "+r.Layout)
	}
	if r.Serving != nil && r.Serving.Launch != "" {
		fmt.Fprintln(w, "\nlaunch: "+r.Serving.Launch)
	}
	if len(r.Assumptions) > 0 {
		fmt.Fprintln(w, "\nassumptions:")
		for _, s := range r.Assumptions {
			fmt.Fprintln(w, "  - "+s)
		}
	}
	fmt.Fprintf(w, "\nwith %s %% headroom (recommend's check): %s GiB per GPU\n", num(a.HeadroomPct, 1), num(r.DeviceTotalGiB*(1+a.HeadroomPct/100), 2))
	return nil
}

func jobSummary(j fit.Job) string {
	parts := []string{string(j.Task), string(j.Precision)}
	if j.Framework != "" && j.Framework != fit.FrameworkHF {
		parts = append(parts, string(j.Framework))
	}
	if j.Quant.Quantized() {
		parts = append(parts, string(j.Quant))
	}
	if j.Task == fit.TaskImageGen {
		parts = append(parts, j.Resolution.String(), fmt.Sprintf("%d image(s)", j.Images))
	} else {
		parts = append(parts, fmt.Sprintf("batch %d", j.Batch), fmt.Sprintf("seq %d", j.SeqLen))
	}
	if j.GradCkpt {
		parts = append(parts, "grad-ckpt")
	}
	if j.Task == fit.TaskLoRA || j.Task == fit.TaskQLoRA {
		parts = append(parts, fmt.Sprintf("r=%d %s", j.LoRARank, strings.Join(j.LoRATargets, ",")))
	}
	if j.GPUs > 1 {
		how := string(j.Shard)
		if j.Shard == fit.ShardNone {
			how = "data parallel" // --shard none: a full replica per GPU (DDP)
			if !j.IsTraining() {
				how = "one replica each"
			}
		}
		parts = append(parts, fmt.Sprintf("%d GPUs %s", j.GPUs, how))
	}
	if j.Offload.Enabled() {
		parts = append(parts, "offload "+string(j.Offload))
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

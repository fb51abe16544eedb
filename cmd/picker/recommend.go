package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// recommendOutput is the CONTRACT's recommend JSON: the recommender's answer (estimate,
// offers, ladder, warnings, nearest_miss) plus the headroom it was judged with.
type recommendOutput struct {
	*fit.Recommendation
	HeadroomPct float64 `json:"headroom_pct"`
}

type recommendFlags struct {
	filters  offerFilters
	maxGPUs  int
	rank     string
	tokens   string
	top      int
	headroom float64
	mfu      float64
}

func (a *app) recommendCmd() *cobra.Command {
	var rf recommendFlags
	cmd := &cobra.Command{
		Use:   "recommend",
		Short: "Recommend the cheapest GPU instance whose VRAM just covers the job",
		Long: `recommend estimates the job's GPU memory, evaluates it on every stored offer at that
offer's GPU count (unless --gpus pins it), and lists the cheapest offers that fit, with
a savings ladder: what each memory-saving change (smaller micro-batch, mixed precision,
gradient checkpointing, LoRA, ZeRO-3/offload, QLoRA; int8/4-bit for inference) would
need and cost. Exit 3 when nothing fits, with the nearest miss.`,
		Example: `  picker recommend --model llama-2-7b --task qlora --batch 4 --seq-len 2048
  picker recommend --model meta-llama/Meta-Llama-3-70B --task full-ft --shard zero3 --purchase spot
  picker recommend --model mistral-7b --task lora --rank job --tokens 50e6 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := a.recommend(cmd.Context(), cmd.Flags(), &rf)
			if err != nil {
				return err
			}
			if err := a.writeRecommendation(a.stdout, out); err != nil {
				return err
			}
			if len(out.Offers) == 0 {
				return noFitError{"no offer fits: " + out.NearestMiss}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	registerJobFlags(fs)
	rf.filters.register(fs, "on-demand")
	fs.IntVar(&rf.maxGPUs, "max-gpus", 0, "largest instance to consider, in GPUs (0 = any)")
	fs.StringVar(&rf.rank, "rank", "hourly", "hourly (cheapest per hour) or job (cheapest for the whole job; needs --tokens)")
	fs.StringVar(&rf.tokens, "tokens", "", "training or generated tokens of the whole job (e.g. 2e9), for --rank job and time estimates")
	fs.IntVar(&rf.top, "top", 10, "how many offers to show")
	fs.Float64Var(&rf.headroom, "headroom", fit.DefaultHeadroomPct, "extra margin over device_total_gib, percent")
	fs.Float64Var(&rf.mfu, "mfu", 0, "override the time model's GEMM efficiency (share of dense peak, 0-1; 0 = per GPU generation)")
	return cmd
}

func (a *app) recommend(ctx context.Context, fs *pflag.FlagSet, rf *recommendFlags) (*recommendOutput, error) {
	vals := jobValues(fs)
	job, err := fit.ParseJob(vals)
	if err != nil {
		return nil, err
	}
	q, err := rf.filters.query()
	if err != nil {
		return nil, err
	}
	if rf.maxGPUs < 0 {
		return nil, pricing.Errorf(pricing.Invalid, "--max-gpus %d: must not be negative", rf.maxGPUs)
	}
	if rf.top < 1 {
		return nil, pricing.Errorf(pricing.Invalid, "--top %d: want at least 1", rf.top)
	}
	if rf.headroom < 0 || rf.headroom > 100 {
		return nil, pricing.Errorf(pricing.Invalid, "--headroom %v: want a percentage between 0 and 100", rf.headroom)
	}
	var tokens float64
	if rf.tokens != "" {
		tokens, err = strconv.ParseFloat(rf.tokens, 64)
		if err != nil || tokens <= 0 {
			return nil, pricing.Errorf(pricing.Invalid, "--tokens %q: want a positive number such as 2e9", rf.tokens)
		}
	}
	q.MaxGPUs = float64(rf.maxGPUs)
	m, err := a.resolveModel(ctx, fs)
	if err != nil {
		return nil, err
	}
	st, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	offers, err := st.Offers(ctx, q)
	if err != nil {
		return nil, err
	}
	_, pinned := vals["gpus"]
	rec, err := fit.Recommend(fit.RecommendInput{
		Model: m, Job: job, PinGPUs: pinned, Offers: offers,
		HeadroomPct: rf.headroom, Rank: rf.rank, Tokens: tokens, MFU: rf.mfu, Top: rf.top,
		Now: a.now(), StaleAfter: a.cfg.Recommend.StaleAfter.Duration,
	})
	if err != nil {
		return nil, err
	}
	return &recommendOutput{rec, rf.headroom}, nil
}

// fitColumns are the CSV columns of a recommended offer (CONTRACT offer fields).
var fitColumns = []string{"provider", "region", "zone", "instance_type", "gpu_model", "gpu_count", "gpu_mem_gib", "vcpus", "ram_gib",
	"purchase", "price_usd_hr", "observed_at", "source", "need_per_gpu_gib", "spare_per_gpu_gib", "est_hours", "est_cost_usd"}

func optNum(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v, 3)
}

func (a *app) writeRecommendation(w io.Writer, r *recommendOutput) error {
	if r.Offers == nil {
		r.Offers = []fit.Fit{}
	}
	switch a.output {
	case "json":
		return writeJSON(w, r)
	case "csv":
		rows := make([][]string, len(r.Offers))
		for i, f := range r.Offers {
			o := f.Offer
			rows[i] = []string{o.Provider, o.Region, o.Zone, o.InstanceType, o.GPUModel, num(o.GPUCount, 4), num(o.GPUMemGiB, 2), num(o.VCPUs, 2), num(o.RAMGiB, 2),
				string(o.Purchase), num(o.PriceUSDHr, 6), o.ObservedAt.UTC().Format("2006-01-02T15:04:05Z"), o.Source,
				num(f.NeedPerGPUGiB, 3), num(f.SparePerGPUGiB, 3), optNum(f.EstHours), optNum(f.EstCostUSD)}
		}
		return writeCSV(w, fitColumns, rows)
	}
	fmt.Fprintln(w, estimateSummary(r.Estimate, r.HeadroomPct))
	fmt.Fprintln(w)
	if len(r.Offers) > 0 {
		withCost := slices.ContainsFunc(r.Offers, func(f fit.Fit) bool { return f.EstCostUSD != nil })
		headers := []string{"PROVIDER", "REGION", "INSTANCE", "GPU", "GPUS", "GiB/GPU", "NEED/GPU", "SPARE", "PURCHASE", "$/HR"}
		if withCost {
			headers = append(headers, "HOURS", "JOB $")
		}
		headers = append(headers, "AGE")
		t := &table{headers: headers}
		for _, f := range r.Offers {
			o := f.Offer
			region := o.Region
			if o.Zone != "" {
				region += " (" + o.Zone + ")"
			}
			cells := []string{o.Provider, region, o.InstanceType, o.GPUModel, num(o.GPUCount, 3), num(o.MemPerDeviceGiB(), 1), num(f.NeedPerGPUGiB, 1), num(f.SparePerGPUGiB, 1), string(o.Purchase), usd(o.PriceUSDHr)}
			if withCost {
				cells = append(cells, optFmt(f.EstHours, 1), optFmt(f.EstCostUSD, 2))
			}
			t.add(append(cells, pricing.FormatAge(a.now().Sub(o.ObservedAt)))...)
		}
		if err := t.write(w, a.tty); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(w, "no offer fits: "+r.NearestMiss)
	}
	if len(r.Ladder) > 0 {
		fmt.Fprintln(w, "\nsavings ladder (each change on its own):")
		t := &table{headers: []string{"CHANGE", "FLAGS", "NEED/GPU", "CHEAPEST", "$/HR", "SAVING", "TRADE-OFF"}}
		for _, s := range r.Ladder {
			cheapest, price, saving := "nothing fits", "-", "-"
			if s.Cheapest != nil {
				cheapest = fmt.Sprintf("%s %s %s", s.Cheapest.Provider, s.Cheapest.Region, s.Cheapest.InstanceType)
				price = usd(s.Cheapest.PriceUSDHr)
			}
			if s.SavingPct != nil {
				saving = num(*s.SavingPct, 1) + " %"
			}
			t.add(s.Change, s.Flags, num(s.DeviceTotalGiB, 1), cheapest, price, saving, s.Tradeoff)
		}
		if err := t.write(w, a.tty); err != nil {
			return err
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintln(a.stderr, "warning:", warn)
	}
	return nil
}

func optFmt(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

// estimateSummary is the one-line estimate: the need per GPU and the largest parts.
func estimateSummary(r *fit.Result, headroomPct float64) string {
	if r == nil {
		return ""
	}
	b := r.Breakdown
	parts := []struct {
		name string
		v    float64
	}{{"weights", b.Weights}, {"gradients", b.Gradients}, {"optimizer", b.Optimizer}, {"activations", b.Activations}, {"kv cache", b.KVCache}, {"workspace", b.Workspace},
		{"cuda context+allocator", r.DeviceTotalGiB - r.PeakAllocatedGiB}}
	slices.SortStableFunc(parts, func(x, y struct {
		name string
		v    float64
	}) int {
		switch {
		case x.v > y.v:
			return -1
		case x.v < y.v:
			return 1
		}
		return 0
	})
	var big []string
	for _, p := range parts[:3] {
		if p.v > 0 {
			big = append(big, fmt.Sprintf("%s %s", p.name, num(p.v, 1)))
		}
	}
	gpus := ""
	if r.Job.GPUs > 1 {
		gpus = fmt.Sprintf(" on each of %d GPUs", r.Job.GPUs)
	}
	return fmt.Sprintf("%s, %s: needs %s GiB per GPU%s (%s); %s GiB with %s %% headroom", r.Model.Name, jobSummary(r.Job),
		num(r.DeviceTotalGiB, 1), gpus, strings.Join(big, ", "), num(r.DeviceTotalGiB*(1+headroomPct/100), 1), num(headroomPct, 1))
}

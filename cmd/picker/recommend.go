package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// Time model (issue 15).
	promptTokens, outputTokens, requests string
	engine, setup, deadline              string
}

// positive parses a count flag ("" = 0); a bad value names the flag.
func positive(flag, v string) (float64, error) {
	if v == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, pricing.Errorf(pricing.Invalid, "--%s %q: want a non-negative number such as 1000", flag, v)
	}
	return f, nil
}

// duration parses a --setup/--deadline value: a Go duration ("90m", "6h") or a bare
// number of hours.
func duration(flag, v string) (time.Duration, error) {
	if h, err := strconv.ParseFloat(v, 64); err == nil && h >= 0 {
		return time.Duration(h * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, pricing.Errorf(pricing.Invalid, "--%s %q: want a duration such as 6h or 90m", flag, v)
	}
	return d, nil
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
	fs.StringVar(&rf.promptTokens, "prompt-tokens", "", "inference: prompt tokens per request")
	fs.StringVar(&rf.outputTokens, "output-tokens", "", "inference: generated tokens per request")
	fs.StringVar(&rf.requests, "requests", "", "inference: requests in the job (--tokens defaults to requests x output tokens)")
	fs.StringVar(&rf.engine, "engine", fit.DefaultEngine, "inference engine: "+strings.Join(fit.Engines, ", "))
	fs.StringVar(&rf.setup, "setup", "", "start-up overhead billed before the job, e.g. 10m (default: 5 min + model download at 1 Gbit/s)")
	fs.StringVar(&rf.deadline, "deadline", "", "only offers that finish (setup + run) within this, e.g. 6h")
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
	in := fit.RecommendInput{Engine: rf.engine}
	if in.PromptTokens, err = positive("prompt-tokens", rf.promptTokens); err != nil {
		return nil, err
	}
	if in.OutputTokens, err = positive("output-tokens", rf.outputTokens); err != nil {
		return nil, err
	}
	if in.Requests, err = positive("requests", rf.requests); err != nil {
		return nil, err
	}
	if rf.setup != "" {
		d, err := duration("setup", rf.setup)
		if err != nil {
			return nil, err
		}
		h := d.Hours()
		in.SetupHours = &h
	}
	if rf.deadline != "" {
		if in.Deadline, err = duration("deadline", rf.deadline); err != nil {
			return nil, err
		}
		if in.Deadline == 0 {
			return nil, pricing.Errorf(pricing.Invalid, "--deadline %q: want a positive duration such as 6h", rf.deadline)
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
	in.Model, in.Job, in.PinGPUs, in.Offers = m, job, pinned, offers
	in.HeadroomPct, in.Rank, in.Tokens, in.MFU, in.Top = rf.headroom, rf.rank, tokens, rf.mfu, rf.top
	in.Now, in.StaleAfter = a.now(), a.cfg.Recommend.StaleAfter.Duration
	rec, err := fit.Recommend(in)
	if err != nil {
		return nil, err
	}
	return &recommendOutput{rec, rf.headroom}, nil
}

// fitColumns are the CSV columns of a recommended offer (CONTRACT offer fields).
var fitColumns = []string{"provider", "region", "zone", "instance_type", "gpu_model", "gpu_count", "gpu_mem_gib", "vcpus", "ram_gib",
	"purchase", "price_usd_hr", "observed_at", "source", "need_per_gpu_gib", "spare_per_gpu_gib", "est_hours", "est_cost_usd",
	"setup_hours", "billed_hours", "tokens_per_s", "ttft_s", "usd_per_m_output_tokens", "time_bound", "frontier"}

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
				num(f.NeedPerGPUGiB, 3), num(f.SparePerGPUGiB, 3), optNum(f.EstHours), optNum(f.EstCostUSD),
				optNum(f.SetupHours), optNum(f.BilledHours), optNum(f.TokensPerSec), optNum(f.TTFTSec), optNum(f.USDPerMOutTokens), f.TimeBound, strconv.FormatBool(f.Frontier)}
		}
		return writeCSV(w, fitColumns, rows)
	}
	fmt.Fprintln(w, estimateSummary(r.Estimate, r.HeadroomPct))
	fmt.Fprintln(w)
	if len(r.Offers) > 0 {
		withCost := slices.ContainsFunc(r.Offers, func(f fit.Fit) bool { return f.EstCostUSD != nil })
		withServe := slices.ContainsFunc(r.Offers, func(f fit.Fit) bool { return f.TTFTSec != nil })
		withRate := slices.ContainsFunc(r.Offers, func(f fit.Fit) bool { return f.TokensPerSec != nil })
		headers := []string{"PROVIDER", "REGION", "INSTANCE", "GPU", "GPUS", "GiB/GPU", "NEED/GPU", "SPARE", "PURCHASE", "$/HR"}
		if withRate {
			headers = append(headers, "TOK/S")
		}
		if withServe {
			headers = append(headers, "TTFT S", "$/M TOK")
		}
		if withCost {
			headers = append(headers, "HOURS", "JOB $")
		}
		if a.verbose && len(r.Frontier) > 0 {
			headers = append(headers, "FRONTIER")
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
			if withRate {
				cells = append(cells, optFmt(f.TokensPerSec, 0))
			}
			if withServe {
				cells = append(cells, optFmt(f.TTFTSec, 3), optFmt(f.USDPerMOutTokens, 3))
			}
			if withCost {
				cells = append(cells, optFmt(f.EstHours, 2), optFmt(f.EstCostUSD, 2))
			}
			if a.verbose && len(r.Frontier) > 0 {
				mark := ""
				if f.Frontier {
					mark = "*"
				}
				cells = append(cells, mark)
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
	if a.verbose && len(r.Frontier) > 0 {
		fmt.Fprintln(w, "\ntime-cost frontier (nothing else is both cheaper and faster):")
		t := &table{headers: []string{"PROVIDER", "REGION", "INSTANCE", "GPU", "GPUS", "$/HR", "SETUP+RUN H", "BILLED H", "JOB $", "BOUND"}}
		for _, f := range r.Frontier {
			total := *f.EstHours
			if f.SetupHours != nil {
				total += *f.SetupHours
			}
			t.add(f.Provider, f.Region, f.InstanceType, f.GPUModel, num(f.GPUCount, 3), usd(f.PriceUSDHr), num(total, 2), optFmt(f.BilledHours, 2), optFmt(f.EstCostUSD, 2), f.TimeBound)
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

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// RecommendResult is the CONTRACT's recommend JSON: the recommender's answer (estimate,
// offers, ladder, warnings, nearest_miss) plus the headroom it was judged with.
type RecommendResult struct {
	*recommend.Recommendation
	HeadroomPct float64 `json:"headroom_pct"`
}

// ModelResolver turns --model/--params into a model (modelref.Resolve with the
// environment's Hub settings; tests pass a catalog-only one).
type ModelResolver func(ctx context.Context, ref, params string) (*model.Model, error)

// RecommendOptions is `picker recommend` (GET /v1/recommend): the job, the offer query,
// the ranking knobs, and the lazily opened dependencies.
type RecommendOptions struct {
	JobRequest
	Filters     offerFilters
	MaxGPUs     int
	Rank        recommend.Rank
	Tokens      float64 // 0 = rank per unit of work
	Images      float64 // image generation: images in the job (--image-count); 0 = rank per image
	Steps       int     // image generation: denoising steps; 0 = the pipeline's default
	Top         int
	HeadroomPct float64
	MFU         float64 // 0 = the time model's per-generation efficiency
	// Time model (issue 15): the requests of an inference job (the engine and the prompt
	// and output tokens are job flags: JobRequest.Job), start-up overhead and deadline.
	Requests   float64
	SetupHours *float64
	Deadline   time.Duration
	ByRegion   bool
	Vendor     string // fit.VendorAny, VendorNVIDIA or VendorAMD

	Bill billOptions // the all-in bill and spot risk (allin.go)

	Resolve    ModelResolver
	Store      func(context.Context) (offerStore, error)
	IO         *IOStreams // where recommendRun prints; the API and web pages render the result themselves
	Now        func() time.Time
	StaleAfter time.Duration // [recommend] stale_after; 0 = no freshness warning
	// Memo, in the daemon, keeps answers until the offers change (recmemo.go).
	Memo *recommendMemo
	// Log gets -v's detail: the model resolved, the offers read, the ladder's verdicts.
	Log *slog.Logger
	// IgnoreQuota is --ignore-quota; launch holds the quotas and capacity word the
	// request read (launch.go).
	IgnoreQuota bool
	launch      *launchFacts
}

func (o *RecommendOptions) params() []param {
	ps := append(append(o.JobRequest.params(), o.Filters.params("on-demand", false)...), o.launchParams()...)
	ps = append(ps,
		param{name: "max-gpus", kind: kindInt, usage: "largest instance to consider, in GPUs (0 = any)",
			set: func(v string) (err error) { o.MaxGPUs, err = parseInt("max-gpus", 0)(v); return }},
		param{name: "rank", usage: "job (the cost of the work: the job's dollars with --tokens/--requests/--image-count, else per million tokens or per image) or hourly (the price per hour)", def: string(recommend.RankJob),
			set: func(v string) (err error) { o.Rank, err = recommend.ParseRank(v); return }},
		param{name: "tokens", typ: "float", usage: "training or generated tokens of the whole job (e.g. 2e9): rank by and show the job's hours and dollars", set: o.setTokens},
		param{name: "image-count", kind: kindFloat, usage: "image generation: images in the whole job (--images is per batch): rank by the job's dollars", set: nonNegative("image-count", &o.Images)},
		param{name: "steps", kind: kindInt, usage: "image generation: denoising steps per image (default: the pipeline's)",
			set: func(v string) (err error) { o.Steps, err = parseInt("steps", 1)(v); return }},
		param{name: "by-region", kind: kindBool, usage: "list an instance once per region (default: one row per instance and price, with its regions)",
			set: func(v string) (err error) { o.ByRegion, err = parseBool("by-region", v); return }},
		param{name: "top", kind: kindInt, usage: "how many offers to show", def: "10",
			set: func(v string) (err error) { o.Top, err = parseInt("top", 1)(v); return }},
		headroomParam(&o.HeadroomPct),
		param{name: "vendor", usage: "GPU vendor: nvidia, amd or any", def: recommend.VendorAny,
			set: func(v string) (err error) { o.Vendor, err = recommend.ParseVendor(v); return }},
		param{name: "mfu", kind: kindFloat, usage: "override the time model's GEMM efficiency (share of dense peak, 0-1; 0 = per GPU generation)",
			set: func(v string) (err error) { o.MFU, err = parseFloat("mfu")(v); return }},
		param{name: "requests", kind: kindFloat, usage: "inference: requests in the job (--tokens defaults to requests x output tokens)", set: nonNegative("requests", &o.Requests)},
		param{name: "setup", typ: "duration", usage: "start-up overhead billed before the job, e.g. 10m (default: 5 min + model download at 1 Gbit/s)", set: o.setSetup},
		param{name: "deadline", typ: "duration", usage: "only offers that finish (setup + run) within this, e.g. 6h", set: o.setDeadline},
	)
	return append(ps, o.Bill.params()...) // allin.go
}

// parseDuration reads a --setup/--deadline value: a Go duration ("90m", "6h") or a
// bare number of hours.
func parseDuration(name, v string) (time.Duration, error) {
	if h, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && h >= 0 {
		return time.Duration(h * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return 0, pricing.Errorf(pricing.Invalid, "--%s %q: want a duration such as 6h or 90m", name, v)
	}
	return d, nil
}

func (o *RecommendOptions) setSetup(v string) error {
	d, err := parseDuration("setup", v)
	if err != nil {
		return err
	}
	h := d.Hours()
	o.SetupHours = &h
	return nil
}

func (o *RecommendOptions) setDeadline(v string) error {
	d, err := parseDuration("deadline", v)
	if err == nil && d == 0 {
		err = pricing.Errorf(pricing.Invalid, "--deadline %q: want a positive duration such as 6h", v)
	}
	o.Deadline = d
	return err
}

func (o *RecommendOptions) setTokens(v string) error {
	t, err := strconv.ParseFloat(v, 64)
	if v != "" && (err != nil || t <= 0) {
		return pricing.Errorf(pricing.Invalid, "--tokens %q: want a positive number such as 2e9", v)
	}
	o.Tokens = t
	return nil
}

// headroomParam is --headroom, recommend's margin over device_total_gib, which estimate
// takes too (one job vocabulary).
func headroomParam(dst *float64) param {
	return param{name: "headroom", kind: kindFloat, usage: "extra margin over device_total_gib, percent", def: strconv.Itoa(recommend.DefaultHeadroomPct),
		set: func(v string) error {
			h, err := parseFloat("headroom")(v)
			if err != nil {
				return err
			}
			if h < 0 || h > 100 {
				return pricing.Errorf(pricing.Invalid, "--headroom %v: want a percentage between 0 and 100", h)
			}
			*dst = h
			return nil
		}}
}

// Bind sets the options from request parameters (flags, a query, a form).
func (o *RecommendOptions) Bind(l Lookup) error { return BindParams(o.params(), l) }

// RunRecommend resolves the model, reads the matching offers and ranks them: command ->
// bind (done) -> resolve model -> fit.Recommend -> freshness warnings. Nothing fits is not
// an error here: the result's Offers is empty and NearestMiss says why.
func RunRecommend(ctx context.Context, o *RecommendOptions) (*RecommendResult, error) {
	m, err := o.Resolve(ctx, o.Model, o.Params)
	if err != nil {
		return nil, err
	}
	st, err := o.Store(ctx)
	if err != nil {
		return nil, err
	}
	if err := o.Filters.checkNames(ctx, st); err != nil {
		return nil, err
	}
	q := o.Filters.q
	q.MaxGPUs = float64(o.MaxGPUs)
	in := recommend.RecommendInput{
		Model: m, Job: o.Job, PinGPUs: o.PinGPUs,
		HeadroomPct: o.HeadroomPct, Rank: o.Rank, Tokens: o.Tokens, Images: o.Images, Steps: o.Steps, MFU: o.MFU, Top: o.Top,
		Engine: string(o.Job.Engine), PromptTokens: float64(o.Job.PromptTokens), OutputTokens: float64(o.Job.OutputTokens), Requests: o.Requests,
		SetupHours: o.SetupHours, Deadline: o.Deadline, Vendor: o.Vendor, ByRegion: o.ByRegion,
	}
	start := time.Now()
	if err := o.Bill.apply(ctx, st, &in); err != nil { // allin.go
		return nil, err
	}
	if o.launch, err = loadLaunch(ctx, st, &in, o.IgnoreQuota); err != nil { // launch.go
		return nil, err
	}
	rec, noOffers, nRead, err := o.recommend(ctx, st, q, in) // recmemo.go
	if err != nil {
		return nil, err
	}
	if noOffers {
		rec.NearestMiss += "; widen them or run `picker refresh`"
	}
	if o.Log != nil {
		o.Log.Debug("recommend", "model", m.Name, "source", m.Source, "params", m.Params(), "offers_read", nRead,
			"fits_shown", len(rec.Offers), "ladder", len(rec.Ladder), "rejected", len(rec.Rejected), "took", time.Since(start).Round(time.Millisecond))
	}
	rec.Warnings = append(rec.Warnings, freshnessWarnings(rec.Offers, o.Now(), o.StaleAfter)...)
	rec.Warnings = append(rec.Warnings, o.launch.warnings(rec.Offers, o.Now())...)
	if rec.Offers == nil {
		rec.Offers = []recommend.Fit{}
	}
	return &RecommendResult{rec, o.HeadroomPct}, nil
}

// freshnessWarnings says which providers' prices in the answer are older than
// staleAfter, and when every price comes from the embedded snapshot, how to get live
// ones. A zero staleAfter disables them.
func freshnessWarnings(fits []recommend.Fit, now time.Time, staleAfter time.Duration) []string {
	if staleAfter <= 0 || now.IsZero() {
		return nil
	}
	var w []string
	stale := map[string]time.Duration{}
	snapshotOnly := len(fits) > 0
	for _, f := range fits {
		if age := now.Sub(f.ObservedAt); age > staleAfter && age > stale[f.Provider] {
			stale[f.Provider] = age
		}
		if f.Source != pricing.SourceSnapshot {
			snapshotOnly = false
		}
	}
	if len(stale) > 0 {
		var names []string
		for p, age := range stale {
			names = append(names, fmt.Sprintf("%s (%s)", p, formatAge(age)))
		}
		slices.Sort(names)
		w = append(w, fmt.Sprintf("prices older than %s from %s", formatAge(staleAfter), strings.Join(names, ", ")))
	}
	if snapshotOnly {
		w = append(w, "every price shown comes from the embedded snapshot; run `picker refresh` for live prices")
	}
	return w
}

func (a *app) newRecommendOptions() *RecommendOptions {
	return &RecommendOptions{Resolve: a.resolveModel, Store: a.offerStore, IO: a.streams(), Now: a.now, StaleAfter: a.cfg.Recommend.StaleAfter.Duration,
		Log: a.log, Memo: a.recMemo}
}

func (a *app) recommendCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "recommend",
		Short: "Recommend the GPU instances that fit the job, cheapest for the work first",
		Long: `recommend estimates the job's GPU memory and time, evaluates it on every stored offer at
that offer's GPU count (unless --gpus pins it), and lists the offers that fit, ranked by
the cost of the work: the job's dollars with --tokens (--requests, --image-count), else
the dollars per million tokens or per image (--rank hourly: the price per hour). The
savings ladder lists each memory-saving change (smaller micro-batch with gradient
accumulation, mixed precision, gradient checkpointing, LoRA, ZeRO/offload, QLoRA;
fp8/int8/4-bit for inference) that would do the job for less, with what it needs, costs
and how much slower it runs. Exit 3 when nothing fits, with the nearest miss.`,
		Example: `  picker recommend --model llama-2-7b --task qlora --batch 4 --seq-len 2048
  picker recommend --model meta-llama/Meta-Llama-3-70B --task full-ft --shard zero3 --purchase spot
  picker recommend --model mistral-7b --task lora --tokens 50e6 -o json
  picker recommend --model flux.1-dev --task image-gen --image-count 10000 --rank hourly`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o := a.newRecommendOptions()
			if err := o.Bind(FlagLookup(cmd.Flags())); err != nil {
				return err
			}
			return recommendRun(cmd.Context(), o)
		},
	}
	registerParams(cmd.Flags(), (&RecommendOptions{}).params())
	return cmd
}

// recommendRun is the CLI's run function: RunRecommend, then the answer printed to
// o.IO; nothing fits is noFitError (exit 3) after the answer is printed.
func recommendRun(ctx context.Context, o *RecommendOptions) error {
	out, err := RunRecommend(ctx, o)
	if err != nil {
		return err
	}
	if err := writeRecommendation(o.IO, out); err != nil {
		return err
	}
	return noFit(out)
}

// noFit is the error (exit 3, HTTP 404) of an answer where nothing fits.
func noFit(out *RecommendResult) error {
	if len(out.Offers) == 0 {
		return noFitError{"no offer fits: " + out.NearestMiss}
	}
	return nil
}

// fitColumns are the CSV columns of a recommended offer (CONTRACT offer fields).
var fitColumns = []string{"provider", "region", "zone", "instance_type", "gpu_model", "gpu_count", "gpu_mem_gib", "vcpus", "ram_gib",
	"purchase", "price_usd_hr", "observed_at", "source", "need_per_gpu_gib", "spare_per_gpu_gib", "est_hours", "est_cost_usd",
	"nodes", "cluster_price_usd_hr",
	"setup_hours", "billed_hours", "tokens_per_s", "ttft_s", "usd_per_m_output_tokens", "usd_per_m_tokens", "images_per_s", "usd_per_image", "time_bound", "frontier", "regions",
	"compute_usd", "boot_usd", "restart_usd", "disk_usd", "disk_gib", "egress_usd", "upload_gb", "spot_band", "available"}

func optNum(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v, 3)
}

// optNum6 is optNum for costs per unit of work, kept to six decimals (a cent per image
// is 0.01).
func optNum6(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v, 6)
}

func writeRecommendation(s *IOStreams, r *RecommendResult) error {
	w := s.Out
	switch s.Format {
	case "json":
		return writeJSON(w, r)
	case "csv":
		rows := make([][]string, len(r.Offers))
		for i, f := range r.Offers {
			o := f.Offer
			ss := pricing.SpreadsheetSafe // provider text: a leading = + - @ is not a formula
			rows[i] = []string{ss(o.Provider), ss(o.Region), ss(o.Zone), ss(o.InstanceType), ss(o.GPUModel), num(o.GPUCount, 4), num(o.GPUMemGiB, 2), num(o.VCPUs, 2), num(o.RAMGiB, 2),
				string(o.Purchase), num(o.PriceUSDHr, 6), o.ObservedAt.UTC().Format("2006-01-02T15:04:05Z"), o.Source,
				num(f.NeedPerGPUGiB, 3), num(f.SparePerGPUGiB, 3), optNum(f.EstHours), optNum(f.EstCostUSD),
				num(float64(max(f.Nodes, 1)), 0), num(o.PriceUSDHr*float64(max(f.Nodes, 1)), 6),
				optNum(f.SetupHours), optNum(f.BilledHours), optNum(f.TokensPerSec), optNum(f.TTFTSec), optNum6(f.USDPerMOutTokens),
				optNum6(f.USDPerMTokens), optNum(f.ImagesPerSec), optNum6(f.USDPerImage), f.TimeBound, strconv.FormatBool(f.Frontier), ss(strings.Join(f.Regions, " "))}
			rows[i] = append(rows[i], billCells(&f)...) // recommend_csv.go
		}
		return writeCSV(w, fitColumns, rows)
	}
	if s.Quiet {
		return writeQuietRecommendation(s, r)
	}
	fmt.Fprintln(w, estimateSummary(r.Estimate, r.HeadroomPct))
	fmt.Fprintln(w)
	if len(r.Offers) > 0 {
		if err := writeFits(s, r); err != nil {
			return err
		}
		if s.Verbose {
			writeServeLines(w, r.Offers) // serveline.go
		}
		writeBill(s, r.Recommendation) // allin.go
	} else {
		fmt.Fprintln(w, "no offer fits: "+r.NearestMiss)
	}
	if err := writeExclusions(s, r.Excluded); err != nil {
		return err
	}
	if err := writeLadder(s, r.Recommendation); err != nil {
		return err
	}
	if s.Verbose && len(r.Frontier) > 0 {
		if err := writeFrontier(w, s.TTY, r.Frontier); err != nil {
			return err
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintln(s.ErrOut, "warning:", warn)
	}
	if s.Verbose {
		if r.Estimate != nil {
			// The framework's defaults are in the headline already.
			fw := string(r.Estimate.Job.Framework) + " default:"
			for _, a := range r.Estimate.Assumptions {
				if !strings.HasPrefix(a, fw) {
					fmt.Fprintln(s.ErrOut, "assumption:", a)
				}
			}
		}
		for _, f := range r.Offers {
			for _, n := range f.Notes {
				if !saidByWarning(n, r.Warnings) {
					fmt.Fprintf(s.ErrOut, "note: %s %s: %s\n", f.Provider, f.InstanceType, n)
				}
			}
		}
	}
	return nil
}

// saidByWarning reports whether a warning already says note: recommend turns the notes
// every offer of a GPU model shares into one warning for that model (the note, perhaps
// with a parenthesis of advice), and -v says each thing once.
func saidByWarning(note string, warnings []string) bool {
	return slices.ContainsFunc(warnings, func(w string) bool { return strings.HasPrefix(w, note) })
}

// writeFits is the table of the offers that fit, and the multi-node plans among them.
func writeFits(s *IOStreams, r *RecommendResult) error {
	t := offerTable(r.Recommendation, s.Verbose, func(f recommend.Fit) string { return formatAge(s.Now().Sub(f.ObservedAt)) })
	if err := t.write(s.Out, s.TTY); err != nil {
		return err
	}
	writeClusters(s.Out, r.Offers)
	if c := r.CheapestCluster; c != nil {
		fmt.Fprint(s.Out, "cheapest multi-node plan: ")
		writeClusters(s.Out, []recommend.Fit{*c})
	}
	return nil
}

// writeQuietRecommendation is -q's answer: the offers' table alone, for a script to read.
// When nothing fits there is no table, and the error (exit 3) carries the nearest miss.
func writeQuietRecommendation(s *IOStreams, r *RecommendResult) error {
	if len(r.Offers) == 0 {
		return nil
	}
	return writeFits(s, r)
}

// rankedColumn is the table's header and cell for the figure the offers are ranked by,
// when it is not the price per hour; ok is false for --rank hourly.
func rankedColumn(rankedBy string) (header string, cell func(recommend.Fit) string, ok bool) {
	header = recommend.RankedLabel(rankedBy)
	return header, func(f recommend.Fit) string { return optUSD(recommend.RankedValue(rankedBy, &f), "-") }, header != ""
}

// offerTable is the recommended offers' table: the ranked figure first among the prices,
// $/HR beside it, then speed, time and job cost where known.
func offerTable(r *recommend.Recommendation, verbose bool, age func(recommend.Fit) string) *table {
	has := func(p func(f recommend.Fit) bool) bool { return slices.ContainsFunc(r.Offers, p) }
	rankHeader, rankCell, ranked := rankedColumn(r.RankedBy)
	withServe := has(func(f recommend.Fit) bool { return f.TTFTSec != nil })
	multi := has(func(f recommend.Fit) bool { return f.Nodes > 1 })
	nodes := func(f recommend.Fit) float64 { return float64(max(f.Nodes, 1)) }
	hosts := has(func(f recommend.Fit) bool { return f.Host.Stated() })
	// Each column: its header, whether this answer shows it, its cell.
	cols := []struct {
		header string
		on     bool
		cell   func(f recommend.Fit) string
	}{
		{"PROVIDER", true, func(f recommend.Fit) string { return f.Provider }},
		{"REGION", true, func(f recommend.Fit) string { return regionCell(f) }},
		{"INSTANCE", true, func(f recommend.Fit) string { return f.InstanceType }},
		{"GPU", true, func(f recommend.Fit) string { return f.GPUModel }},
		{"GPUS", true, func(f recommend.Fit) string { return num(f.GPUCount, 3) }},
		{"GiB/GPU", true, func(f recommend.Fit) string { return num(f.MemPerDeviceGiB(), 1) }},
		{"NEED/GPU", true, func(f recommend.Fit) string { return num(f.NeedPerGPUGiB, 1) }},
		{"SPARE", true, func(f recommend.Fit) string { return num(f.SparePerGPUGiB, 1) }},
		{"PURCHASE", true, func(f recommend.Fit) string { return string(f.Purchase) }},
		{rankHeader, ranked, rankCell},
		{"$/HR", true, func(f recommend.Fit) string { return usd(f.PriceUSDHr) }},
		{"NODES", multi, func(f recommend.Fit) string { return num(nodes(f), 0) }},
		{"CLUSTER $/HR", multi, func(f recommend.Fit) string { return usd(f.PriceUSDHr * nodes(f)) }},
		{"TOK/S", has(func(f recommend.Fit) bool { return f.TokensPerSec != nil }), func(f recommend.Fit) string { return optFmt(f.TokensPerSec, 0) }},
		{"IMG/S", has(func(f recommend.Fit) bool { return f.ImagesPerSec != nil }), func(f recommend.Fit) string { return optFmt(f.ImagesPerSec, 3) }},
		{"TTFT S", withServe, func(f recommend.Fit) string { return optFmt(f.TTFTSec, 3) }},
		{"$/M OUT", withServe && r.RankedBy != recommend.RankedByMOutTokens, func(f recommend.Fit) string { return optUSD(f.USDPerMOutTokens, "-") }},
		{"HOURS", has(func(f recommend.Fit) bool { return f.EstHours != nil }), func(f recommend.Fit) string { return optFmt(f.EstHours, 2) }},
		{"JOB $", r.RankedBy != recommend.RankedByJobCost && has(func(f recommend.Fit) bool { return f.EstCostUSD != nil }),
			func(f recommend.Fit) string { return optUSD(f.EstCostUSD, "-") }},
		// Host facts (marketplace hosts), with -v where any offer states them (hostfacts.go).
		{"RELIABILITY", verbose && hosts, func(f recommend.Fit) string { return hostNum(f.Host.Reliability, 3) }},
		{"MAX CUDA", verbose && hosts, func(f recommend.Fit) string { return hostNum(f.Host.MaxCUDA, 1) }},
		{"NET MB/S", verbose && hosts, func(f recommend.Fit) string { return hostNet(f.Host) }},
		{"FRONTIER", verbose && len(r.Frontier) > 0, func(f recommend.Fit) string {
			if f.Frontier {
				return "*"
			}
			return ""
		}},
		{"AGE", true, age},
	}
	t := &table{}
	for _, c := range cols {
		if c.on {
			t.headers = append(t.headers, c.header)
		}
	}
	for _, f := range r.Offers {
		var cells []string
		for _, c := range cols {
			if c.on {
				cells = append(cells, c.cell(f))
			}
		}
		t.add(cells...)
	}
	return t
}

// regionCell is an offer's region (and zone), or the first of the regions it is offered
// in at this price and how many more.
func regionCell(f recommend.Fit) string {
	region := f.Region
	if f.Zone != "" {
		region += " (" + f.Zone + ")"
	}
	if n := len(f.Regions); n > 3 {
		region = fmt.Sprintf("%s +%d", strings.Join(f.Regions[:3], ","), n-3)
	} else if n > 1 {
		region = strings.Join(f.Regions, ",")
	}
	return region
}

// writeClusters spells out the multi-node plans (--nodes) among the offers: the $/HR
// column is per instance; a cluster costs nodes × that.
func writeClusters(w io.Writer, offers []recommend.Fit) {
	for _, f := range offers {
		if f.Nodes > 1 {
			fmt.Fprintf(w, "%d × %s %s %s = %d GPUs at %s/h (%s): %s\n", f.Nodes, f.Provider, f.Region, f.InstanceType,
				f.GPUsUsed*f.Nodes, usd(f.ClusterPriceUSDHr), f.Interconnect, f.Layout)
		}
	}
}

// writeFrontier is -v's time-cost frontier: the offers nothing beats on both cost and
// time, cheapest first.
func writeFrontier(w io.Writer, tty bool, front []recommend.Fit) error {
	fmt.Fprintln(w, "\ntime-cost frontier (nothing else is both cheaper and faster):")
	t := &table{headers: []string{"PROVIDER", "REGION", "INSTANCE", "GPU", "GPUS", "$/HR", "SETUP+RUN H", "BILLED H", "JOB $", "BOUND"}}
	for _, f := range front {
		total := *f.EstHours
		if f.SetupHours != nil {
			total += *f.SetupHours
		}
		t.add(f.Provider, f.Region, f.InstanceType, f.GPUModel, num(f.GPUCount, 3), usd(f.PriceUSDHr), num(total, 2), optFmt(f.BilledHours, 2), optFmt(f.EstCostUSD, 2), f.TimeBound)
	}
	return t.write(w, tty)
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
		{reserveName(r), r.DeviceTotalGiB - r.PeakAllocatedGiB}}
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
	var defaults []string
	for _, a := range r.Assumptions {
		if strings.HasPrefix(a, string(r.Job.Framework)+" default:") {
			defaults = append(defaults, strings.TrimPrefix(a, string(r.Job.Framework)+" default: "))
		}
	}
	tail := ""
	if len(defaults) > 0 {
		tail = "\n" + string(r.Job.Framework) + " defaults: " + strings.Join(defaults, "; ")
	}
	return fmt.Sprintf("%s, %s: needs %s GiB per GPU%s (%s); %s GiB with %s %% headroom", r.Model.Name, jobSummary(r.Job),
		num(r.DeviceTotalGiB, 1), gpus, strings.Join(big, ", "), num(r.DeviceTotalGiB*(1+headroomPct/100), 1), num(headroomPct, 1)) + tail
}

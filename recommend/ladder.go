package recommend

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/pricing"
)

// The savings ladder: each standard memory technique, written as the job flags that ask
// for it, applied on its own to the job as asked. A rung is shown only when it lowers the
// need per GPU and its best offer does the work for less than the top offer does the job
// as asked, judged by the ranking's own figure (the job's dollars, the dollars per unit
// of work, or with --rank hourly the price per hour) at the rung's own speed on its own
// offer; or when the job fits nowhere and the rung makes it fit. The others are listed
// as rejected with the reason.
// Rungs are applied through JobParams, the same parsers the CLI and the API bind with, so
// `picker recommend` with the job's flags plus a rung's flags gives the rung's answer.
// Plan is the cheapest combination of rungs, found greedily.

// LadderStep is one memory-saving change the job could make, estimated on its own
// against the original job.
type LadderStep struct {
	Change string `json:"change"`
	// Flags is how to ask for it on the command line, added to the job's own flags.
	Flags          string  `json:"flags"`
	DeviceTotalGiB float64 `json:"device_total_gib"`
	// NeedPerGPUGiB is device_total_gib with headroom at the GPU count of Cheapest.
	NeedPerGPUGiB float64 `json:"need_per_gpu_gib"`
	// Cheapest is the best offer with the change; nil when even then nothing fits.
	Cheapest *Fit `json:"cheapest"`
	// SavingPct is how much less Cost is than the top offer's figure for the job as asked
	// (the job's dollars, or per unit of work; per hour with --rank hourly); nil when the
	// original job fits nowhere.
	SavingPct *float64 `json:"saving_pct"`
	// Slowdown is the job's time with the change on Cheapest over the job as asked on
	// the top offer (1.33: a third slower; below 1: faster), so a move to a slower GPU
	// shows; from the time model and the cited factors it lacks. 1 when either is untimed.
	Slowdown float64 `json:"slowdown"`
	// Cost is the ranking's figure (Recommendation.RankedBy) for the job with the change
	// on Cheapest, its cited slow-down applied; JobCostUSD is it when that is the job's
	// dollars (its size given).
	Cost       *float64 `json:"cost,omitempty"`
	JobCostUSD *float64 `json:"job_cost_usd,omitempty"`
	Tradeoff   string   `json:"tradeoff"`
}

// RejectedStep is a rung that applies to the job but would not save money.
type RejectedStep struct {
	Change string `json:"change"`
	Flags  string `json:"flags"`
	Reason string `json:"reason"`
}

// Plan is the cheapest combination of ladder rungs: its flags, added to the job's,
// reproduce its need and offer.
type Plan struct {
	Changes []string `json:"changes"`
	LadderStep
}

// flagVal is one job flag a rung sets; a switch is written bare when its value is "true".
type flagVal struct{ name, value string }

func (f flagVal) String() string {
	if f.value == "true" && jobParam(f.name) != nil && jobParam(f.name).Bool {
		return "--" + f.name
	}
	return "--" + f.name + " " + f.value
}

func flagString(fs []flagVal) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, " ")
}

func jobParam(name string) *fit.JobParam {
	i := slices.IndexFunc(fit.JobParams, func(p fit.JobParam) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	return &fit.JobParams[i]
}

// applyFlags sets fs on a copy of j through JobParams. A flag this build does not know
// (a rung written for a flag another change adds) is an error: the rung does not apply.
func applyFlags(j fit.Job, fs []flagVal) (fit.Job, error) {
	for _, f := range fs {
		p := jobParam(f.name)
		if p == nil {
			return j, fmt.Errorf("no job flag --%s", f.name)
		}
		if err := p.Set(&j, f.value); err != nil {
			return j, err
		}
	}
	return j, nil
}

// mergeFlags is a then b, a later value of a flag replacing an earlier one in place.
func mergeFlags(a, b []flagVal) []flagVal {
	out := slices.Clone(a)
	for _, f := range b {
		if i := slices.IndexFunc(out, func(g flagVal) bool { return g.name == f.name }); i >= 0 {
			out[i] = f
		} else {
			out = append(out, f)
		}
	}
	return out
}

// trial is a job judged on the offers: its best offer and what it costs.
type trial struct {
	flags []flagVal
	job   fit.Job
	ev    *evaluator
	best  *Fit
	res   *fit.Result // at best's GPU count, or at the reference count when nothing fits
	cost  float64     // the ranking's figure with the slow-down applied; +Inf when nothing fits
	err   error
	// flagErr: this build has no such flag or value (a rung for another change's flag).
	flagErr error
}

// ladderRun evaluates rungs and plans for one Recommend call.
type ladderRun struct {
	in   *RecommendInput
	caps []*gpuCaps
	// lean and leanCaps are in's offers a job without CPU offload judges (ladderOffers):
	// about half of in's on a marketplace.
	lean     *RecommendInput
	leanCaps []*gpuCaps
	base     trial
	rungs    []rung
	ctx      rungCtx
	trials   map[string]*trial
	// narrowed: only offers cheaper than the job's best are judged (cheaperOnly).
	narrowed bool
}

// ladderLean turns the lean offers off (the tests compare the answers both ways).
var ladderLean = true

func newLadderRun(in *RecommendInput, caps []*gpuCaps, baseEv *evaluator, baseFits []Fit, baseRes *fit.Result) *ladderRun {
	lr := &ladderRun{in: in, caps: caps, trials: map[string]*trial{}}
	lr.base = trial{job: in.Job, ev: baseEv, res: baseRes, cost: math.Inf(1)}
	if len(baseFits) > 0 {
		b := baseFits[0]
		lr.base.best = &b
		lr.base.res = baseEv.variant(b.vk).res
		lr.base.cost = b.rank
	}
	switch {
	case in.Job.IsTraining():
		lr.rungs = trainingRungs
	case in.Model.IsImageModel():
		lr.rungs = imageRungs
	default:
		lr.rungs = inferenceRungs
	}
	lr.ctx = rungCtx{m: in.Model, res: baseRes, multiGPU: !in.PinGPUs || in.Job.GPUs > 1}
	sub := *in
	lr.caps = caps
	lr.cheaperOnly(&sub)
	lean := sub
	full, lset := ladderOffers(&sub, lr.caps) // classes.go
	if !ladderLean {
		lset = full
	}
	sub.Offers, lr.caps, sub.facts = full.offers, full.caps, full.facts
	lean.Offers, lr.leanCaps, lean.facts = lset.offers, lset.caps, slices.Clone(lset.facts)
	lr.in, lr.lean = &sub, &lean
	return lr
}

// cheaperOnly narrows the offers the rungs are judged on, when ranking by the hour and
// the job fits somewhere, to those cheaper than its best offer: only they can make a
// rung save, and a rung's best offer, when it saves, is among them (so its answer is
// the one `picker recommend` with its flags gives over every offer). The ladder then
// evaluates a few offers instead of every one for each of its rungs and plan steps.
func (lr *ladderRun) cheaperOnly(sub *RecommendInput) {
	if lr.base.best == nil || sub.Rank == RankJob {
		return
	}
	var offers []pricing.Offer
	var caps []*gpuCaps
	for i := range sub.Offers {
		if sub.Offers[i].PriceUSDHr < lr.base.best.PriceUSDHr {
			offers = append(offers, sub.Offers[i])
			caps = append(caps, lr.caps[i])
		}
	}
	sub.Offers, lr.caps = offers, caps
	sub.facts = make([]offerFacts, len(offers))
	lr.narrowed = true
}

// costOf is a fit's figure in the ranking in use, with the slow-down the time model does
// not see (extra) applied to the cost of the work (not to a price per hour).
func (lr *ladderRun) costOf(f *Fit, extra float64) float64 {
	if lr.in.Rank == RankJob {
		return f.rank * extra
	}
	return f.rank
}

// costUnit names the ranking's figure in a rejected rung's reason.
func (lr *ladderRun) costUnit() string {
	switch lr.in.rankedBy() {
	case RankedByPricePerHour:
		return "$/h"
	case RankedByJobCost:
		return "job $"
	case RankedByMTokens:
		return "$/M tokens"
	case RankedByMOutTokens:
		return "$/M output tokens"
	}
	return "$/1K images"
}

// try judges the job with flags fs added, memoised by the flags.
func (lr *ladderRun) try(fs []flagVal) *trial {
	key := flagString(fs)
	if t, ok := lr.trials[key]; ok {
		return t
	}
	t := &trial{flags: fs, cost: math.Inf(1)}
	lr.trials[key] = t
	j, err := applyFlags(lr.in.Job, fs)
	if err != nil {
		t.flagErr = err
		return t
	}
	t.job = j
	probe := j
	probe.NodesAuto = false
	if !lr.in.PinGPUs {
		probe.GPUs = 0
	}
	if t.res, t.err = fit.Estimate(lr.in.Model, probe); t.err != nil {
		return t
	}
	in, caps := lr.in, lr.caps
	if !j.Offload.Enabled() {
		in, caps = lr.lean, lr.leanCaps
	}
	t.ev = newEvaluator(in, j, caps)
	if best := rankFits(t.ev, 1); len(best) > 0 {
		t.best = &best[0]
		t.res = t.ev.variant(t.best.vk).res
	}
	return t
}

// hoursOn is the time model's run hours for ev's job at vk on offer f (an H100 when f's
// GPU lacks the figures); 0 when unknown (image generation is not timed).
func (lr *ladderRun) hoursOn(ev *evaluator, f *Fit) float64 {
	v := ev.variant(f.vk)
	if v.err != nil || v.res.Job.Task == fit.TaskImageGen {
		return 0
	}
	spec, known := pricing.LookupGPU(f.GPUModel)
	if !known || spec.BandwidthGBs == nil {
		spec, _ = pricing.LookupGPU("H100")
	}
	c := &gpuCaps{known: true, spec: spec}
	g, ok := c.timeGPU(v.res.Job.Precision)
	if !ok {
		return 0
	}
	g.Count = float64(f.vk.gpus)
	if g.Count > 1 && jobtime.InstanceGPULink(f.Provider, f.InstanceType) == 0 {
		g.LinkGBs = 0
	}
	tm := ev.timeModel(v)
	t, ok := tm.Estimate(&g)
	if !ok {
		return 0
	}
	tokens := lr.in.Tokens
	if tokens <= 0 {
		tokens = 1e9 // only ratios are used
	}
	return tm.JobSeconds(t, tokens, lr.in.Requests) / 3600
}

// path judges rungs applied in order: the combined job, its offer, and its slow-down as
// the product of each rung's factor over the time model's ratio for that step.
func (lr *ladderRun) path(idx []int) (*trial, []flagVal, float64, float64) {
	var fs []flagVal
	evs := []*evaluator{lr.base.ev}
	ctx := lr.ctx
	for k, i := range idx {
		add := lr.rungs[i].flags(ctx)
		if add == nil {
			return nil, nil, 0, 0
		}
		fs = mergeFlags(fs, add)
		t := lr.try(fs)
		if t.flagErr != nil || (t.err != nil && k < len(idx)-1) {
			return nil, nil, 0, 0
		}
		if t.err != nil {
			return t, fs, 0, 0
		}
		ctx.res = t.res
		evs = append(evs, t.ev)
	}
	final := lr.try(fs)
	if final.best == nil {
		return final, fs, 0, 0
	}
	// Slow-down per step on the final offer: the time model's ratio, times the rung's
	// factor where the rung says the model misses part of it (extra). The slow-down
	// shown is the time model's whole ratio, the job with the changes on their offer over
	// the job as asked on the top offer, times extra; without both times, the product of
	// the steps' ratios on the final offer.
	slow, extra := 1.0, 1.0
	prevH := lr.hoursOn(evs[0], final.best)
	prevRes := lr.base.res
	if v := evs[0].variant(final.best.vk); v.err == nil {
		prevRes = v.res
	}
	for k, i := range idx {
		ev := evs[k+1]
		v := ev.variant(final.best.vk)
		if v.err != nil {
			continue
		}
		h := lr.hoursOn(ev, final.best)
		modelled := 0.0
		if prevH > 0 && h > 0 {
			modelled = h / prevH
		}
		f := lr.rungs[i].slow(modelled, prevRes, v.res, lr.in.Model)
		slow *= f
		extra *= f / orOne(modelled)
		prevH, prevRes = h, v.res
	}
	if b := lr.base.best; b != nil && !math.IsInf(b.unit, 1) && !math.IsInf(final.best.unit, 1) {
		slow = final.best.unit / b.unit * extra
	}
	return final, fs, slow, extra
}

// judge turns a path into a step and whether it saves money (with the reason when not).
func (lr *ladderRun) judge(name, tradeoff string, idx []int) (LadderStep, bool, string, bool) {
	t, fs, slow, extra := lr.path(idx)
	if t == nil {
		return LadderStep{}, false, "", false // not applicable
	}
	step := LadderStep{Change: name, Flags: flagString(fs), Tradeoff: tradeoff, Slowdown: fit.Round3(slow)}
	if t.err != nil {
		return step, false, "not a valid job: " + t.err.Error(), true
	}
	if t.best == nil {
		g := max(t.job.GPUs, 1)
		if !lr.in.PinGPUs && lr.ctx.multiGPU {
			g = maxLadderGPUs
		}
		if v := t.ev.variant(variantKey{g, false, 1}); v.err == nil {
			step.DeviceTotalGiB = v.res.DeviceTotalGiB
		}
		if lr.narrowed {
			// Judged where the job's best offer runs it: the same GPU count.
			bk := lr.base.best.vk
			if v, bv := t.ev.variant(bk), lr.base.ev.variant(bk); v.err == nil && bv.err == nil {
				step.DeviceTotalGiB = v.res.DeviceTotalGiB
				if fit.Round3(v.need) >= fit.Round3(bv.need)-1e-6 {
					return step, false, fmt.Sprintf("does not lower the need per GPU (%s GiB with it, %s without, %s)", num1(v.need), num1(bv.need), gpuCount(bk.gpus)), true
				}
				return step, false, fmt.Sprintf("no offer under the job's $%s/h fits with it (%s GiB per GPU %s)", num2(lr.base.cost), num1(v.need), gpuCount(bk.gpus)), true
			}
			return step, false, fmt.Sprintf("no offer under the job's $%s/h fits with it", num2(lr.base.cost)), true
		}
		return step, false, fmt.Sprintf("nothing fits even with it (%s GiB per GPU %s)", num1(step.DeviceTotalGiB), gpuCount(g)), true
	}
	b := *t.best
	step.Cheapest = &b
	step.DeviceTotalGiB = t.res.DeviceTotalGiB
	step.NeedPerGPUGiB = b.NeedPerGPUGiB
	cost := lr.costOf(&b, extra)
	if !math.IsInf(cost, 1) {
		step.Cost = ptr(roundCost(lr.in.fieldOf(cost)))
		if lr.in.rankedBy() == RankedByJobCost {
			step.JobCostUSD = ptr(roundCost(cost))
		}
	}
	// The need per GPU, compared at the step's GPU count.
	if bv := lr.base.ev.variant(b.vk); bv.err == nil && b.NeedPerGPUGiB >= fit.Round3(bv.need)-1e-6 {
		return step, false, fmt.Sprintf("does not lower the need per GPU (%s GiB with it, %s without, %s)", num1(b.NeedPerGPUGiB), num1(bv.need), gpuCount(b.vk.gpus)), true
	}
	if lr.base.best == nil {
		return step, true, "", true // makes an unfittable job fit
	}
	if math.IsInf(lr.base.cost, 1) || math.IsInf(cost, 1) {
		return step, false, "job cost unknown (no datasheet figure for the GPU)", true
	}
	if !(cost < lr.base.cost-1e-9) {
		return step, false, fmt.Sprintf("no cheaper offer: %s %s with it, %s without (%s, %s)", lr.costUnit(), pricing.FormatUSD(cost), pricing.FormatUSD(lr.base.cost),
			b.GPUModel, timeRatio(step.Slowdown)), true
	}
	s := math.Round((lr.base.cost-cost)/lr.base.cost*1000) / 10
	if s <= 0 {
		return step, false, fmt.Sprintf("saves under 0.05 %% (%s vs %s)", pricing.FormatUSD(cost), pricing.FormatUSD(lr.base.cost)), true
	}
	step.SavingPct = &s
	return step, true, "", true
}

// ladderOmits says what the ladder leaves out and why: the other advice given for "CUDA
// out of memory" changes host memory or fixes a leak, not a correct loop's peak. PyTorch's
// torch.cuda.empty_cache documentation: it "doesn't increase the amount of GPU memory
// available for PyTorch"; DataLoader workers and pinned memory live in host RAM
// (torch.utils.data docs, "Memory Pinning"); del and gc.collect free only tensors the
// loop no longer uses, which a correct loop's peak does not hold.
func ladderOmits(in *RecommendInput) string {
	if in.Job.IsTraining() {
		return "left out: DataLoader workers and pinned memory (host RAM), del/gc.collect() and torch.cuda.empty_cache() (they free tensors a leak keeps or cached blocks, not a correct training step's peak)"
	}
	return "left out: torch.cuda.empty_cache() and del/gc.collect() (they return cached blocks or free leaked tensors, not a correct run's peak)"
}

// ladder builds the helpful rungs, the rejected ones and the plan.
func ladder(in *RecommendInput, caps []*gpuCaps, baseEv *evaluator, baseFits []Fit, baseRes *fit.Result) ([]LadderStep, []RejectedStep, *Plan) {
	lr := newLadderRun(in, caps, baseEv, baseFits, baseRes)
	steps, rejected := []LadderStep{}, []RejectedStep{}
	var applicable []int
	for i, r := range lr.rungs {
		step, ok, why, applies := lr.judge(r.name, r.tradeoff, []int{i})
		switch {
		case !applies:
			continue
		case ok:
			steps = append(steps, step)
		default:
			rejected = append(rejected, RejectedStep{Change: r.name, Flags: step.Flags, Reason: why})
		}
		applicable = append(applicable, i)
	}
	if len(steps) == 0 {
		return steps, rejected, nil
	}
	// A rung that saves nothing alone (checkpointing on a job whose optimizer states
	// dominate) can still save with others, so the plan searches every applicable rung.
	return steps, rejected, lr.plan(applicable)
}

// plan searches combinations of the applicable rungs greedily: add the rung that lowers the
// cost most while one does, then drop any rung the plan costs no more without. Ties go
// to the smaller slow-down, then to the earlier (less effort) rung.
func (lr *ladderRun) plan(applicable []int) *Plan {
	if len(applicable) == 0 {
		return nil
	}
	type cand struct {
		idx  []int
		step LadderStep
		cost float64
	}
	eval := func(idx []int) (cand, bool) {
		sorted := slices.Clone(idx)
		slices.Sort(sorted)
		step, ok, _, applies := lr.judge("", "", sorted)
		if !applies || !ok {
			return cand{}, false
		}
		c := math.Inf(1)
		if step.Cheapest != nil {
			c = lr.costOf(step.Cheapest, 1)
			if step.Cost != nil {
				c = *step.Cost / lr.in.fieldOf(1) // back in the ranking's unit
			}
		}
		return cand{sorted, step, c}, true
	}
	// Costs are compared as shown (pricing.RoundUSD): a rung that lowers the cost by less
	// than prints is effort for nothing, and of equal costs the faster plan wins.
	shown := pricing.RoundUSD
	better := func(a, b cand) bool {
		if shown(a.cost) != shown(b.cost) {
			return shown(a.cost) < shown(b.cost)
		}
		return a.step.Slowdown < b.step.Slowdown
	}
	var cur *cand
	for {
		var next *cand
		for _, i := range applicable {
			if cur != nil && slices.Contains(cur.idx, i) {
				continue
			}
			var idx []int
			if cur != nil {
				idx = append(idx, cur.idx...)
			}
			c, ok := eval(append(idx, i))
			if !ok || (cur != nil && !(shown(c.cost) < shown(cur.cost))) {
				continue
			}
			if next == nil || better(c, *next) {
				next = &c
			}
		}
		if next == nil {
			break
		}
		cur = next
	}
	if cur == nil {
		return nil
	}
	// Drop rungs the plan does not need.
	for k := 0; k < len(cur.idx); {
		rest := slices.Delete(slices.Clone(cur.idx), k, k+1)
		if len(rest) > 0 {
			if c, ok := eval(rest); ok && shown(c.cost) <= shown(cur.cost) && c.step.Slowdown <= cur.step.Slowdown+1e-9 {
				cur = &c
				continue
			}
		}
		k++
	}
	p := &Plan{LadderStep: cur.step}
	for _, i := range cur.idx {
		p.Changes = append(p.Changes, lr.rungs[i].name)
	}
	p.Change = strings.Join(p.Changes, " + ")
	var trade []string
	for _, i := range cur.idx {
		trade = append(trade, lr.rungs[i].name+": "+lr.rungs[i].tradeoff)
	}
	p.Tradeoff = strings.Join(trade, "; ")
	return p
}

func gpuCount(g int) string {
	if g == 1 {
		return "on 1 GPU"
	}
	return fmt.Sprintf("at %d GPUs", g)
}

// roundCost keeps a cost to the precision it can be shown and compared at (six decimals:
// a cost per image is a fraction of a cent).
func roundCost(v float64) float64 { return pricing.RoundTo(v, 6) }

// timeRatio is a slow-down as the ladder prints it.
func timeRatio(x float64) string { return "time ×" + strconv.FormatFloat(fit.Round3(x), 'f', -1, 64) }

package fit

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// Recommender constants, each a stated assumption rather than a fitted number.
const (
	// DefaultHeadroomPct is the margin over device_total_gib an offer must leave
	// (CONTRACT --headroom default): allocator growth across steps, variable sequence
	// lengths, framework versions.
	DefaultHeadroomPct = 5
	// DefaultMFU is the model-FLOPs utilisation assumed for training time: well-tuned
	// dense transformer training reaches 35-55 % on A100/H100 (PaLM paper 46 %, Megatron
	// 2021 ~52 % at scale); single-node fine-tunes with HF Trainer sit lower, so 0.35.
	DefaultMFU = 0.35
	// OffloadRAMMarginGiB is host memory beyond cpu_ram_gib that an offloaded job needs:
	// the OS, the Python process and its CUDA/NCCL libraries, data loader workers.
	OffloadRAMMarginGiB = 8.0
	// OffloadRAMMarginPct adds 10 % of cpu_ram_gib for pinned-buffer rounding and
	// fragmentation of the host allocator.
	OffloadRAMMarginPct = 10.0
	// maxLadderGPUs bounds the GPU count tried when reporting a ladder step's need with
	// no fitting offer.
	maxLadderGPUs = 8
)

// Rank is how Recommend orders the offers that fit (--rank).
type Rank string

const (
	RankHourly Rank = "hourly" // cheapest per instance-hour
	RankJob    Rank = "job"    // cheapest for the whole job (needs Tokens)
)

// ParseRank accepts hourly or job; "" is hourly.
func ParseRank(v string) (Rank, error) {
	switch r := Rank(v); r {
	case "", RankHourly:
		return RankHourly, nil
	case RankJob:
		return r, nil
	}
	return "", pricing.ParamErrorf(pricing.Invalid, "rank", "--rank %q: want hourly or job", v)
}

// RecommendInput is everything Recommend needs; offers are already filtered by the
// caller's provider/region/GPU/purchase/price filters.
type RecommendInput struct {
	Model *Model
	Job   Job
	// PinGPUs: the user gave --gpus, so every offer is evaluated at Job.GPUs (and must
	// have at least that many GPUs); otherwise each offer at its own GPU count.
	PinGPUs     bool
	Offers      []pricing.Offer
	HeadroomPct float64 // percent; negative means DefaultHeadroomPct
	Rank        Rank    // "" = RankHourly
	Tokens      float64 // training or generated tokens of the whole job; 0 = no time estimate
	MFU         float64 // 0 = DefaultMFU
	Top         int     // 0 = 10
}

// Fit is one offer that can run the job, with what it would need and cost.
type Fit struct {
	pricing.Offer
	// NeedPerGPUGiB is device_total_gib at this offer's GPU count, times (1+headroom).
	NeedPerGPUGiB  float64 `json:"need_per_gpu_gib"`
	SparePerGPUGiB float64 `json:"spare_per_gpu_gib"`
	// EstHours and EstCostUSD are nil without --tokens or when the GPU lacks the figure.
	EstHours   *float64 `json:"est_hours"`
	EstCostUSD *float64 `json:"est_cost_usd"`
	// GPUsUsed is the GPU count the job was estimated at on this offer.
	GPUsUsed int `json:"gpus_used"`
	// Notes say how the job had to change for this GPU (fp16 instead of bf16, …).
	Notes []string `json:"notes,omitempty"`

	vk variantKey // the estimate this fit was judged with
}

// LadderStep is one memory-saving change the job could make, estimated on its own
// against the original job.
type LadderStep struct {
	Change string `json:"change"`
	// Flags is how to ask for it on the command line.
	Flags          string  `json:"flags"`
	DeviceTotalGiB float64 `json:"device_total_gib"`
	// Cheapest is the best offer with the change; nil when even then nothing fits.
	Cheapest *Fit `json:"cheapest"`
	// SavingPct compares Cheapest with the original job's best offer (by the ranking in
	// use); nil when the original job fits nowhere or the step fits nowhere.
	SavingPct *float64 `json:"saving_pct"`
	Tradeoff  string   `json:"tradeoff"`
}

// Recommendation is Recommend's answer.
type Recommendation struct {
	// Estimate is the job at the GPU count of the best offer (or Job.GPUs when pinned,
	// 1 when nothing fits).
	Estimate *Result      `json:"estimate"`
	Offers   []Fit        `json:"offers"`
	Ladder   []LadderStep `json:"ladder"`
	Warnings []string     `json:"warnings"`
	// NearestMiss explains why nothing fits; empty when some offer fits.
	NearestMiss string `json:"nearest_miss,omitempty"`
}

// gpuCaps is what the recommender needs to know of an offer's GPU.
type gpuCaps struct {
	known bool
	bf16  bool
	flash bool
	spec  pricing.GPU
}

type variantKey struct {
	gpus int
	fp16 bool // the job switched to fp16 (GPU without bf16) and sdpa (no flash attention)
}

type variant struct {
	res  *Result
	need float64 // per GPU, with headroom
	err  error
}

// evaluator estimates one job on many offers, caching the estimate per GPU count and
// capability variant: a catalogue of 100k offers holds only a few dozen distinct pairs,
// so the per-offer work is array lookups and a comparison.
type evaluator struct {
	in       *RecommendInput
	job      Job
	headroom float64
	cache    [maxCachedGPUs + 1][2]*variant
	caps     []*gpuCaps // per offer, shared by every evaluator of one Recommend call
	bf16     bool       // the job uses bf16 (GPUs without it switch to fp16)
	flash    bool       // the job asks for FlashAttention
	offload  bool
	// minGPUs skips offers with fewer GPUs (the ZeRO-3 rung needs GPUs to shard across).
	minGPUs int
}

// maxCachedGPUs bounds the GPU counts the variant cache holds; larger counts (none
// seen in practice: clouds sell up to 16 GPUs per instance) are estimated uncached.
const maxCachedGPUs = 64

func newEvaluator(in *RecommendInput, job Job, caps []*gpuCaps) *evaluator {
	h := in.HeadroomPct
	if h < 0 {
		h = DefaultHeadroomPct
	}
	return &evaluator{in: in, job: job, headroom: h, caps: caps,
		bf16: job.UsesBF16(), flash: job.UsesFlashAttention(), offload: job.Offload.Enabled()}
}

func (e *evaluator) variant(k variantKey) *variant {
	fi := 0
	if k.fp16 {
		fi = 1
	}
	if k.gpus <= maxCachedGPUs {
		if v := e.cache[k.gpus][fi]; v != nil {
			return v
		}
	}
	j := e.job
	j.GPUs = k.gpus
	if k.gpus > 1 && j.Shard == "" && e.in.Model.IsImageModel() {
		j.Shard = ShardNone // image pipelines run one per GPU
	}
	if k.fp16 {
		j = j.WithFP16()
	}
	v := &variant{}
	v.res, v.err = Estimate(e.in.Model, j)
	if v.err == nil {
		v.need = v.res.DeviceTotalGiB * (1 + e.headroom/100)
	}
	if k.gpus <= maxCachedGPUs {
		e.cache[k.gpus][fi] = v
	}
	return v
}

// gpusFor returns the GPU count the job runs at on an offer, 0 when the offer can't
// host it (pinned count larger than the offer).
func (e *evaluator) gpusFor(o *pricing.Offer) int {
	n := int(math.Max(1, math.Floor(o.GPUCount+1e-9)))
	if o.Fractional() {
		n = 1
	}
	if e.in.PinGPUs {
		want := max(e.job.GPUs, 1)
		if n < want {
			return 0
		}
		return want
	}
	return n
}

// cand is an offer that fits, before it is turned into a Fit.
type cand struct {
	i       int
	primary float64 // price per hour, or job cost when ranking by job
	spare   float64
	hours   float64 // -1 when unknown
	vk      variantKey
	need    float64
}

// evaluate judges offer i; ok=false when it doesn't fit or can't run the job.
func (e *evaluator) evaluate(i int) (cand, bool) {
	o := &e.in.Offers[i]
	g := e.gpusFor(o)
	if g == 0 || g < e.minGPUs {
		return cand{}, false
	}
	c := e.caps[i]
	fp16 := c.known && ((!c.bf16 && e.bf16) || (!c.flash && e.flash))
	if fp16 && !c.bf16 && e.job.IsTraining() && e.job.Precision == "bf16" {
		return cand{}, false // pure-bf16 training has no fp16 equivalent without loss scaling
	}
	vk := variantKey{g, fp16}
	v := e.variant(vk)
	if v.err != nil {
		return cand{}, false
	}
	mem := o.MemPerDeviceGiB()
	if v.need > mem+1e-9 {
		return cand{}, false
	}
	if e.offload && o.RAMGiB < v.res.CPURAMGiB*(1+OffloadRAMMarginPct/100)+OffloadRAMMarginGiB {
		return cand{}, false
	}
	cd := cand{i: i, primary: o.PriceUSDHr, spare: mem - v.need, hours: -1, vk: vk, need: v.need}
	// Job time is needed per offer only to rank by job cost; hourly ranking computes
	// it for the few offers it reports (in fit).
	if e.in.Rank == RankJob {
		cd.primary = math.Inf(1)
		if h, ok := jobHours(e.in.Model, v.res, o, c, g, e.in.Tokens, e.in.MFU); ok {
			cd.hours = h
			cd.primary = h * o.PriceUSDHr
		}
	}
	return cd, true
}

// better orders by price per hour (or job cost), then least spare VRAM per GPU (the
// offer that "just covers" the job), then the offer key, so results are deterministic.
func (e *evaluator) better(a, b *cand) bool {
	if a.primary != b.primary {
		return a.primary < b.primary
	}
	oa, ob := &e.in.Offers[a.i], &e.in.Offers[b.i]
	if oa.PriceUSDHr != ob.PriceUSDHr {
		return oa.PriceUSDHr < ob.PriceUSDHr
	}
	if a.spare != b.spare {
		return a.spare < b.spare
	}
	return keyLess(oa, ob)
}

func keyLess(a, b *pricing.Offer) bool {
	switch {
	case a.Provider != b.Provider:
		return a.Provider < b.Provider
	case a.Region != b.Region:
		return a.Region < b.Region
	case a.Zone != b.Zone:
		return a.Zone < b.Zone
	case a.InstanceType != b.InstanceType:
		return a.InstanceType < b.InstanceType
	}
	return a.Purchase < b.Purchase
}

// fit turns a candidate into the reported Fit.
func (e *evaluator) fit(cd cand) Fit {
	o := &e.in.Offers[cd.i]
	f := Fit{Offer: *o, NeedPerGPUGiB: round3(cd.need), SparePerGPUGiB: round3(cd.spare), GPUsUsed: cd.vk.gpus, vk: cd.vk}
	if cd.hours < 0 && e.in.Tokens > 0 && e.in.Rank != RankJob {
		if h, ok := jobHours(e.in.Model, e.variant(cd.vk).res, o, e.caps[cd.i], cd.vk.gpus, e.in.Tokens, e.in.MFU); ok {
			cd.hours = h
		}
	}
	if cd.hours >= 0 {
		h := round3(cd.hours)
		c := round3(cd.hours * o.PriceUSDHr)
		f.EstHours, f.EstCostUSD = &h, &c
	}
	if cd.vk.fp16 {
		c := e.caps[cd.i]
		prec := e.variant(cd.vk).res.Job.Precision
		switch {
		case !c.bf16 && e.bf16:
			f.Notes = append(f.Notes, fmt.Sprintf("%s has no bf16: runs in %s", o.GPUModel, prec))
		case !c.flash && e.flash:
			f.Notes = append(f.Notes, fmt.Sprintf("%s has no FlashAttention-2: sdpa memory assumed", o.GPUModel))
		}
	}
	return f
}

// Recommend ranks the offers that can run the job, builds the savings ladder and the
// warnings. It is pure: the same input gives the same answer, in the same order.
func Recommend(in RecommendInput) (*Recommendation, error) {
	if in.Model == nil {
		return nil, pricing.Errorf(pricing.Invalid, "no model given")
	}
	if in.Rank == "" {
		in.Rank = RankHourly
	}
	if _, err := ParseRank(string(in.Rank)); err != nil {
		return nil, err
	}
	if in.Rank == RankJob && in.Tokens <= 0 {
		return nil, pricing.ParamErrorf(pricing.Invalid, "tokens", "--rank job needs --tokens N (training or generated tokens of the whole job)")
	}
	if in.MFU == 0 {
		in.MFU = DefaultMFU
	}
	if in.MFU < 0 || in.MFU > 1 {
		return nil, pricing.ParamErrorf(pricing.Invalid, "mfu", "--mfu %v: want a fraction between 0 and 1", in.MFU)
	}
	if in.Top <= 0 {
		in.Top = 10
	}
	// Validate the job once up front, so a bad job is an error, not "nothing fits".
	base := in.Job
	if !in.PinGPUs {
		base.GPUs = 1
	}
	baseRes, err := Estimate(in.Model, base)
	if err != nil {
		return nil, err
	}
	caps := make([]*gpuCaps, len(in.Offers))
	byName := map[string]*gpuCaps{}
	for i := range in.Offers {
		name := in.Offers[i].GPUModel
		c, ok := byName[name]
		if !ok {
			g, known := pricing.LookupGPU(name)
			c = &gpuCaps{known: known, bf16: g.SupportsBF16, flash: g.FlashAttention(), spec: g}
			byName[name] = c
		}
		caps[i] = c
	}
	ev := newEvaluator(&in, in.Job, caps)
	fits := rankFits(ev, in.Top)
	rec := &Recommendation{Offers: fits, Ladder: []LadderStep{}, Warnings: []string{}}
	if len(fits) > 0 {
		rec.Estimate = ev.variant(fits[0].vk).res
	} else {
		rec.Estimate = baseRes
	}
	rec.Ladder = ladder(&in, caps, fits)
	rec.Warnings = warnings(&in, rec)
	if len(fits) == 0 {
		rec.NearestMiss = nearestMiss(&in, ev, rec.Ladder)
	}
	return rec, nil
}

// rankFits evaluates every offer and returns the best top fits, best first. It keeps
// only the top candidates (insertion into a short sorted slice), so 100k offers cost
// 100k evaluations and no sort of the whole list.
func rankFits(ev *evaluator, top int) []Fit {
	best := make([]cand, 0, top+1)
	for i := range ev.in.Offers {
		cd, ok := ev.evaluate(i)
		if !ok {
			continue
		}
		if len(best) == top && !ev.better(&cd, &best[top-1]) {
			continue
		}
		k := sort.Search(len(best), func(j int) bool { return ev.better(&cd, &best[j]) })
		best = append(best, cand{})
		copy(best[k+1:], best[k:])
		best[k] = cd
		if len(best) > top {
			best = best[:top]
		}
	}
	out := make([]Fit, len(best))
	for i, cd := range best {
		out[i] = ev.fit(cd)
	}
	return out
}

// jobHours estimates wall-clock hours for the whole job on one offer.
//
// Training: FLOPs = k · N_active · tokens with k = 6 for a full fine-tune (forward 2N,
// backward 4N; Kaplan et al. 2020), 8 with gradient checkpointing (one more forward),
// and 4 for LoRA/QLoRA (frozen weights need activation gradients but no weight
// gradients: forward 2N + backward 2N), +2 with checkpointing. Time = FLOPs / (GPUs ×
// dense half-precision TFLOPS × MFU).
//
// Inference: decoding is memory-bound: each step reads the weights once and the KV
// cache of every sequence in the batch (half full on average) and yields batch tokens,
// so hours = tokens / batch × bytes per step / (GPUs × bandwidth). This is the
// bandwidth roofline: real decoders reach 60–80 % of it.
func jobHours(m *Model, r *Result, o *pricing.Offer, c *gpuCaps, gpus int, tokens, mfu float64) (float64, bool) {
	if !c.known {
		return 0, false
	}
	frac := float64(gpus)
	if o.Fractional() {
		frac = o.GPUCount
	}
	var secs float64
	switch r.Job.Task {
	case TaskImageGen:
		return 0, false
	case TaskFullFT, TaskLoRA, TaskQLoRA:
		k := 6.0
		if r.Job.Task != TaskFullFT {
			k = 4
		}
		if r.Job.GradCkpt {
			k += 2
		}
		tf := c.spec.HalfTFLOPS()
		if r.Job.Precision == "fp32" {
			tf = c.spec.FP32TFLOPS
		}
		if tf == nil || *tf <= 0 {
			return 0, false
		}
		secs = k * float64(m.ActiveParams()) * tokens / (frac * *tf * 1e12 * mfu)
	default:
		bw := c.spec.BandwidthGBs
		if bw == nil || *bw <= 0 {
			return 0, false
		}
		// Per-GPU figures: with tensor parallelism each GPU reads its share in parallel.
		perStepGiB := r.Breakdown.Weights + r.Breakdown.KVCache/2
		steps := tokens / float64(max(r.Job.Batch, 1))
		secs = steps * perStepGiB * (1 << 30) / (*bw * 1e9)
		if o.Fractional() {
			secs /= o.GPUCount // a slice gets its share of the bandwidth
		}
	}
	return secs / 3600, true
}

// ladderChange is one rung: whether it applies to the job and how it changes it.
type ladderChange struct {
	name, flags, tradeoff string
	applies               func(j Job, training bool) bool
	apply                 func(j Job) Job
	perOfferGPUs          bool // evaluated at each offer's GPU count even when --gpus pins it
}

// trainingLadder is the seeds' order of effort.
var trainingLadder = []ladderChange{
	{"smaller micro-batch (1) with gradient accumulation", "--batch 1", "same effective batch through gradient accumulation; more, smaller steps (somewhat slower)",
		func(j Job, t bool) bool { return t && j.Batch > 1 }, func(j Job) Job { j.Batch = 1; return j }, false},
	{"bf16 mixed precision", "--precision bf16-mixed", "needs an Ampere or newer GPU (fp16-mixed with loss scaling elsewhere); usually no quality loss",
		func(j Job, t bool) bool { return t && j.Precision == "fp32" }, func(j Job) Job { j.Precision = "bf16-mixed"; return j }, false},
	{"gradient checkpointing", "--grad-ckpt", "≈20–30 % slower: activations are recomputed in the backward pass",
		func(j Job, t bool) bool { return t && !j.GradCkpt }, func(j Job) Job { j.GradCkpt = true; return j }, false},
	{"LoRA instead of a full fine-tune", "--task lora", "trains low-rank adapters only; close to full fine-tuning for most adaptation tasks, weaker for large domain shifts",
		func(j Job, t bool) bool { return j.Task == TaskFullFT }, func(j Job) Job { j.Task = TaskLoRA; return j }, false},
	{"ZeRO-3 / FSDP across the instance's GPUs", "--shard zero3", "parameters, gradients and optimizer states split across GPUs; needs several GPUs and fast interconnect (NVLink) to stay efficient",
		func(j Job, t bool) bool {
			return t && (!j.Shard.Sharded() || j.Shard == "zero1" || j.Shard == "zero2")
		}, func(j Job) Job { j.Shard = "zero3"; return j }, true},
	{"CPU offload of optimizer states (ZeRO-Offload)", "--shard zero2 --offload optimizer", "needs host RAM for the states and PCIe bandwidth; optimizer steps run on the CPU (slower)",
		func(j Job, t bool) bool { return t && !j.Offload.Enabled() },
		func(j Job) Job {
			if !j.Shard.Sharded() {
				j.Shard = "zero2"
			}
			j.Offload = "optimizer"
			return j
		}, false},
	{"QLoRA (4-bit NF4 base weights)", "--task qlora", "slower (dequantisation each step) and slightly less accurate than LoRA on bf16 weights",
		func(j Job, t bool) bool { return j.Task == TaskFullFT || j.Task == TaskLoRA },
		func(j Job) Job {
			j.Task, j.Quant = TaskQLoRA, "nf4"
			if j.Precision == "fp32" || j.Precision == "bf16" || j.Precision == "fp16" {
				j.Precision = ""
			}
			return j
		}, false},
}

// inferenceLadder: quantized inference is inference's rung.
var inferenceLadder = []ladderChange{
	{"int8 weights (LLM.int8)", "--quant int8", "bitsandbytes int8 is slower than bf16 matmuls; quality close to bf16",
		func(j Job, _ bool) bool { return !j.Quant.Quantized() }, func(j Job) Job { j.Quant = "int8"; return j }, false},
	{"4-bit weights (NF4)", "--quant nf4", "about a quarter of the weight memory; slight quality loss, slower dequantisation at small batch",
		func(j Job, _ bool) bool { return !j.Quant.FourBit() }, func(j Job) Job { j.Quant = "nf4"; return j }, false},
}

func ladder(in *RecommendInput, caps []*gpuCaps, baseFits []Fit) []LadderStep {
	training := in.Job.IsTraining()
	changes := inferenceLadder
	if training {
		changes = trainingLadder
	} else if in.Model.IsImageModel() {
		return []LadderStep{}
	}
	steps := []LadderStep{}
	for _, ch := range changes {
		if !ch.applies(in.Job, training) {
			continue
		}
		j := ch.apply(in.Job)
		sub := *in
		sub.Job = j
		if ch.perOfferGPUs {
			sub.PinGPUs = false
		}
		// The step must be a valid job on its own.
		probe := j
		if !sub.PinGPUs {
			probe.GPUs = 1
		}
		if ch.perOfferGPUs {
			probe.GPUs = 2
		}
		if _, err := Estimate(in.Model, probe); err != nil {
			continue
		}
		ev := newEvaluator(&sub, j, caps)
		if ch.perOfferGPUs {
			ev.minGPUs = 2
		}
		best := rankFits(ev, 1)
		step := LadderStep{Change: ch.name, Flags: ch.flags, Tradeoff: ch.tradeoff}
		if len(best) > 0 {
			b := best[0]
			step.Cheapest = &b
			step.DeviceTotalGiB = ev.variant(b.vk).res.DeviceTotalGiB
			if len(baseFits) > 0 {
				s := saving(baseFits[0], b, in.Rank)
				step.SavingPct = s
			}
		} else {
			g := max(j.GPUs, 1)
			if ch.perOfferGPUs {
				g = maxLadderGPUs
			}
			if v := ev.variant(variantKey{g, false}); v.err == nil {
				step.DeviceTotalGiB = v.res.DeviceTotalGiB
			}
		}
		steps = append(steps, step)
	}
	return steps
}

func saving(base, step Fit, rank Rank) *float64 {
	bp, sp := base.PriceUSDHr, step.PriceUSDHr
	if rank == RankJob && base.EstCostUSD != nil && step.EstCostUSD != nil {
		bp, sp = *base.EstCostUSD, *step.EstCostUSD
	}
	if bp <= 0 {
		return nil
	}
	s := math.Round((bp-sp)/bp*1000) / 10
	return &s
}

func warnings(in *RecommendInput, rec *Recommendation) []string {
	w := []string{}
	var fp16 []string
	for _, f := range rec.Offers {
		for _, n := range f.Notes {
			if !slices.Contains(fp16, n) {
				fp16 = append(fp16, n)
			}
		}
	}
	for _, n := range fp16 {
		w = append(w, n+" (fp16 may need loss scaling; check numerics)")
	}
	if in.Tokens > 0 {
		var missing []string
		for _, f := range rec.Offers {
			if f.EstHours == nil && !slices.Contains(missing, f.GPUModel) {
				missing = append(missing, f.GPUModel)
			}
		}
		if len(missing) > 0 && rec.Estimate != nil && rec.Estimate.Job.Task != TaskImageGen {
			w = append(w, fmt.Sprintf("no datasheet compute/bandwidth figure for %s: job time and cost unknown there", strings.Join(missing, ", ")))
		} else if rec.Estimate != nil && rec.Estimate.Job.Task == TaskImageGen {
			w = append(w, "job time is not modelled for image generation")
		}
	}
	return w
}

// NoOffersMiss is the nearest miss when no offer passed the caller's filters at all; the
// caller may add what to do about it.
const NoOffersMiss = "no offers match the filters (provider, region, GPU model, purchase, price)"

// nearestMiss explains why no offer fits: the need, the largest GPU on offer, and the
// ladder steps that would fit.
func nearestMiss(in *RecommendInput, ev *evaluator, steps []LadderStep) string {
	if len(in.Offers) == 0 {
		return NoOffersMiss
	}
	var largest *pricing.Offer
	for i := range in.Offers {
		o := &in.Offers[i]
		if largest == nil || o.MemPerDeviceGiB() > largest.MemPerDeviceGiB() || (o.MemPerDeviceGiB() == largest.MemPerDeviceGiB() && o.GPUCount > largest.GPUCount) {
			largest = o
		}
	}
	g := 1
	if in.PinGPUs {
		g = max(in.Job.GPUs, 1)
	}
	v := ev.variant(variantKey{g, false})
	var b strings.Builder
	if v.err == nil {
		fmt.Fprintf(&b, "needs %s GiB per GPU (%s GiB device total + %s %% headroom)", num1(v.need), num1(v.res.DeviceTotalGiB), num1(ev.headroom))
		if in.Job.IsTraining() && !in.Job.Shard.Sharded() && !in.PinGPUs {
			b.WriteString(", on every GPU of a data-parallel job")
		}
	} else {
		fmt.Fprintf(&b, "the job cannot be estimated: %v", v.err)
	}
	fmt.Fprintf(&b, "; the largest GPU offered has %s GiB (%s %s)", num1(largest.MemPerDeviceGiB()), largest.Provider, largest.InstanceType)
	if in.Job.Offload.Enabled() {
		b.WriteString("; offloaded jobs also need host RAM of cpu_ram_gib + 10 % + 8 GiB")
	}
	var would []string
	for _, s := range steps {
		if s.Cheapest != nil {
			would = append(would, fmt.Sprintf("`%s` (%s, %s GiB per GPU) would fit: %s %s %s at $%s/h", s.Flags, s.Change, num1(s.DeviceTotalGiB), s.Cheapest.Provider, s.Cheapest.Region, s.Cheapest.InstanceType, num2(s.Cheapest.PriceUSDHr)))
		}
	}
	if len(would) > 0 {
		b.WriteString("; " + strings.Join(would, "; or "))
	}
	return b.String()
}

func num1(v float64) string { return fmt.Sprintf("%.1f", v) }
func num2(v float64) string { return fmt.Sprintf("%.2f", v) }

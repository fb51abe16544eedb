package fit

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// Recommender constants, each a stated assumption rather than a fitted number.
const (
	// DefaultHeadroomPct is the margin over device_total_gib an offer must leave
	// (CONTRACT --headroom default): allocator growth across steps, variable sequence
	// lengths, framework versions.
	DefaultHeadroomPct = 5
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
	// MFU > 0 overrides the time model's per-architecture GEMM efficiency (--mfu).
	MFU float64
	// Inference workload (issue 15): Engine ("" = DefaultEngine), prompt and output
	// tokens per request, and the number of requests (Tokens = Requests x OutputTokens
	// when Tokens is 0).
	Engine                     string
	PromptTokens, OutputTokens float64
	Requests                   float64
	// SetupHours overrides the start-up overhead (boot, image, model download) billed
	// before the job runs; nil = SetupHours(checkpoint bytes).
	SetupHours *float64
	// Deadline, when positive, drops offers whose setup plus run time exceeds it.
	Deadline time.Duration

	// Per-offer facts for the time model, computed once per Recommend call and shared
	// by the ladder's evaluators (copies of the input share the slice); nCaps counts
	// the distinct GPU models (gpuCaps.idx).
	facts []offerFacts
	nCaps int
	Top   int // 0 = 10
}

// offerFacts is what the time model reads from an offer's provider and instance type.
type offerFacts struct {
	inc, min float32 // billing increment and minimum, seconds
	pcie     bool    // the instance's GPUs talk over PCIe although the model has NVLink
	set      bool
}

// Fit is one offer that can run the job, with what it would need and cost.
type Fit struct {
	pricing.Offer
	// NeedPerGPUGiB is device_total_gib at this offer's GPU count, times (1+headroom).
	NeedPerGPUGiB  float64 `json:"need_per_gpu_gib"`
	SparePerGPUGiB float64 `json:"spare_per_gpu_gib"`
	// EstHours is the job's run time (without start-up); EstCostUSD what the bill says:
	// setup plus run time rounded up to the provider's billing increment and minimum
	// (BilledHours) times the hourly price. Nil without --tokens or a GPU figure.
	EstHours    *float64 `json:"est_hours"`
	EstCostUSD  *float64 `json:"est_cost_usd"`
	SetupHours  *float64 `json:"setup_hours,omitempty"`
	BilledHours *float64 `json:"billed_hours,omitempty"`
	// TokensPerSec: training tokens, or generated tokens in steady decoding at the job's
	// batch, per second over the offer's GPUs the job uses.
	TokensPerSec *float64 `json:"tokens_per_s,omitempty"`
	// Inference only: time to first token of one request, and the price of a million
	// generated tokens at TokensPerSec.
	TTFTSec          *float64 `json:"ttft_s,omitempty"`
	USDPerMOutTokens *float64 `json:"usd_per_m_output_tokens,omitempty"`
	// TimeBound says what limits the job's step: compute, memory, communication, offload,
	// dequant or dispatch.
	TimeBound string `json:"time_bound,omitempty"`
	// Frontier marks an offer on the time-cost frontier (--rank job): no other fitting
	// offer is both cheaper and faster.
	Frontier bool `json:"frontier,omitempty"`
	// GPUsUsed is the GPU count the job was estimated at on this offer.
	GPUsUsed int `json:"gpus_used"`
	// Notes say how the job had to change for this GPU (fp16 instead of bf16, …).
	Notes []string `json:"notes,omitempty"`
	// Nodes, ClusterPriceUSDHr, Layout and Interconnect describe a multi-node plan
	// (--nodes): Nodes identical instances of this offer at Nodes × PriceUSDHr.
	Nodes             int     `json:"nodes,omitempty"`
	ClusterPriceUSDHr float64 `json:"cluster_price_usd_hr,omitempty"`
	Layout            string  `json:"layout,omitempty"`
	Interconnect      string  `json:"interconnect,omitempty"`

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
	// Excluded lists offers left out whatever their memory, with the reason, one entry
	// per GPU model (fp8 jobs on GPUs without fp8).
	Excluded []Exclusion `json:"excluded,omitempty"`
	// CheapestCluster: with --nodes auto, when every offer listed is a single instance,
	// the cheapest plan of two or more instances (nodes.go).
	CheapestCluster *Fit `json:"cheapest_cluster,omitempty"`
	// Frontier (--rank job): every fitting offer that no other beats on both cost and
	// time (setup plus run), cheapest first.
	Frontier []Fit `json:"frontier,omitempty"`
}

// gpuCaps is what the recommender needs to know of an offer's GPU.
type gpuCaps struct {
	known bool
	bf16  bool
	flash bool
	fp8   bool
	spec  pricing.GPU
	idx   int // index among the call's distinct GPU models
	// tg caches the time model's view of the GPU per precision class (16-bit, fp32);
	// tgOK[k] false when the catalog lacks a figure.
	tg   [2]TimeGPU
	tgOK [2]bool
	tgAt [2]bool // computed
}

// timeGPU returns the GPU's figures for a precision, computed once per class.
func (c *gpuCaps) timeGPU(precision Precision) (TimeGPU, bool) {
	k := 0
	if precision == "fp32" {
		k = 1
	}
	if !c.tgAt[k] {
		c.tg[k], c.tgOK[k] = TimeGPUFor(c.spec, precision, 1, -1)
		c.tgAt[k] = true
	}
	return c.tg[k], c.tgOK[k]
}

type variantKey struct {
	gpus  int
	fp16  bool // the job switched to fp16 (GPU without bf16) and sdpa (no flash attention)
	nodes int  // instances (nodes.go); 0 and 1 both mean one
}

type variant struct {
	res  *Result
	need float64 // per GPU, with headroom
	err  error
	tm   *TimeModel // built on first use
	// times memoizes the timing per GPU model (gpuCaps.idx) and link (x2: PCIe board),
	// for whole-GPU offers: the variant fixes the GPU count and precision.
	times []timingVal
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
	fp8     bool // the job needs fp8 tensor cores (fp8.go)
	// multi-node (nodes.go): explicit node count, or auto; multiCache holds their variants.
	nodes        int
	autoNodes    bool
	clustersOnly bool // auto, but two or more instances only
	multiCache   map[variantKey]*variant
	setup        float64 // start-up hours billed before the job runs
}

type timingVal struct {
	set bool
	t   Timing
	ok  bool
}

// maxCachedGPUs bounds the GPU counts the variant cache holds; larger counts (none
// seen in practice: clouds sell up to 16 GPUs per instance) are estimated uncached.
const maxCachedGPUs = 64

func newEvaluator(in *RecommendInput, job Job, caps []*gpuCaps) *evaluator {
	h := in.HeadroomPct
	if h < 0 {
		h = DefaultHeadroomPct
	}
	setup := SetupHours(2 * float64(in.Model.Params())) // a 16-bit checkpoint to download
	if in.SetupHours != nil {
		setup = *in.SetupHours
	}
	return &evaluator{in: in, job: job, headroom: h, caps: caps, setup: setup,
		bf16: job.UsesBF16(), flash: job.UsesFlashAttention(), offload: job.Offload.Enabled(),
		fp8: job.UsesFP8(), nodes: job.Nodes, autoNodes: job.NodesAuto, multiCache: map[variantKey]*variant{}}
}

func (e *evaluator) variant(k variantKey) *variant {
	if k.nodes > 1 {
		return e.multiVariant(k)
	}
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
	j.Nodes, j.NodesAuto = 1, false
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
	hours   float64 // run hours, -1 when unknown
	total   float64 // setup + run hours
	cost    float64 // billed job cost
	vk      variantKey
	need    float64
	tim     *Timing // nil until timed
}

// timeModel returns the variant's time model, built once.
func (e *evaluator) timeModel(v *variant) *TimeModel {
	if v.tm == nil {
		tm := TimeModelFor(e.in.Model, v.res)
		tm.Engine, tm.MFU = e.in.Engine, e.in.MFU
		tm.PromptTokens, tm.OutputTokens = e.in.PromptTokens, e.in.OutputTokens
		v.tm = tm
	}
	return v.tm
}

// timeJob fills cd's timing, run and billed hours and cost; false when the GPU lacks a
// figure or the task is not timed.
func (e *evaluator) timeJob(cd *cand, v *variant, o *pricing.Offer, c *gpuCaps) bool {
	if !c.known {
		return false
	}
	tm := e.timeModel(v)
	count := float64(cd.vk.gpus)
	if o.Fractional() {
		count = o.GPUCount
	}
	nodes := max(cd.vk.nodes, 1)
	if nodes > 1 {
		return e.timeCluster(cd, tm, o, c, count, nodes)
	}
	var f *offerFacts
	if e.in.facts != nil {
		f = &e.in.facts[cd.i]
	} else {
		f = new(offerFacts) // hourly ranking: only the reported offers are timed
	}
	if !f.set {
		b := BillingFor(o.Provider)
		*f = offerFacts{inc: float32(b.Increment), min: float32(b.Minimum), pcie: InstanceGPULink(o.Provider, o.InstanceType) == 0, set: true}
	}
	var tv *timingVal
	if !o.Fractional() && e.in.nCaps > 0 {
		slot := 2 * c.idx
		if f.pcie {
			slot++
		}
		if v.times == nil {
			v.times = make([]timingVal, 2*e.in.nCaps)
		}
		tv = &v.times[slot]
	} else {
		tv = new(timingVal) // a vGPU slice: its fraction is its own count
	}
	if !tv.set {
		g, ok := c.timeGPU(v.res.Job.Precision)
		g.Count = count
		if count > 1 && f.pcie {
			g.LinkGBs = 0
		}
		if ok {
			tv.t, tv.ok = tm.Estimate(&g)
		}
		tv.set = true
	}
	if !tv.ok {
		return false
	}
	t := &tv.t
	cd.tim = t
	if e.in.Tokens <= 0 {
		return true
	}
	e.bill(cd, tm, t, Billing{Increment: float64(f.inc), Minimum: float64(f.min)}, o.PriceUSDHr)
	return true
}

// bill sets cd's run hours, setup-plus-run hours and billed cost at pricePerHour.
func (e *evaluator) bill(cd *cand, tm *TimeModel, t *Timing, b Billing, pricePerHour float64) {
	cd.hours = tm.JobSeconds(*t, e.in.Tokens, e.in.Requests) / 3600
	cd.total = cd.hours + e.setup
	cd.cost = b.BilledHours(cd.total) * pricePerHour
}

// timeCluster times a multi-node plan (--nodes): training runs ZeRO-3 over every GPU of
// every node, its collectives crossing the cluster interconnect (interconnect.csv's
// per-node Gbit/s shared by the node's GPUs) instead of NVLink; inference runs tensor
// parallel within a node and pipeline stages across nodes, which take turns on each
// decode step, so the plan decodes at one node's rate (Narayanan et al. 2021, "Efficient
// Large-Scale Language Model Training on GPU Clusters", §2.2: pipeline parallelism adds
// capacity, not per-token speed). Uncached: multi-node plans are few.
func (e *evaluator) timeCluster(cd *cand, tm *TimeModel, o *pricing.Offer, c *gpuCaps, perNode float64, nodes int) bool {
	g, ok := c.timeGPU(e.variant(cd.vk).res.Job.Precision)
	if !ok {
		return false
	}
	g.Count = perNode
	if e.job.IsTraining() {
		g.Count = perNode * float64(nodes)
		if ic, ok := LookupInterconnect(o.Provider, o.InstanceType); ok && perNode > 0 {
			g.LinkGBs = min(g.LinkGBs, ic.GbpsPerNode/8/perNode) // Gbit/s per node -> GB/s per GPU
		}
	}
	t, ok := tm.Estimate(&g)
	if !ok {
		return false
	}
	cd.tim = &t
	if e.in.Tokens > 0 {
		e.bill(cd, tm, &t, BillingFor(o.Provider), o.PriceUSDHr*float64(nodes))
	}
	return true
}

// evaluate judges offer i; ok=false when it doesn't fit or can't run the job.
func (e *evaluator) evaluate(i int) (cand, bool) {
	if e.nodes > 1 || e.autoNodes {
		return e.evaluateNodes(i) // nodes.go
	}
	return e.evaluateAt(i, 1)
}

// evaluateAt judges offer i as n identical instances.
func (e *evaluator) evaluateAt(i, n int) (cand, bool) {
	o := &e.in.Offers[i]
	g := e.gpusFor(o)
	if g == 0 || g < e.minGPUs {
		return cand{}, false
	}
	c := e.caps[i]
	if e.fp8 && !(c.known && c.fp8) {
		return cand{}, false // fp8 kernels need fp8 tensor cores (fp8.go); see Recommendation.Excluded
	}
	fp16 := c.known && ((!c.bf16 && e.bf16) || (!c.flash && e.flash))
	if fp16 && !c.bf16 && e.job.IsTraining() && e.job.Precision == "bf16" {
		return cand{}, false // pure-bf16 training has no fp16 equivalent without loss scaling
	}
	vk := variantKey{g, fp16, n}
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
	cd := cand{i: i, primary: o.PriceUSDHr * float64(max(n, 1)), spare: mem - v.need, hours: -1, vk: vk, need: v.need}
	// Job time is needed per offer only to rank by job cost or to hold a deadline;
	// hourly ranking computes it for the few offers it reports (in fit).
	if e.in.Rank == RankJob || e.in.Deadline > 0 {
		timed := e.timeJob(&cd, v, o, c) && cd.hours >= 0
		if e.in.Deadline > 0 && (!timed || cd.total > e.in.Deadline.Hours()) {
			return cand{}, false
		}
		if e.in.Rank == RankJob {
			cd.primary = math.Inf(1)
			if timed {
				cd.primary = cd.cost
			}
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
	if cd.tim == nil {
		e.timeJob(&cd, e.variant(cd.vk), o, e.caps[cd.i])
	}
	if t := cd.tim; t != nil && t.TokensPerSec > 0 {
		f.TokensPerSec, f.TimeBound = ptr(round3(t.TokensPerSec)), t.Bound
		if !e.job.IsTraining() {
			f.TTFTSec = ptr(round3(t.TTFTSec))
			f.USDPerMOutTokens = ptr(round3(o.PriceUSDHr / (t.TokensPerSec * 3600) * 1e6))
		}
	}
	if cd.hours >= 0 {
		f.EstHours, f.EstCostUSD = ptr(round3(cd.hours)), ptr(round3(cd.cost))
		f.SetupHours = ptr(round3(e.setup))
		f.BilledHours = ptr(round3(BillingFor(o.Provider).BilledHours(cd.total)))
	}
	if cd.vk.nodes > 1 {
		e.describeNodes(&f, cd) // nodes.go
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
	if in.Tokens == 0 && in.Requests > 0 && in.OutputTokens > 0 {
		in.Tokens = in.Requests * in.OutputTokens
	}
	if in.Rank == RankJob && in.Tokens <= 0 {
		return nil, pricing.ParamErrorf(pricing.Invalid, "tokens", "--rank job needs --tokens N (training or generated tokens of the whole job; for inference also --requests N with --output-tokens M)")
	}
	if err := checkTimeInput(&in); err != nil {
		return nil, err
	}
	// A serving workload sizes the KV cache too: without --seq-len, a sequence holds
	// the prompt and the whole output.
	if !in.Job.IsTraining() && in.Job.SeqLen == 0 && in.PromptTokens+in.OutputTokens > 0 {
		in.Job.SeqLen = int(math.Ceil(in.PromptTokens + in.OutputTokens))
	}
	if in.MFU < 0 || in.MFU > 1 {
		return nil, pricing.ParamErrorf(pricing.Invalid, "mfu", "--mfu %v: want a fraction between 0 and 1", in.MFU)
	}
	if in.Top <= 0 {
		in.Top = 10
	}
	// Validate the job once up front, so a bad job is an error, not "nothing fits".
	base := in.Job
	base.NodesAuto = false // validated on one instance; nodes.go tries the counts
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
			c = &gpuCaps{known: known, bf16: g.SupportsBF16, flash: g.FlashAttention(), fp8: g.FP8, spec: g, idx: len(byName)}
			byName[name] = c
		}
		caps[i] = c
	}
	if err := checkNodeOffers(&in); err != nil { // nodes.go
		return nil, err
	}
	in.nCaps = len(byName)
	if in.Rank == RankJob || in.Deadline > 0 {
		in.facts = make([]offerFacts, len(in.Offers))
	}
	ev := newEvaluator(&in, in.Job, caps)
	fits, front := rankFitsFrontier(ev, in.Top, in.Rank == RankJob)
	rec := &Recommendation{Offers: fits, Ladder: []LadderStep{}, Warnings: []string{}, Frontier: front}
	if len(fits) > 0 {
		rec.Estimate = ev.variant(fits[0].vk).res
	} else {
		rec.Estimate = baseRes
	}
	rec.Ladder = ladder(&in, caps, fits)
	rec.Excluded = fp8Exclusions(&in, caps) // fp8.go
	rec.CheapestCluster = cheapestCluster(&in, caps, fits)
	rec.Warnings = append(warnings(&in, rec), exclusionWarnings(rec.Excluded)...)
	if len(fits) == 0 {
		rec.NearestMiss = nearestMiss(&in, ev, rec.Ladder) + nodesMiss(&in, caps) // nodes.go
	}
	return rec, nil
}

// rankFits evaluates every offer and returns the best top fits, best first. It keeps
// only the top candidates (insertion into a short sorted slice), so 100k offers cost
// 100k evaluations and no sort of the whole list.
func rankFits(ev *evaluator, top int) []Fit {
	fits, _ := rankFitsFrontier(ev, top, false)
	return fits
}

// rankFitsFrontier is rankFits that also returns the time-cost frontier when asked
// (the timed candidates are kept, then swept once in cost order).
func rankFitsFrontier(ev *evaluator, top int, withFrontier bool) ([]Fit, []Fit) {
	best := make([]cand, 0, top+1)
	var timed []point
	// cheapest and fastest so far: a point both of them beat is not on the frontier, so
	// most of 100k offers are never kept.
	cheap, fast := point{math.Inf(1), math.Inf(1), -1}, point{math.Inf(1), math.Inf(1), -1}
	for i := range ev.in.Offers {
		cd, ok := ev.evaluate(i)
		if !ok {
			continue
		}
		if withFrontier && cd.hours >= 0 {
			p := point{cd.cost, cd.total, cd.i}
			dominated := func(a point) bool {
				return a.cost <= p.cost && a.total <= p.total && (a.cost < p.cost || a.total < p.total)
			}
			if !dominated(cheap) && !dominated(fast) {
				timed = append(timed, p)
			}
			if p.cost < cheap.cost || (p.cost == cheap.cost && p.total < cheap.total) {
				cheap = p
			}
			if p.total < fast.total || (p.total == fast.total && p.cost < fast.cost) {
				fast = p
			}
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
	var front []Fit
	onFront := map[int]bool{}
	if withFrontier {
		for _, cd := range frontier(ev, timed) {
			f := ev.fit(cd)
			f.Frontier = true
			front = append(front, f)
			onFront[cd.i] = true
		}
	}
	out := make([]Fit, len(best))
	for i, cd := range best {
		out[i] = ev.fit(cd)
		out[i].Frontier = onFront[cd.i]
	}
	return out, front
}

// checkTimeInput validates the time-model inputs of a recommendation.
func checkTimeInput(in *RecommendInput) error {
	if in.Engine != "" && !slices.Contains(Engines, in.Engine) {
		return pricing.ParamErrorf(pricing.Invalid, "engine", "--engine %q: want one of %s", in.Engine, strings.Join(Engines, ", "))
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"prompt-tokens", in.PromptTokens}, {"output-tokens", in.OutputTokens}, {"requests", in.Requests}} {
		if c.v < 0 || math.IsNaN(c.v) || math.IsInf(c.v, 0) {
			return pricing.ParamErrorf(pricing.Invalid, c.name, "--%s %v: want a non-negative number", c.name, c.v)
		}
	}
	if in.SetupHours != nil && (*in.SetupHours < 0 || math.IsNaN(*in.SetupHours)) {
		return pricing.ParamErrorf(pricing.Invalid, "setup", "--setup %v h: want a non-negative duration", *in.SetupHours)
	}
	if in.Deadline < 0 {
		return pricing.ParamErrorf(pricing.Invalid, "deadline", "--deadline %s: want a positive duration", in.Deadline)
	}
	if in.Deadline > 0 && in.Tokens <= 0 {
		return pricing.ParamErrorf(pricing.Invalid, "deadline", "--deadline needs the job's size: --tokens N (or --requests N with --output-tokens M)")
	}
	return nil
}

func ptr(v float64) *float64 { return &v }

// point is a timed candidate reduced to what the frontier needs (24 bytes, so 100k
// offers stay cheap to keep and sort).
type point struct {
	cost, total float64
	i           int
}

// frontier returns the offers no other beats on both billed cost and total hours,
// cheapest first: sorted by cost (then time, then offer key), an offer is on the
// frontier when it is faster than every cheaper one.
func frontier(ev *evaluator, pts []point) []cand {
	sort.Slice(pts, func(a, b int) bool {
		if pts[a].cost != pts[b].cost {
			return pts[a].cost < pts[b].cost
		}
		if pts[a].total != pts[b].total {
			return pts[a].total < pts[b].total
		}
		return keyLess(&ev.in.Offers[pts[a].i], &ev.in.Offers[pts[b].i])
	})
	var out []cand
	best := math.Inf(1)
	for _, p := range pts {
		if p.total < best {
			if cd, ok := ev.evaluate(p.i); ok {
				out = append(out, cd)
			}
			best = p.total
		}
	}
	return out
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
		probe.NodesAuto = false
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
			if v := ev.variant(variantKey{g, false, 1}); v.err == nil {
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
	v := ev.variant(variantKey{g, false, 1})
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

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
	// spanned says why a pinned --gpus larger than every instance became a cluster plan
	// (spanPinnedGPUs, nodes.go); empty otherwise.
	spanned string
	Top     int // 0 = 10
	// ByRegion lists an offer once per region; by default offers that differ only in
	// region are one row with their regions listed (Fit.Regions).
	ByRegion bool
	// Vendor keeps only GPUs of that vendor (VendorNVIDIA, VendorAMD); "" or VendorAny
	// keeps all. Excluded offers are counted in Recommendation.Excluded.
	Vendor string
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
	// GPUsUsed is the GPU count the job was estimated at on this offer: for tensor-parallel
	// inference the largest degree dividing the attention heads, which may leave GPUs of
	// the instance idle (the whole instance is still paid for).
	GPUsUsed int `json:"gpus_used"`
	// Notes say how the job had to change for this GPU (fp16 instead of bf16, …).
	Notes []string `json:"notes,omitempty"`
	// Regions are every region ("region/zone" where zoned) offering this instance at this
	// price, this one first; empty when only its own (or with --by-region).
	Regions []string `json:"regions,omitempty"`
	// Nodes, ClusterPriceUSDHr, Layout and Interconnect describe a multi-node plan
	// (--nodes): Nodes identical instances of this offer at Nodes × PriceUSDHr.
	Nodes             int     `json:"nodes,omitempty"`
	ClusterPriceUSDHr float64 `json:"cluster_price_usd_hr,omitempty"`
	Layout            string  `json:"layout,omitempty"`
	Interconnect      string  `json:"interconnect,omitempty"`

	vk variantKey // the estimate this fit was judged with
}

// Recommendation is Recommend's answer.
type Recommendation struct {
	// Estimate is the job at the GPU count of the best offer (or Job.GPUs when pinned,
	// 1 when nothing fits).
	Estimate *Result      `json:"estimate"`
	Offers   []Fit        `json:"offers"`
	Ladder   []LadderStep `json:"ladder"`
	// Rejected are the rungs that apply to the job but would not save money, with why.
	Rejected []RejectedStep `json:"rejected"`
	// Plan is the cheapest combination of rungs; nil when no rung saves money.
	Plan     *Plan    `json:"plan"`
	Warnings []string `json:"warnings"`
	// NearestMiss explains why nothing fits; empty when some offer fits.
	NearestMiss string `json:"nearest_miss,omitempty"`
	// Excluded lists offers left out whatever their memory, with the reason, one entry
	// per GPU model: fp8 jobs on GPUs without fp8, and the software stack (stack.go: no
	// current PyTorch, no bitsandbytes, pure bf16 without bf16, --vendor).
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

// memPerDevice is what one process can use on one device of the offer: the GPU model's
// usable memory (gpus.csv usable_gib, whatever the provider reported), or the slice's share
// of it.
func (c *gpuCaps) memPerDevice(o *pricing.Offer) float64 {
	if !c.known || c.spec.UsableGiB <= 0 {
		return o.MemPerDeviceGiB()
	}
	if o.Fractional() {
		return o.GPUCount * c.spec.UsableGiB
	}
	return c.spec.UsableGiB
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
	base    *Result // the job as asked at its base GPU count (prepare)
	needs   stackNeeds
	tp      bool // tensor-parallel inference: GPU counts must divide the attention heads
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
	e := &evaluator{in: in, job: job, headroom: h, caps: caps, setup: setup,
		bf16: job.UsesBF16(), flash: job.UsesFlashAttention(), offload: job.Offload.Enabled(),
		fp8: job.UsesFP8(), nodes: job.Nodes, autoNodes: job.NodesAuto, multiCache: map[variantKey]*variant{}}
	probe := job
	if !in.PinGPUs || probe.GPUs == 0 {
		probe.GPUs = 1
	}
	probe.Nodes, probe.NodesAuto = 0, false
	if res, err := Estimate(in.Model, probe); err == nil {
		e.needs = needsOf(res, in.Vendor)
	}
	e.tp = !job.IsTraining() && !in.Model.IsImageModel() && (job.Shard == "" || job.Shard == "tp")
	return e
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
	if e.tp {
		return e.in.Model.largestTP(n)
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
		if f.pcie {
			if count > 1 {
				g.LinkGBs = 0
			}
			if g.PeakTFLOPS > 0 && v.res.Job.Precision != "fp32" {
				applyPowerCap(&g, powerCapTFLOPS(c.spec, true)) // the PCIe card's TDP
			}
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
	if r, _ := e.needs.reason(c); r != "" {
		return cand{}, false // the software stack (stack.go); see Recommendation.Excluded
	}
	fp16 := c.known && ((!c.bf16 && e.bf16) || (!c.flash && e.flash))
	vk := variantKey{g, fp16, n}
	v := e.variant(vk)
	if v.err != nil {
		return cand{}, false
	}
	mem := c.memPerDevice(o)
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
	f := Fit{Offer: o.WithUsableMemory(), NeedPerGPUGiB: round3(cd.need), SparePerGPUGiB: round3(cd.spare), GPUsUsed: cd.vk.gpus, vk: cd.vk}
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
	if n := int(math.Floor(o.GPUCount + 1e-9)); e.tp && !e.in.PinGPUs && cd.vk.gpus < n {
		f.Notes = append(f.Notes, fmt.Sprintf("tensor parallelism on %d of the %d GPUs: the degree must divide %s's %d attention heads (the whole instance is paid for)",
			cd.vk.gpus, n, e.in.Model.Name, e.in.Model.dec.heads))
	}
	f.Notes = append(f.Notes, stackNotes(e.caps[cd.i])...)
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
	rin, ev, err := prepare(in)
	if err != nil {
		return nil, err
	}
	caps, baseRes := ev.caps, ev.base
	fetch := rin.Top
	if !rin.ByRegion {
		fetch = min(rin.Top*groupFetchFactor, len(rin.Offers))
	}
	fits, front := rankFitsFrontier(ev, fetch, rin.Rank == RankJob)
	if !rin.ByRegion {
		fits = groupByRegion(fits, rin.Top)
	}
	rec := &Recommendation{Offers: fits, Ladder: []LadderStep{}, Rejected: []RejectedStep{}, Warnings: []string{}, Frontier: front}
	// The estimate is the job as asked, at the best offer's GPU count: an offer's own
	// adaptation (fp16 on a GPU without bf16) is in that offer's notes and need.
	rec.Estimate = baseRes
	if len(fits) > 0 {
		vk := fits[0].vk
		vk.fp16 = false
		if v := ev.variant(vk); v.err == nil {
			rec.Estimate = v.res
		}
	}
	rec.Ladder, rec.Rejected, rec.Plan = ladder(rin, caps, ev, fits, rec.Estimate)
	rec.Excluded = append(fp8Exclusions(rin, caps), stackExclusions(rin, caps, ev.needs)...) // fp8.go, stack.go
	rec.CheapestCluster = cheapestCluster(rin, caps, fits)
	rec.Warnings = append(append(warnings(rin, rec), exclusionWarnings(rec.Excluded)...), rec.Estimate.Warnings...)
	if rin.spanned != "" {
		rec.Warnings = append(rec.Warnings, rin.spanned)
	}
	if len(fits) == 0 {
		rec.NearestMiss = nearestMiss(rin, ev, rec.Ladder) + nodesMiss(rin, caps) // nodes.go
	}
	return rec, nil
}

// prepare checks and defaults the input, validates the job (a bad job is an error, not
// "nothing fits") and returns the evaluator of the job as asked, over in.Offers.
func prepare(in RecommendInput) (*RecommendInput, *evaluator, error) {
	if in.Model == nil {
		return nil, nil, pricing.Errorf(pricing.Invalid, "no model given")
	}
	if in.Rank == "" {
		in.Rank = RankHourly
	}
	if _, err := ParseRank(string(in.Rank)); err != nil {
		return nil, nil, err
	}
	if in.Tokens == 0 && in.Requests > 0 && in.OutputTokens > 0 {
		in.Tokens = in.Requests * in.OutputTokens
	}
	if in.Rank == RankJob && in.Tokens <= 0 {
		return nil, nil, pricing.ParamErrorf(pricing.Invalid, "tokens", "--rank job needs --tokens N (training or generated tokens of the whole job; for inference also --requests N with --output-tokens M)")
	}
	if err := checkTimeInput(&in); err != nil {
		return nil, nil, err
	}
	// A serving workload sizes the KV cache too: without --seq-len, a sequence holds
	// the prompt and the whole output.
	if !in.Job.IsTraining() && in.Job.SeqLen == 0 && in.PromptTokens+in.OutputTokens > 0 {
		in.Job.SeqLen = int(math.Ceil(in.PromptTokens + in.OutputTokens))
	}
	if in.MFU < 0 || in.MFU > 1 {
		return nil, nil, pricing.ParamErrorf(pricing.Invalid, "mfu", "--mfu %v: want a fraction between 0 and 1", in.MFU)
	}
	if in.Top <= 0 {
		in.Top = 10
	}
	// No more offers can be shown than there are: --top is clamped, so a huge value costs
	// nothing (the top list is allocated at this size).
	in.Top = max(1, min(in.Top, len(in.Offers)))
	in.spanned = spanPinnedGPUs(&in) // nodes.go
	// Validate the job once up front, so a bad job is an error, not "nothing fits".
	base := in.Job
	base.NodesAuto = false // validated on one instance; nodes.go tries the counts
	if !in.PinGPUs {
		base.GPUs = 0 // the default count, not a pinned one
	}
	baseRes, err := Estimate(in.Model, base)
	if err != nil {
		return nil, nil, err
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
		return nil, nil, err
	}
	in.nCaps = len(byName)
	if in.Rank == RankJob || in.Deadline > 0 {
		in.facts = make([]offerFacts, len(in.Offers))
	}
	rin := &in
	ev := newEvaluator(rin, in.Job, caps)
	ev.base = baseRes
	return rin, ev, nil
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
		if strings.Contains(n, "runs in fp16") {
			n += " (fp16 may need loss scaling; check numerics)"
		}
		w = append(w, n)
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

// nearestMiss explains why no offer fits: the binding constraint (capability, host RAM,
// GPU count or memory; missreason.go) and the smallest change that would fit.
func nearestMiss(in *RecommendInput, ev *evaluator, steps []LadderStep) string {
	if len(in.Offers) == 0 {
		return NoOffersMiss
	}
	return bindingMiss(in, ev, steps)
}

func num1(v float64) string { return fmt.Sprintf("%.1f", v) }
func num2(v float64) string { return fmt.Sprintf("%.2f", v) }

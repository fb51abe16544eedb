package recommend

import (
	"fmt"
	"math"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/pricing"
)

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
	tg   [2]jobtime.TimeGPU
	tgOK [2]bool
	tgAt [2]bool // computed
}

// timeGPU returns the GPU's figures for a precision, computed once per class.
func (c *gpuCaps) timeGPU(precision fit.Precision) (jobtime.TimeGPU, bool) {
	k := 0
	if precision == "fp32" {
		k = 1
	}
	if !c.tgAt[k] {
		c.tg[k], c.tgOK[k] = jobtime.TimeGPUFor(c.spec, precision, 1, -1)
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
	res  *fit.Result
	need float64 // per GPU, with headroom
	err  error
	tm   *jobtime.TimeModel // built on first use
	// times memoizes the timing per GPU model (gpuCaps.idx) and link (x2: PCIe board),
	// for whole-GPU offers: the variant fixes the GPU count and precision.
	// A slot's value is allocated on first use: a variant fixes the GPU count, and few
	// of the call's GPU models come in it (a dense array cost 11 KB per variant).
	times []*timingVal
	// ckpt is the job's checkpoint bytes (spotrisk.go), computed once.
	ckpt    float64
	ckptSet bool
}

// evaluator estimates one job on many offers, caching the estimate per GPU count and
// capability variant: a catalogue of 100k offers holds only a few dozen distinct pairs,
// so the per-offer work is array lookups and a comparison.
type evaluator struct {
	in       *RecommendInput
	job      fit.Job
	headroom float64
	cache    [maxCachedGPUs + 1][2]*variant
	caps     []*gpuCaps // per offer, shared by every evaluator of one Recommend call
	bf16     bool       // the job uses bf16 (GPUs without it switch to fp16)
	flash    bool       // the job asks for FlashAttention
	offload  bool
	// minGPUs skips offers with fewer GPUs (the ZeRO-3 rung needs GPUs to shard across).
	minGPUs int
	base    *fit.Result // the job as asked at its base GPU count (prepare)
	needs   stackNeeds
	// codes memoizes needs.code per GPU model (gpuCaps.idx; codeAt: computed): the
	// check builds kernel names, and every offer of a model asks it the same.
	codes  []string
	codeAt []bool
	slab   []timingVal // newTiming's
	tp     bool        // tensor-parallel inference: GPU counts must divide the attention heads
	fp8    bool        // the job needs fp8 tensor cores (fp8.go)
	// multi-node (nodes.go): explicit node count, or auto; multiCache holds their variants.
	nodes        int
	autoNodes    bool
	clustersOnly bool // auto, but two or more instances only
	multiCache   map[variantKey]*variant
	setup        float64 // start-up hours billed before the job runs
	noQuota      bool    // judge offers as if no quota bound them (quota.go counts what it leaves out)
	weightBytes  float64 // the checkpoint as stored, downloaded at setup and kept on disk (allin.go)
}

type timingVal struct {
	set bool
	t   jobtime.Timing
	ok  bool
	// unit is t's seconds per unit of work (+Inf untimed), secs the whole job's run
	// seconds (0 without a job size): memoized with t, so an offer costs a multiply.
	unit, secs float64
}

// fill sets tv from timing t of tm: its seconds per unit of work and the job's run time.
func (e *evaluator) fill(tv *timingVal, tm *jobtime.TimeModel, t jobtime.Timing, ok bool) {
	tv.t, tv.ok, tv.set = t, ok, true
	tv.unit = math.Inf(1)
	if !ok {
		return
	}
	tv.unit = unitSeconds(tm, t)
	if w := e.in.work(); w > 0 && !math.IsInf(tv.unit, 1) {
		tv.secs = tm.JobSeconds(t, w, e.in.Requests)
	}
}

// maxCachedGPUs bounds the GPU counts the variant cache holds; larger counts (none
// seen in practice: clouds sell up to 16 GPUs per instance) are estimated uncached.
const maxCachedGPUs = 64

func newEvaluator(in *RecommendInput, job fit.Job, caps []*gpuCaps) *evaluator {
	h := in.HeadroomPct
	if h < 0 {
		h = DefaultHeadroomPct
	}
	setup := jobtime.SetupHours(fit.CheckpointBytes(in.Model)) // a 16-bit checkpoint to download
	if in.SetupHours != nil {
		setup = *in.SetupHours
	}
	e := &evaluator{in: in, job: job, headroom: h, caps: caps, setup: setup, weightBytes: fit.CheckpointBytes(in.Model),
		bf16: job.UsesBF16(), flash: job.UsesFlashAttention(), offload: job.Offload.Enabled(),
		fp8: job.FP8Cores(), nodes: job.Nodes, autoNodes: job.NodesAuto, multiCache: map[variantKey]*variant{}}
	probe := job
	if !in.PinGPUs || probe.GPUs == 0 {
		probe.GPUs = 1
	}
	probe.Nodes, probe.NodesAuto = 0, false
	if res, err := fit.Estimate(in.Model, probe); err == nil {
		e.needs = needsOf(res, in.Vendor)
	}
	e.tp = !job.IsTraining() && !in.Model.IsImageModel() && (job.Shard == "" || job.Shard == "tp") && job.Split != fit.SplitLayer
	return e
}

// newTiming is a zero timingVal from the evaluator's slab: a ladder judges each of its
// variants' GPU models and links once, several hundred an answer, and one allocation
// each cost more than the timing itself. A full slab is replaced, never grown, so the
// pointers handed out stay put.
func (e *evaluator) newTiming() *timingVal {
	if len(e.slab) == cap(e.slab) {
		e.slab = make([]timingVal, 0, timingSlab)
	}
	e.slab = e.slab[:len(e.slab)+1]
	return &e.slab[len(e.slab)-1]
}

// timingSlab is how many timings newTiming allocates at once.
const timingSlab = 16

// stackCode is e.needs.code(c), computed once per GPU model and evaluator.
func (e *evaluator) stackCode(c *gpuCaps) string {
	if c.idx >= len(e.codes) {
		n := max(c.idx+1, e.in.nCaps)
		e.codes = append(e.codes, make([]string, n-len(e.codes))...)
		e.codeAt = append(e.codeAt, make([]bool, n-len(e.codeAt))...)
	}
	if !e.codeAt[c.idx] {
		e.codes[c.idx], e.codeAt[c.idx] = e.needs.code(c), true
	}
	return e.codes[c.idx]
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
		j.Shard = fit.ShardNone // image pipelines run one per GPU
	}
	v := e.estimate(j, k.fp16)
	if k.gpus <= maxCachedGPUs {
		e.cache[k.gpus][fi] = v
	}
	return v
}

// estimate is the variant of job j (fp16: switched to fp16 for a GPU without bf16): its
// estimate and the need per GPU with headroom.
func (e *evaluator) estimate(j fit.Job, fp16 bool) *variant {
	if fp16 {
		j = j.WithFP16()
	}
	v := &variant{}
	v.res, v.err = fit.Estimate(e.in.Model, j)
	if v.err == nil {
		v.need = v.res.DeviceTotalGiB * (1 + e.headroom/100)
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
		return e.in.Model.LargestTP(n)
	}
	return n
}

// cand is an offer that fits, before it is turned into a Fit.
type cand struct {
	i int
	// maxLen is the shorter max_model_len the engine fits with (serving.go); 0 = its default.
	maxLen int
	// primary is the ranking's figure: the price per hour (--rank hourly), the billed job
	// cost (the job's size known) or the cost per unitScale units of work; +Inf when
	// untimed under --rank job. shown is primary as printed (pricing.RoundUSD): costs
	// that print alike tie, and the faster offer wins.
	primary, shown float64
	// speed breaks those ties: setup + run hours when the job's size is known, else
	// seconds per unit of work; +Inf when untimed.
	speed float64
	unit  float64 // seconds per unit of work over the offer's GPUs; +Inf when untimed
	spare float64
	hours float64 // run hours, -1 when unknown
	total float64 // setup + run hours
	wall  float64 // the hours billed: total, on spot with the expected restarts (price)
	cost  float64 // billed job cost
	vk    variantKey
	need  float64
	tim   *jobtime.Timing // nil until timed (or untimed)
	// timed: the time model was asked (evaluator.time); by the hour only ties and the
	// offers reported need it.
	timed bool
	// soldOut: the offer's provider says it has no capacity now (pricing.SoldOut); it
	// ranks after every launchable offer.
	soldOut bool
}

// timeModel returns the variant's time model, built once.
func (e *evaluator) timeModel(v *variant) *jobtime.TimeModel {
	if v.tm == nil {
		tm := jobtime.TimeModelFor(e.in.Model, v.res)
		tm.Engine, tm.MFU = e.in.Engine, e.in.MFU
		tm.Steps = float64(e.in.Steps)
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
	f := e.in.factsOf(cd.i)
	var tv *timingVal
	if !o.Fractional() && e.in.nCaps > 0 {
		slot := 2 * c.idx
		if f.pcie {
			slot++
		}
		if v.times == nil {
			v.times = make([]*timingVal, 2*e.in.nCaps)
		}
		if v.times[slot] == nil {
			v.times[slot] = e.newTiming()
		}
		tv = v.times[slot]
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
				jobtime.ApplyPowerCap(&g, jobtime.PowerCapTFLOPS(c.spec, true)) // the PCIe card's TDP
			}
		}
		var t jobtime.Timing
		if ok {
			t, ok = tm.Estimate(&g)
		}
		e.fill(tv, tm, t, ok)
	}
	if !tv.ok {
		return false
	}
	e.bill(cd, tv)
	return true
}

// bill records timing tv on cd: seconds per unit of work and, when the job's size is
// known, run hours and setup-plus-run hours (priced by evaluator.price).
func (e *evaluator) bill(cd *cand, tv *timingVal) {
	cd.tim = &tv.t
	cd.unit, cd.speed = tv.unit, tv.unit
	if e.in.work() > 0 && !math.IsInf(tv.unit, 1) {
		cd.hours = tv.secs / 3600
		cd.total = cd.hours + e.setup
		cd.speed = cd.total
	}
}

// price sets cd's figures that follow the offer's price (its cluster's for a multi-node
// plan): the billed job cost when the job's size is known, the ranking's figure and how
// it is shown. Offers of one shape differ only here (ShapePlan reprices them).
func (e *evaluator) price(cd *cand) {
	o := &e.in.Offers[cd.i]
	price := o.PriceUSDHr * float64(max(cd.vk.nodes, 1))
	cd.primary = price
	if cd.hours >= 0 {
		f := e.in.factsOf(cd.i)
		// The instance runs setup plus the job, on spot its expected run (spotrisk.go);
		// the disk is paid for as long, the egress once (allin.go). The ranking's speed
		// and the frontier's time stay the uninterrupted run's (cd.total): an offer's
		// expected restarts are in its cost.
		cd.wall = cd.total
		if o.Purchase == pricing.Spot {
			cd.wall = e.setup + e.spotPlan(cd, o).WallHours
		}
		disk, egress := e.extras(cd, o, cd.wall)
		cd.cost = jobtime.Billing{Increment: float64(f.inc), Minimum: float64(f.min)}.BilledHours(cd.wall)*price + disk + egress
	}
	if e.in.Rank == RankJob {
		switch {
		case cd.hours >= 0:
			cd.primary = cd.cost
		case e.in.work() <= 0 && !math.IsInf(cd.unit, 1):
			cd.primary = cd.unit / 3600 * price * e.in.unitScale()
		default:
			cd.primary = math.Inf(1) // untimed: after every timed offer
		}
	}
	cd.shown = pricing.RoundUSD(cd.primary)
}

// unitSeconds is the time model's seconds per unit of work; +Inf when not timed.
func unitSeconds(tm *jobtime.TimeModel, t jobtime.Timing) float64 {
	u := tm.UnitSeconds(t)
	if !(u > 0) {
		return math.Inf(1)
	}
	return u
}

// timeCluster times a multi-node plan (--nodes): training runs ZeRO-3 over every GPU of
// every node, its collectives crossing the cluster interconnect (interconnect.csv's
// per-node Gbit/s shared by the node's GPUs) instead of NVLink; inference runs tensor
// parallel within a node and pipeline stages across nodes, which take turns on each
// decode step, so the plan decodes at one node's rate (Narayanan et al. 2021, "Efficient
// Large-Scale Language Model Training on GPU Clusters", §2.2: pipeline parallelism adds
// capacity, not per-token speed). Uncached: multi-node plans are few.
func (e *evaluator) timeCluster(cd *cand, tm *jobtime.TimeModel, o *pricing.Offer, c *gpuCaps, perNode float64, nodes int) bool {
	g, ok := c.timeGPU(e.variant(cd.vk).res.Job.Precision)
	if !ok {
		return false
	}
	g.Count = perNode
	if e.job.IsTraining() {
		g.Count = perNode * float64(nodes)
		if ic, ok := LookupInterconnect(o.Provider, o.InstanceType); ok && perNode > 0 {
			// Hybrid sharding (--shard hsdp) keeps its intra-node traffic on the node's own
			// link (jobtime/hsdp.go); everything else sees the cluster's slowest path.
			g.NodeGPUs, g.NodeLinkGBs = perNode, g.LinkGBs
			g.LinkGBs = min(g.LinkGBs, ic.GbpsPerNode/8/perNode) // Gbit/s per node -> GB/s per GPU
		}
	}
	tv := new(timingVal)
	t, ok := tm.Estimate(&g)
	e.fill(tv, tm, t, ok)
	if !tv.ok {
		return false
	}
	e.bill(cd, tv)
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
	if !e.noQuota && !e.in.quotaAllows(i, n) {
		return cand{}, false // the account's quota (quota.go); see Recommendation.Excluded
	}
	c := e.caps[i]
	if e.fp8 && !(c.known && c.fp8) {
		return cand{}, false // fp8 kernels need fp8 tensor cores (fp8.go); see Recommendation.Excluded
	}
	if e.stackCode(c) != "" {
		return cand{}, false // the software stack (stack.go); see Recommendation.Excluded
	}
	if cudaTooOld(o, c) {
		return cand{}, false // the host's driver (host.go); see Recommendation.Excluded
	}
	fp16 := c.known && ((!c.bf16 && e.bf16) || (!c.flash && e.flash))
	vk := variantKey{g, fp16, n}
	v := e.variant(vk)
	if v.err != nil {
		return cand{}, false
	}
	mem := c.memPerDevice(o)
	need, maxLen := v.need, 0
	if need > mem+1e-9 {
		n, at, ok := e.shorterContext(v, mem) // serving.go
		if !ok {
			return cand{}, false
		}
		need, maxLen = at, n
	}
	if e.offload && o.RAMGiB < v.res.CPURAMGiB*(1+OffloadRAMMarginPct/100)+OffloadRAMMarginGiB {
		return cand{}, false
	}
	inf := math.Inf(1)
	cd := cand{i: i, spare: mem - need, hours: -1, unit: inf, speed: inf, vk: vk, need: need, maxLen: maxLen}
	cd.soldOut = e.in.soldOut(i)
	// Ranked by the cost of the work, or held to a deadline, every offer is timed
	// (memoized per GPU model and link); by the hour, only those whose price ties.
	if e.in.Rank == RankJob || e.in.Deadline > 0 {
		e.timeJob(&cd, v, o, c)
		cd.timed = true
		if e.in.Deadline > 0 && (cd.hours < 0 || cd.total > e.in.Deadline.Hours()) {
			return cand{}, false
		}
	}
	e.price(&cd)
	return cd, true
}

// time times cd if it was not yet, and prices what the time gives (the job's cost).
func (e *evaluator) time(cd *cand) {
	if cd.timed {
		return
	}
	e.timeJob(cd, e.variant(cd.vk), &e.in.Offers[cd.i], e.caps[cd.i])
	cd.timed = true
	e.price(cd)
}

// better orders by the ranking's figure as shown, then the faster offer, then the
// figure itself, the price, the least spare VRAM per GPU (the offer that "just covers"
// the job) and the offer key, so results are deterministic. Within one offer shape
// (same speed and spare) it orders by price, then key: the order the store reads them.
func (e *evaluator) better(a, b *cand) bool {
	if a.soldOut != b.soldOut {
		return b.soldOut
	}
	if a.shown != b.shown {
		return a.shown < b.shown
	}
	e.time(a)
	e.time(b)
	if a.speed != b.speed {
		return a.speed < b.speed
	}
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
	f := Fit{Offer: o.WithUsableMemory(), NeedPerGPUGiB: fit.Round3(cd.need), SparePerGPUGiB: fit.Round3(cd.spare), GPUsUsed: cd.vk.gpus, vk: cd.vk,
		rank: cd.primary, unit: cd.unit}
	if !cd.timed {
		e.time(&cd)
		f.unit = cd.unit
	}
	if t := cd.tim; t != nil && !math.IsInf(cd.unit, 1) {
		f.TimeBound = t.Bound
		perUnit := cd.unit / 3600 * o.PriceUSDHr * float64(max(cd.vk.nodes, 1))
		switch {
		case e.in.Model.IsImageModel():
			f.ImagesPerSec = ptr(fit.Round3(t.ImagesPerSec))
			f.USDPerImage = ptr(roundCost(perUnit))
		case e.job.IsTraining():
			f.TokensPerSec = ptr(fit.Round3(t.TokensPerSec))
			f.USDPerMTokens = ptr(roundCost(perUnit * 1e6))
		default:
			f.TokensPerSec = ptr(fit.Round3(t.TokensPerSec))
			f.TTFTSec = ptr(fit.Round3(t.TTFTSec))
			f.USDPerMOutTokens = ptr(roundCost(perUnit * 1e6))
			if e.in.PromptTokens > 0 && t.PrefillTokensPerSec > 0 { // the prompt's own price, as APIs quote input
				f.USDPerMInTokens = ptr(roundCost(o.PriceUSDHr * float64(max(cd.vk.nodes, 1)) / 3600 / t.PrefillTokensPerSec * 1e6))
			}
		}
	}
	if cd.hours >= 0 {
		f.EstHours, f.EstCostUSD = ptr(fit.Round3(cd.hours)), ptr(fit.Round3(cd.cost))
		f.SetupHours = ptr(fit.Round3(e.setup))
		f.BilledHours = ptr(fit.Round3(jobtime.BillingFor(o.Provider).BilledHours(cd.wall)))
		f.Bill = e.billOf(&cd, o) // allin.go
		if o.Purchase == pricing.Spot {
			f.SpotRisk = e.spotRisk(&cd, o) // spotrisk.go
		}
	}
	if cd.vk.nodes > 1 {
		e.describeNodes(&f, cd) // nodes.go
	}
	if n := int(math.Floor(o.GPUCount + 1e-9)); e.tp && !e.in.PinGPUs && cd.vk.gpus < n {
		f.Notes = append(f.Notes, fmt.Sprintf("tensor parallelism on %d of the %d GPUs: the degree must divide %s's %d attention heads (the whole instance is paid for)",
			cd.vk.gpus, n, e.in.Model.Name, e.in.Model.Dec.Heads))
	}
	f.Notes = append(f.Notes, stackNotes(e.caps[cd.i])...)
	f.Serving = e.serving(&cd) // serving.go
	f.Notes = append(f.Notes, e.servingNotes(&f, &cd)...)
	if n := kernelNote(e.needs.kern, e.caps[cd.i]); n != "" {
		f.Notes = append(f.Notes, n)
	}
	if math.IsInf(f.unit, 1) && e.in.Rank == RankJob {
		f.Notes = append(f.Notes, "not timed (no datasheet compute or bandwidth figure for "+o.GPUModel+"): ranked after every timed offer")
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

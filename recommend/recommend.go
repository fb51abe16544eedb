package recommend

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/model"
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

// RecommendInput is everything Recommend needs; offers are already filtered by the
// caller's provider/region/GPU/purchase/price filters.
type RecommendInput struct {
	Model *model.Model
	Job   fit.Job
	// PinGPUs: the user gave --gpus, so every offer is evaluated at Job.GPUs (and must
	// have at least that many GPUs); otherwise each offer at its own GPU count.
	PinGPUs     bool
	Offers      []pricing.Offer
	HeadroomPct float64 // percent; negative means DefaultHeadroomPct
	Rank        Rank    // "" = RankJob
	Tokens      float64 // training or generated tokens of the whole job; 0 = rank per unit of work
	// Images is the images an image-generation job makes (--image-count); 0 = rank per
	// image. Steps is its denoising steps (--steps); 0 = the pipeline's default.
	Images float64
	Steps  int
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
	// bills caches jobtime.BillingFor per provider (billing).
	bills []providerBilling
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
	// Quotas are the account's launch quotas (store.Quotas; quota.go): an offer whose
	// instance, or --nodes cluster, needs more than the remaining quota is left out
	// (ExclNoQuota) unless IgnoreQuota. Nil: not checked.
	Quotas      []pricing.Quota
	IgnoreQuota bool
	quotas      *quotaIndex
	// SoldOut are the offers their provider reports sold out (store.Capacity), beside
	// each offer's own Available: offers read from the store carry prices only. They
	// rank after every launchable offer (quota.go).
	SoldOut map[pricing.Key]bool

	// The all-in bill and spot risk (allin.go, spotrisk.go): the dataset on the disk
	// (--dataset-gb, GB), what the job uploads (--upload-gb; nil = a training job's
	// trained weights), a fixed checkpoint interval (--checkpoint-every; 0 = Young/Daly),
	// a mean time between spot interruptions that overrides every band (--spot-mtbi), and
	// the stored spot bands and block-storage prices (refresh fetches them).
	DatasetGB       float64
	UploadGB        *float64
	CheckpointEvery time.Duration
	SpotMTBI        time.Duration
	SpotBands       []pricing.SpotBand
	StoragePrices   []pricing.StoragePrice
	bands           map[spotKey]pricing.SpotBand
	rates           map[storageKey]*storageRate
	lastKey         storageKey
	lastRate        *storageRate
}

// offerFacts is what the time model reads from an offer's provider and instance type.
type offerFacts struct {
	egress   float64 // the provider's internet egress, USD per GB
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
	// EstHours is the job's run time (without start-up); EstCostUSD the all-in bill
	// (Bill: the instance-hours billed, setup plus run rounded up to the provider's
	// billing increment and minimum (BilledHours) times the hourly price, with the
	// expected restarts on spot, plus the disk and the egress). Nil without --tokens or
	// a GPU figure.
	EstHours   *float64 `json:"est_hours"`
	EstCostUSD *float64 `json:"est_cost_usd"`
	// Bill itemises EstCostUSD (allin.go); SpotRisk is what a spot offer's expected cost
	// assumed (spotrisk.go).
	Bill        *Bill     `json:"bill,omitempty"`
	SpotRisk    *SpotRisk `json:"spot_risk,omitempty"`
	SetupHours  *float64  `json:"setup_hours,omitempty"`
	BilledHours *float64  `json:"billed_hours,omitempty"`
	// TokensPerSec: training tokens, or generated tokens in steady decoding at the job's
	// batch, per second over the offer's GPUs the job uses. ImagesPerSec: images per
	// second (image generation).
	TokensPerSec *float64 `json:"tokens_per_s,omitempty"`
	ImagesPerSec *float64 `json:"images_per_s,omitempty"`
	// Inference only: time to first token of one request.
	TTFTSec *float64 `json:"ttft_s,omitempty"`
	// The cost of a unit of work on this offer (the whole instance, or cluster, paid for
	// the time the work takes; no start-up or billing rounding): a million trained tokens
	// (training), a million output tokens with their prompts' prefill (inference), one
	// image (image generation). Set on every timed offer; the default ranking's figure
	// when the job's size is not given.
	USDPerMTokens    *float64 `json:"usd_per_m_tokens,omitempty"`
	USDPerMOutTokens *float64 `json:"usd_per_m_output_tokens,omitempty"`
	USDPerImage      *float64 `json:"usd_per_image,omitempty"`
	// USDPerMInTokens is the price of a million prompt tokens alone (their prefill), as
	// APIs quote input beside output; USDPerMOutTokens carries each request's prompt too.
	USDPerMInTokens *float64 `json:"usd_per_m_input_tokens,omitempty"`
	// Serving is the engine's plan on this offer (serving.go): its budget, KV pool,
	// max_model_len and the launch line; nil for transformers generate and training.
	Serving *fit.Serving `json:"serving,omitempty"`
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
	// rank is the ranking's figure (cand.primary) and unit the seconds per unit of work
	// (+Inf untimed): the ladder compares rungs by them.
	rank, unit float64
}

// Recommendation is Recommend's answer.
type Recommendation struct {
	// Estimate is the job at the GPU count of the best offer (or Job.GPUs when pinned,
	// 1 when nothing fits).
	Estimate *fit.Result  `json:"estimate"`
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
	// Frontier (--rank job with the job's size): every fitting offer that no other beats
	// on both cost and time (setup plus run), cheapest first.
	Frontier []Fit `json:"frontier,omitempty"`
	// RankedBy names the Fit field the offers are ordered by (RankedBy* constants);
	// ties (equal as shown, pricing.RoundUSD) go to the faster offer, then the one with
	// less spare memory per GPU.
	RankedBy string `json:"ranked_by"`
	// LadderOmits says what the savings ladder leaves out and why.
	LadderOmits string `json:"ladder_omits,omitempty"`
	// SpotSaving compares the best spot and on-demand offers shown, expected restarts
	// included (spotrisk.go); BillAssumptions say how the job costs were built, each with
	// the flag that overrides it (allin.go).
	SpotSaving      *SpotSaving `json:"spot_saving,omitempty"`
	BillAssumptions []string    `json:"bill_assumptions,omitempty"`
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
	fits, front := rankFitsFrontier(ev, fetch, rin.Rank == RankJob && rin.work() > 0)
	if !rin.ByRegion {
		fits = groupByRegion(fits, rin.Top)
	}
	rec := &Recommendation{Offers: fits, Ladder: []LadderStep{}, Rejected: []RejectedStep{}, Warnings: []string{}, Frontier: front, RankedBy: rin.rankedBy()}
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
	rec.LadderOmits = ladderOmits(rin)
	rec.Excluded = slices.Concat(fp8Exclusions(rin, caps), stackExclusions(rin, caps, ev), hostExclusions(rin, caps)) // fp8.go, stack.go, host.go
	rec.CheapestCluster = cheapestCluster(rin, caps, fits)
	rec.SpotSaving = spotSaving(ev, fits) // spotrisk.go
	rec.BillAssumptions = billAssumptions(rin, ev, rin.hasSpot())
	// Exclusions are in rec.Excluded only, not repeated as warnings: a JSON reader has
	// them structured there, and the CLI prints one summary line of them.
	rec.Warnings = append(warnings(rin, rec), rec.Estimate.Warnings...)
	if rin.spanned != "" {
		rec.Warnings = append(rec.Warnings, rin.spanned)
	}
	if len(fits) == 0 {
		rec.NearestMiss = nearestMiss(rin, ev, rec.Ladder) + nodesMiss(rin, caps) // nodes.go
	}
	launchReport(rin, ev, rec) // quota.go
	return rec, nil
}

// prepare checks and defaults the input, validates the job (a bad job is an error, not
// "nothing fits") and returns the evaluator of the job as asked, over in.Offers.
func prepare(in RecommendInput) (*RecommendInput, *evaluator, error) {
	if in.Model == nil {
		return nil, nil, pricing.Errorf(pricing.Invalid, "no model given")
	}
	if in.Rank == "" {
		in.Rank = RankJob
	}
	if _, err := ParseRank(string(in.Rank)); err != nil {
		return nil, nil, err
	}
	if in.Tokens == 0 && in.Requests > 0 && in.OutputTokens > 0 {
		in.Tokens = in.Requests * in.OutputTokens
	}
	if err := checkTimeInput(&in); err != nil {
		return nil, nil, err
	}
	syncServing(&in) // serving.go
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
	baseRes, err := fit.Estimate(in.Model, base)
	if err != nil {
		return nil, nil, err
	}
	caps := make([]*gpuCaps, len(in.Offers))
	byName := map[string]*gpuCaps{}
	var last *gpuCaps // offers come grouped by GPU model more often than not
	for i := range in.Offers {
		name := in.Offers[i].GPUModel
		if last != nil && name == in.Offers[i-1].GPUModel {
			caps[i] = last
			continue
		}
		c, ok := byName[name]
		if !ok {
			g, known := pricing.LookupGPU(name)
			c = &gpuCaps{known: known, bf16: g.SupportsBF16, flash: g.FlashAttention(), fp8: g.FP8, spec: g, idx: len(byName)}
			byName[name] = c
		}
		caps[i], last = c, c
	}
	if err := checkNodeOffers(&in); err != nil { // nodes.go
		return nil, nil, err
	}
	in.nCaps = len(byName)
	if err := checkBillInput(&in); err != nil { // allin.go
		return nil, nil, err
	}
	in.bands, in.rates = spotBands(in.SpotBands), storageRates(in.StoragePrices)
	// Every offer is timed: the ranking reads its cost of the work, and ties go to the
	// faster offer.
	in.facts = make([]offerFacts, len(in.Offers))
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
		best = keepTop(ev, best, &cd, top)
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
	if in.Engine != "" && !slices.Contains(jobtime.Engines, in.Engine) {
		return pricing.ParamErrorf(pricing.Invalid, "engine", "--engine %q: want one of %s", in.Engine, strings.Join(jobtime.Engines, ", "))
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
	image := in.Model.IsImageModel()
	switch {
	case in.Images < 0 || math.IsNaN(in.Images) || math.IsInf(in.Images, 0):
		return pricing.ParamErrorf(pricing.Invalid, "image-count", "--image-count %v: want a non-negative number", in.Images)
	case in.Steps < 0:
		return pricing.ParamErrorf(pricing.Invalid, "steps", "--steps %d: want a positive number", in.Steps)
	case image && in.Tokens > 0:
		return pricing.ParamErrorf(pricing.Invalid, "tokens", "--tokens sizes a language-model job; %s makes images: --image-count N", in.Model.Name)
	case !image && in.Images > 0:
		return pricing.ParamErrorf(pricing.Invalid, "image-count", "--image-count sizes an image-generation job; %s is a language model: --tokens N", in.Model.Name)
	case !image && in.Steps > 0:
		return pricing.ParamErrorf(pricing.Invalid, "steps", "--steps applies to image generation; %s is a language model", in.Model.Name)
	case in.Deadline > 0 && in.work() <= 0:
		return pricing.ParamErrorf(pricing.Invalid, "deadline", "--deadline needs the job's size: --tokens N (or --requests N with --output-tokens M; --image-count N for images)")
	}
	return nil
}

func ptr(v float64) *float64 { return &v }

// keepTop inserts x into best (sorted by ev.better, at most top long) where it belongs,
// and drops what falls off the end: the top of many candidates without sorting them
// all. Concrete, not generic over a comparison func: a func value would make x escape,
// one heap copy per offer judged.
func keepTop(ev *evaluator, best []cand, x *cand, top int) []cand {
	if len(best) == top && !ev.better(x, &best[top-1]) {
		return best
	}
	k := sort.Search(len(best), func(j int) bool { return ev.better(x, &best[j]) })
	best = slices.Insert(best, k, *x)
	if len(best) > top {
		best = best[:top]
	}
	return best
}

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
	var missing []string
	for _, f := range rec.Offers {
		if math.IsInf(f.unit, 1) && !slices.Contains(missing, f.GPUModel) {
			missing = append(missing, f.GPUModel)
		}
	}
	// Ranked by the cost of the work, each untimed offer's note says so (evaluator.fit).
	if len(missing) > 0 && in.Rank == RankHourly && in.work() > 0 {
		w = append(w, fmt.Sprintf("no datasheet compute/bandwidth figure for %s: the time and cost of the job are unknown there", strings.Join(missing, ", ")))
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

// factsOf returns offer i's facts for the time model, computed on first use.
func (in *RecommendInput) factsOf(i int) *offerFacts {
	var f *offerFacts
	if in.facts != nil {
		f = &in.facts[i]
	} else {
		f = new(offerFacts)
	}
	if !f.set {
		o := &in.Offers[i]
		p := in.providerOf(o.Provider)
		*f = offerFacts{inc: float32(p.b.Increment), min: float32(p.b.Minimum), egress: p.egress, pcie: jobtime.InstanceGPULink(o.Provider, o.InstanceType) == 0, set: true}
	}
	return f
}

// billing is jobtime.BillingFor(provider), looked up once per provider and call: a few
// providers hold every offer, so a short list beats a map lookup per offer.
func (in *RecommendInput) billing(provider string) jobtime.Billing { return in.providerOf(provider).b }

// providerOf is the provider's billing rule and egress price, looked up once per
// provider and call (jobtime.BillingFor, jobtime.CostsFor lower-case the name and
// hash it; every offer asks).
func (in *RecommendInput) providerOf(provider string) providerBilling {
	for i := range in.bills {
		if in.bills[i].provider == provider {
			return in.bills[i]
		}
	}
	p := providerBilling{provider, jobtime.BillingFor(provider), jobtime.CostsFor(provider).EgressUSDPerGB}
	if len(in.bills) < maxBillCache {
		in.bills = append(in.bills, p)
	}
	return p
}

// maxBillCache bounds RecommendInput.bills (a catalogue of many providers looks the
// rest up each time).
const maxBillCache = 32

type providerBilling struct {
	provider string
	b        jobtime.Billing
	egress   float64 // USD per GB out to the internet
}

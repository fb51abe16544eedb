package recommend

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// ladderCatalogue is a spread of GPUs, counts and prices like a cloud's: price per GPU
// roughly follows memory, with cheaper older GPUs, so different techniques land on
// different offers.
func ladderCatalogue() []pricing.Offer {
	gpus := []struct {
		name  string
		mem   float64
		price float64 // per GPU-hour
	}{
		{"T4", 16, 0.35}, {"V100", 16, 0.50}, {"L4", 24, 0.70}, {"A10G", 24, 1.00}, {"RTXA5000", 24, 0.45},
		{"A40", 48, 0.90}, {"L40S", 48, 1.40}, {"A100", 40, 1.30}, {"A100-80GB", 80, 1.80}, {"H100", 80, 2.50},
		{"H200", 141, 3.60}, {"B200", 180, 5.00},
	}
	var out []pricing.Offer
	for _, g := range gpus {
		for _, n := range []float64{1, 2, 4, 8} {
			o := offer("p", fmt.Sprintf("%s-x%g", strings.ToLower(g.name), n), g.name, n, g.mem, g.price*n)
			o.RAMGiB = 16 * n * math.Max(4, g.mem/8) // host RAM grows with the box
			out = append(out, o)
		}
	}
	return out
}

// parseFlags reads a ladder step's flags ("--task qlora --grad-ckpt") as the CLI would.
func parseFlags(t *testing.T, j fit.Job, flags string) fit.Job {
	t.Helper()
	f := strings.Fields(flags)
	for i := 0; i < len(f); i++ {
		name, ok := strings.CutPrefix(f[i], "--")
		p := jobParam(name)
		if !ok || p == nil {
			t.Fatalf("flags %q: %q is not a job flag", flags, f[i])
		}
		v := "true"
		if !p.Bool {
			i++
			v = f[i]
		}
		if err := p.Set(&j, v); err != nil {
			t.Fatalf("flags %q: %v", flags, err)
		}
	}
	return j
}

type ladderJob struct {
	name  string
	model string
	job   fit.Job
	pin   bool
	rank  Rank
}

var ladderJobs = []ladderJob{
	{"llm inference long context", "llama-3-8b", fit.Job{Batch: 16, SeqLen: 8192, Engine: fit.EngineHF}, false, RankHourly},
	{"llm inference 70b", "llama-3-70b", fit.Job{}, false, RankHourly},
	{"lora", "llama-3-8b", fit.Job{Task: fit.TaskLoRA, Batch: 4, SeqLen: 2048}, false, RankHourly},
	{"qlora", "llama-2-7b", fit.Job{Task: fit.TaskQLoRA, Batch: 8, SeqLen: 4096}, false, RankHourly},
	{"full ft", "llama-3-8b", fit.Job{Task: fit.TaskFullFT}, false, RankHourly},
	{"full ft eager fp32", "tinyllama-1.1b", fit.Job{Task: fit.TaskFullFT, Precision: "fp32", Attention: "eager", Batch: 8}, false, RankHourly},
	{"full ft rank job", "llama-3-8b", fit.Job{Task: fit.TaskFullFT}, false, RankJob},
	{"multi-gpu zero3", "llama-2-13b", fit.Job{Task: fit.TaskFullFT, GPUs: 4, Shard: "zero3"}, true, RankHourly},
	{"multi-gpu offload", "llama-2-13b", fit.Job{Task: fit.TaskFullFT, GPUs: 2, Shard: "zero2", Offload: "optimizer"}, true, RankHourly},
	{"image gen flux", "flux.1-dev", fit.Job{}, false, RankHourly},
	{"image gen sdxl fp16", "sdxl-base", fit.Job{Precision: "fp16", Images: 4}, false, RankHourly},
}

func ladderInput(t *testing.T, lj ladderJob, j fit.Job) RecommendInput {
	in := RecommendInput{Model: mustModel(t, lj.model), Job: j, PinGPUs: lj.pin, Offers: ladderCatalogue(), HeadroomPct: 5, Rank: lj.rank}
	if lj.rank == RankJob {
		in.Tokens = 1e8
	}
	return in
}

// checkReproduces runs Recommend with the job's flags plus a step's and asserts the
// step's need and top offer.
func checkReproduces(t *testing.T, lj ladderJob, what string, st LadderStep) {
	t.Helper()
	checkReproducesOn(t, ladderInput(t, lj, lj.job), what, st)
}

// checkReproducesOn is checkReproduces for the ladder of input in.
func checkReproducesOn(t *testing.T, in RecommendInput, what string, st LadderStep) {
	t.Helper()
	in.Job = parseFlags(t, in.Job, st.Flags)
	rec, err := Recommend(in)
	if err != nil {
		t.Errorf("%s %q: recommend with its flags: %v", what, st.Flags, err)
		return
	}
	if st.Cheapest == nil {
		if len(rec.Offers) > 0 {
			t.Errorf("%s %q: nothing fits in the ladder, but with its flags %s fits", what, st.Flags, rec.Offers[0].InstanceType)
		}
		return
	}
	if len(rec.Offers) == 0 {
		t.Errorf("%s %q: fits %s in the ladder, nothing with its flags", what, st.Flags, st.Cheapest.InstanceType)
		return
	}
	top := rec.Offers[0]
	if top.InstanceType != st.Cheapest.InstanceType || top.NeedPerGPUGiB != st.NeedPerGPUGiB || top.GPUsUsed != st.Cheapest.GPUsUsed {
		t.Errorf("%s %q: ladder says %s (%d GPUs) needing %v GiB; recommend with its flags says %s (%d GPUs) needing %v",
			what, st.Flags, st.Cheapest.InstanceType, st.Cheapest.GPUsUsed, st.NeedPerGPUGiB, top.InstanceType, top.GPUsUsed, top.NeedPerGPUGiB)
	}
	if math.Abs(rec.Estimate.DeviceTotalGiB-st.DeviceTotalGiB) > 1e-9 {
		t.Errorf("%s %q: device total %v in the ladder, %v with its flags", what, st.Flags, st.DeviceTotalGiB, rec.Estimate.DeviceTotalGiB)
	}
}

func TestLadderSavesAndReproduces(t *testing.T) {
	for _, lj := range ladderJobs {
		t.Run(lj.name, func(t *testing.T) {
			in := ladderInput(t, lj, lj.job)
			rec, err := Recommend(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Ladder) == 0 {
				if lj.rank == RankHourly {
					t.Fatalf("no ladder; rejected: %+v", rec.Rejected)
				}
				return // by the cost of the work, no rung may save on this catalogue
			}
			base := rec.Offers
			for _, st := range rec.Ladder {
				switch {
				case len(base) > 0 && (st.SavingPct == nil || *st.SavingPct <= 0):
					t.Errorf("rung %q (%s) saving %v: the table shows only rungs that save", st.Change, st.Flags, st.SavingPct)
				case st.Cheapest == nil:
					t.Errorf("rung %q shown with nothing fitting", st.Change)
				case len(base) > 0 && st.NeedPerGPUGiB >= base[0].NeedPerGPUGiB && st.Cheapest.GPUsUsed == base[0].GPUsUsed:
					t.Errorf("rung %q does not lower the need (%v vs %v)", st.Change, st.NeedPerGPUGiB, base[0].NeedPerGPUGiB)
				case st.Slowdown <= 0:
					t.Errorf("rung %q slowdown %v", st.Change, st.Slowdown)
				}
				// The trade-off text never contradicts the slow-down shown beside it.
				if strings.Contains(st.Tradeoff, "slower") && st.Slowdown < 1 || strings.Contains(st.Tradeoff, "faster") && st.Slowdown > 1 {
					t.Errorf("rung %q: trade-off %q beside slowdown %v", st.Change, st.Tradeoff, st.Slowdown)
				}
				if lj.rank == RankJob && len(base) > 0 && st.JobCostUSD != nil {
					want := math.Round((*base[0].EstCostUSD-*st.JobCostUSD) / *base[0].EstCostUSD * 1000) / 10
					if math.Abs(want-*st.SavingPct) > 0.11 {
						t.Errorf("rung %q saving %v %%; job dollars say %v %%", st.Change, *st.SavingPct, want)
					}
				}
				checkReproduces(t, lj, "rung "+st.Change, st)
			}
			for _, r := range rec.Rejected {
				if r.Reason == "" || r.Flags == "" {
					t.Errorf("rejected rung without flags or reason: %+v", r)
				}
			}
			if rec.Plan == nil {
				t.Fatal("no plan although rungs save")
			}
			p := rec.Plan.LadderStep
			if len(base) > 0 {
				best := 0.0
				for _, st := range rec.Ladder {
					best = math.Max(best, *st.SavingPct)
				}
				if p.SavingPct == nil || *p.SavingPct < best {
					t.Errorf("plan saves %v; a single rung saves %v", p.SavingPct, best)
				}
			}
			checkReproduces(t, lj, "plan", p)
		})
	}
}

func TestLadderNamedRungs(t *testing.T) {
	has := func(rec *Recommendation, flags string) bool {
		for _, st := range rec.Ladder {
			if st.Flags == flags {
				return true
			}
		}
		return false
	}
	m := mustModel(t, "llama-3-8b")
	rec := recommend(t, RecommendInput{Model: m, Job: fit.Job{Task: fit.TaskFullFT}, Offers: ladderCatalogue(), Rank: RankHourly})
	for _, f := range []string{"--precision bf16", "--optimizer adamw-8bit"} {
		if !has(rec, f) {
			t.Errorf("Llama-3-8B full fine-tune ladder lacks %s: %+v; rejected %+v", f, rec.Ladder, rec.Rejected)
		}
	}
	// The optimizer step sets the peak of a small-activation full fine-tune (fp32 AdamW
	// states, batch 1, short sequences): the fused step lowers it.
	m = mustModel(t, "qwen2.5-0.5b")
	j := fit.Job{Task: fit.TaskFullFT, SeqLen: 128, GradCkpt: true}
	a, _ := fit.Estimate(m, j)
	j.OptimizerStep = "fused"
	b, _ := fit.Estimate(m, j)
	if !(b.DeviceTotalGiB < a.DeviceTotalGiB) {
		t.Errorf("fused step %v GiB, foreach %v: fused should drop the sqrt(v) temporaries", b.DeviceTotalGiB, a.DeviceTotalGiB)
	}
	// Chunked loss on a 128k vocabulary at 8k tokens: the fp32 logits dominate.
	m = mustModel(t, "llama-3-8b")
	j = fit.Job{Task: fit.TaskLoRA, SeqLen: 8192, GradCkpt: true}
	a, _ = fit.Estimate(m, j)
	j.Loss = "fused-linear"
	b, _ = fit.Estimate(m, j)
	// Standard: 8192 x 128256 x (2+4+4+4) bytes = 13.7 GiB of logits; chunked keeps
	// next_pow2(8192/ceil(128256/4096)=256) = 256 tokens of them plus an 8192x4096 bf16
	// input gradient: 0.43 + 0.06 GiB.
	if d := a.Breakdown.Workspace - b.Breakdown.Workspace; math.Abs(d-(13.70-0.49)) > 0.1 {
		t.Errorf("chunked loss saves %v GiB of workspace; want ~13.2", d)
	}
}

func TestLadderFlagsRespectExistingShardAndOffload(t *testing.T) {
	m := mustModel(t, "llama-2-13b")
	rec := recommend(t, RecommendInput{Model: m, Job: fit.Job{Task: fit.TaskFullFT, GPUs: 2, Shard: "zero3", Offload: "optimizer"}, PinGPUs: true, Offers: ladderCatalogue()})
	all := append([]RejectedStep{}, rec.Rejected...)
	for _, st := range rec.Ladder {
		all = append(all, RejectedStep{Change: st.Change, Flags: st.Flags})
	}
	for _, st := range all {
		if strings.Contains(st.Flags, "--shard zero2") || (strings.HasPrefix(st.Change, "CPU offload of optimizer") && st.Flags != "") {
			t.Errorf("rung %q flags %q undo or repeat the job's --shard zero3 --offload optimizer", st.Change, st.Flags)
		}
		if strings.HasPrefix(st.Change, "CPU offload of parameters") && st.Flags != "--offload optimizer+params" {
			t.Errorf("params offload flags %q; want only --offload optimizer+params on a zero3 job", st.Flags)
		}
	}
}

// A huge --top (the API's or the CLI's) is clamped to the offers there are: the top list
// is allocated at that size.
func TestRecommendTopClamped(t *testing.T) {
	offers := ladderCatalogue()
	rec := recommend(t, RecommendInput{Model: mustModel(t, "llama-2-7b"), Job: fit.Job{}, Offers: offers, Top: math.MaxInt, ByRegion: true})
	if len(rec.Offers) == 0 || len(rec.Offers) > len(offers) {
		t.Errorf("%d offers shown of %d", len(rec.Offers), len(offers))
	}
}

// TestLadderNeverDearer: ranked by the cost of the work (the default, per unit of work,
// and with the job's size, per job), the top offer's figure is the least of every fitting
// offer's, and no ladder row or plan costs more than the top offer does the job as
// asked; each row's saving is of that figure and its slow-down is its time on its own
// offer over the job's on the top offer (TIME shows a move to a slower GPU).
func TestLadderNeverDearer(t *testing.T) {
	rows := 0
	defer func() {
		if rows == 0 {
			t.Error("no ladder row or plan in any job: nothing was checked")
		}
		t.Logf("%d rows and plans checked", rows)
	}()
	for _, lj := range ladderJobs {
		for _, tokens := range []float64{0, 1e8} {
			lj := lj
			lj.rank = RankJob
			t.Run(fmt.Sprintf("%s/tokens=%g", lj.name, tokens), func(t *testing.T) {
				in := ladderInput(t, lj, lj.job)
				if tokens == 0 {
					in.Tokens = 0
				} else if in.Model.IsImageModel() {
					in.Tokens, in.Images = 0, 1000
				}
				all := in
				all.Top, all.ByRegion = len(in.Offers), true
				every := recommend(t, all)
				if len(every.Offers) == 0 {
					// Nothing fits as asked: every row is a change that makes it fit (no
					// saving to judge), and its flags give its offer.
					rec := recommend(t, in)
					if len(rec.Ladder) == 0 {
						t.Fatal("nothing fits and no ladder row makes it fit")
					}
					for _, st := range rec.Ladder {
						if st.Cheapest == nil || st.SavingPct != nil {
							t.Errorf("row %q (%s): cheapest %v, saving %v; want an offer and no saving", st.Change, st.Flags, st.Cheapest, st.SavingPct)
						}
						checkReproducesOn(t, in, "row "+st.Change, st)
					}
					rows += len(rec.Ladder)
					return
				}
				for i, f := range every.Offers {
					if pricing.RoundUSD(f.rank) < pricing.RoundUSD(every.Offers[0].rank) { // ties as shown go to the faster
						t.Errorf("offer %d %s costs %v, less than the top %s's %v", i, f.InstanceType, f.rank, every.Offers[0].InstanceType, every.Offers[0].rank)
					}
					if i > 0 && pricing.RoundUSD(f.rank) < pricing.RoundUSD(every.Offers[i-1].rank) {
						t.Errorf("offer %d %s (%v) ranked after a dearer one (%v)", i, f.InstanceType, f.rank, every.Offers[i-1].rank)
					}
				}
				rec := recommend(t, in)
				top := rec.Offers[0]
				steps := rec.Ladder
				if rec.Plan != nil {
					steps = append(steps, rec.Plan.LadderStep)
				}
				for _, st := range steps {
					if st.Cost == nil || st.SavingPct == nil || !(*st.Cost < in.fieldOf(top.rank)) {
						t.Errorf("row %q (%s): cost %v, saving %v, top offer %v: a row must do the job for less", st.Change, st.Flags, st.Cost, st.SavingPct, top.rank)
						continue
					}
					if want := math.Round((in.fieldOf(top.rank)-*st.Cost)/in.fieldOf(top.rank)*1000) / 10; math.Abs(want-*st.SavingPct) > 0.11 {
						t.Errorf("row %q saving %v %%; its cost says %v %%", st.Change, *st.SavingPct, want)
					}
					if lj.job.IsTraining() && st.Change != "" {
						if want := fit.Round3(st.Cheapest.unit / top.unit); math.Abs(st.Slowdown-want) > 0.002 {
							t.Errorf("row %q slowdown %v; its offer's time over the top offer's is %v", st.Change, st.Slowdown, want)
						}
					}
					checkReproducesOn(t, in, "row "+st.Change, st)
				}
				rows += len(steps)
				if rec.LadderOmits == "" || rec.RankedBy == "" {
					t.Errorf("ladder_omits %q, ranked_by %q", rec.LadderOmits, rec.RankedBy)
				}
			})
		}
	}
}

// The ladder judges a job without CPU offload on each class's offers up to the first it
// can launch (classes.go ladderOffers, lean): a class whose cheapest offer is sold out
// still offers its launchable one to every rung. The whole answer is the same as with
// every class's offers judged, by the hour and by the job's cost.
func TestLadderLeanAnswersAsFull(t *testing.T) {
	for _, lj := range ladderJobs {
		for _, rank := range []Rank{RankHourly, RankJob} {
			lj.rank = rank
			t.Run(lj.name+"/"+string(rank), func(t *testing.T) {
				in := ladderInput(t, lj, lj.job)
				if in.Model.IsImageModel() && rank == RankJob {
					in.Tokens, in.Images = 0, 1000
				}
				for k, o := range in.Offers {
					// The same class, cheaper and sold out; with half the host RAM (so the
					// launchable offer stays among the class's offers) or twice it.
					twin := o
					twin.Region, twin.PriceUSDHr, twin.Available = "r-sold", o.PriceUSDHr*0.7, pricing.SoldOut
					twin.RAMGiB *= []float64{0.5, 2}[k%2]
					in.Offers = append(in.Offers, twin)
				}
				answer := func(lean bool) string {
					ladderLean = lean
					defer func() { ladderLean = true }()
					rec, err := Recommend(in)
					if err != nil {
						t.Fatal(err)
					}
					b, err := json.Marshal(rec)
					if err != nil {
						t.Fatal(err)
					}
					return string(b)
				}
				got, want := answer(true), answer(false)
				if got != want {
					t.Errorf("lean ladder differs from the full one:\n%.2000s\nwant\n%.2000s", got, want)
				}
				if !strings.Contains(want, `"ladder":[{`) && !strings.Contains(want, `"rejected":[{`) {
					t.Errorf("no rung judged: the comparison checks nothing: %.500s", want)
				}
			})
		}
	}
}

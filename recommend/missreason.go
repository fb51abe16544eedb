package recommend

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// capGroup is the offers one capability reason keeps out although they would fit.
type capGroup struct {
	detail    string
	gpuModels []string
	offers    int
}

// missTally is what bindingMiss learns from judging every offer on each constraint on its
// own: which offers fail only on one of them.
type missTally struct {
	capOnly   map[string]*capGroup // memory, count and RAM fit; the stack or --vendor does not
	ramOnly   int                  // everything fits but host RAM
	ramNeed   float64
	ramBest   *pricing.Offer
	countMax  *pricing.Offer // most GPUs on one instance, when --gpus pins more
	countRuns string         // countMax's stack exclusion ("" = it runs the job)
	memBest   *pricing.Offer // the offer closest to fitting on memory alone
	memShort  float64        // its shortfall, GiB per GPU
	memNeed   float64
	memUsable float64
}

// bindingMiss names the constraint that keeps every offer out, in the order a user can act
// on: capability (the memory is there but the GPU cannot run the stack), host RAM for
// offload, the pinned GPU count, then memory, each with the smallest change that would fit.
func bindingMiss(in *RecommendInput, ev *evaluator, steps []LadderStep) string {
	t := missTally{capOnly: map[string]*capGroup{}, memShort: math.Inf(1)}
	for i := range in.Offers {
		o := &in.Offers[i]
		c := ev.caps[i]
		g := ev.gpusFor(o)
		if g == 0 || g < ev.minGPUs {
			// the largest instance that could run the job's stack (any, if none can)
			runs, _ := ev.needs.reason(c)
			if t.countMax == nil || (runs == "" && (t.countRuns != "" || o.GPUCount > t.countMax.GPUCount)) ||
				(runs != "" && t.countRuns != "" && o.GPUCount > t.countMax.GPUCount) {
				t.countMax, t.countRuns = o, runs
			}
			continue
		}
		fp16 := c.known && ((!c.bf16 && ev.bf16) || (!c.flash && ev.flash))
		v := ev.variant(variantKey{g, fp16, 1})
		if v.err != nil {
			continue
		}
		mem := c.memPerDevice(o)
		memOK := v.need <= mem+1e-9
		ramNeed := v.res.CPURAMGiB*(1+OffloadRAMMarginPct/100) + OffloadRAMMarginGiB
		ramOK := !ev.offload || o.RAMGiB >= ramNeed
		reason, detail := ev.needs.reason(c)
		switch {
		case memOK && ramOK && reason != "":
			e := t.capOnly[reason]
			if e == nil {
				e = &capGroup{detail: detail}
				t.capOnly[reason] = e
			}
			e.offers++
			if !containsStr(e.gpuModels, o.GPUModel) {
				e.gpuModels = append(e.gpuModels, o.GPUModel)
			}
		case memOK && !ramOK && reason == "":
			t.ramOnly++
			t.ramNeed = ramNeed
			if t.ramBest == nil || o.RAMGiB > t.ramBest.RAMGiB {
				t.ramBest = o
			}
		case !memOK && reason == "":
			if short := v.need - mem; short < t.memShort {
				t.memShort, t.memBest, t.memNeed, t.memUsable = short, o, v.need, mem
			}
		}
	}
	var b strings.Builder
	switch {
	case len(t.capOnly) > 0:
		reasons := make([]string, 0, len(t.capOnly))
		for r := range t.capOnly {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		var parts []string
		for _, r := range reasons {
			e := t.capOnly[r]
			sort.Strings(e.gpuModels)
			parts = append(parts, fmt.Sprintf("%d offers on %s have the memory but %s", e.offers, strings.Join(e.gpuModels, ", "), e.detail))
		}
		b.WriteString("capability: " + strings.Join(parts, "; "))
		if fix := capabilityFix(in.Job, reasons); fix != "" {
			b.WriteString("; " + fix)
		}
	case t.ramOnly > 0:
		fmt.Fprintf(&b, "host RAM: %d offers have the GPU memory but not the host RAM the offload needs (%s GiB = cpu_ram_gib + %s %% + %s GiB); the most offered is %s GiB (%s %s); offload less (--offload optimizer instead of optimizer+params, or none)",
			t.ramOnly, num1(t.ramNeed), num1(OffloadRAMMarginPct), num1(OffloadRAMMarginGiB), num1(t.ramBest.RAMGiB), t.ramBest.Provider, t.ramBest.InstanceType)
	case t.memBest == nil && t.countMax != nil && in.PinGPUs:
		most := int(math.Floor(t.countMax.GPUCount + 1e-9))
		fmt.Fprintf(&b, "GPU count: no offer has %d GPUs; the most on one instance is %d (%s %s)", max(in.Job.GPUs, 1), most, t.countMax.Provider, t.countMax.InstanceType)
		if most >= 1 {
			j := in.Job
			j.GPUs = most
			if ev.tp {
				j.GPUs = in.Model.LargestTP(most)
			}
			if r, err := fit.Estimate(in.Model, j); err == nil {
				fmt.Fprintf(&b, "; --gpus %d would need %s GiB per GPU", j.GPUs, num1(r.DeviceTotalGiB*(1+ev.headroom/100)))
			}
		}
	case t.memBest != nil:
		fmt.Fprintf(&b, "memory: needs %s GiB per GPU (%s GiB device total + %s %% headroom)", num1(t.memNeed), num1(t.memNeed/(1+ev.headroom/100)), num1(ev.headroom))
		if in.Job.IsTraining() && !in.Job.Shard.Sharded() && !in.PinGPUs {
			b.WriteString(", on every GPU of a data-parallel job")
		}
		fmt.Fprintf(&b, "; the closest offer, %s %s (%s, %s GiB usable per GPU), is %s GiB short", t.memBest.Provider, t.memBest.InstanceType, t.memBest.GPUModel, num1(t.memUsable), num1(t.memShort))
	default:
		b.WriteString("no offer can run the job")
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

// capabilityFix is the smallest change that lifts the capability exclusions.
func capabilityFix(j fit.Job, reasons []string) string {
	var fixes []string
	for _, r := range reasons {
		switch r {
		case ExclVendor:
			fixes = append(fixes, "--vendor any")
		case ExclNoBnB:
			switch {
			case j.Task == fit.TaskQLoRA:
				fixes = append(fixes, "--task lora (no 4-bit base) or a GPU with bitsandbytes")
			case j.Optimizer == "adamw-8bit" || j.Optimizer == "paged-adamw-8bit":
				fixes = append(fixes, "--optimizer adamw")
			default:
				fixes = append(fixes, "--quant none or int4 (GPTQ/AWQ kernels)")
			}
		case ExclNoBF16:
			fixes = append(fixes, "--precision bf16-mixed (fp32 master weights allow fp16 with loss scaling)")
		case ExclNoPyTorch:
			fixes = append(fixes, "a GPU that current PyTorch supports")
		}
	}
	if len(fixes) == 0 {
		return ""
	}
	return "change: " + strings.Join(fixes, ", or ")
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

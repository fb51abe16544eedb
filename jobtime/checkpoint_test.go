package jobtime

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
)

// simulateWall runs the process Daly's formula models, many times: work in segments of
// tau hours each followed by a c-hour checkpoint (none after the last), interruptions
// arriving at rate 1/m that lose the segment in progress and cost r hours of restart
// (itself interruptible), and returns the mean wall time.
func simulateWall(r *rand.Rand, work, tau, c, rst, m float64, trials int) float64 {
	sum := 0.0
	for range trials {
		wall, done := 0.0, 0.0
		for done < work-1e-12 {
			seg := math.Min(tau, work-done)
			need := seg
			if done+seg < work-1e-12 {
				need += c // a checkpoint closes every segment but the last
			}
			for {
				next := r.ExpFloat64() * m
				if next >= need {
					wall += need
					break
				}
				wall += next
				// restart, which can itself be interrupted
				for {
					nr := r.ExpFloat64() * m
					if nr >= rst {
						wall += rst
						break
					}
					wall += nr
				}
			}
			done += seg
		}
		sum += wall
	}
	return sum / float64(trials)
}

// TestExpectedWallMatchesSimulation: Daly's expected wall time is the mean of the random
// process it models (segments, checkpoints, lost work, interruptible restarts), within
// the simulation's noise, for intervals shorter and longer than the job.
func TestExpectedWallMatchesSimulation(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, c := range []struct{ work, tau, c, r, m float64 }{
		{10, 2, 0.1, 0.2, 8},    // several interruptions expected
		{9, 1.5, 0.05, 0.1, 30}, // few
		{3, 5, 0.2, 0.1, 6},     // tau beyond the job: one segment, no checkpoint
	} {
		got := ExpectedWallHours(c.work, c.tau, c.c, c.r, c.m)
		sim := simulateWall(r, c.work, c.tau, c.c, c.r, c.m, 40000)
		// Daly's formula charges a checkpoint after the last segment too when the job is
		// a whole number of segments; the simulation does not: allow that one c.
		if math.Abs(got-sim) > 0.02*sim+c.c {
			t.Errorf("%+v: formula %.3f h, simulation %.3f h", c, got, sim)
		}
		if got < c.work {
			t.Errorf("%+v: expected %.3f h is less than the work", c, got)
		}
	}
	if got := ExpectedWallHours(9, 1, 0.1, 0.2, math.Inf(1)); got != 9 {
		t.Errorf("never interrupted: %v h; want the work, 9", got)
	}
	if got, want := ExpectedWallHours(9, 0, 0, 0.5, 20), 9*math.Exp(0.5/20); math.Abs(got-want) > 1e-12 {
		t.Errorf("serving (no checkpoint): %v h; want %v", got, want)
	}
}

// TestYoungDalyIntervalMinimisesWall: Daly's interval is within half a percent of the
// wall time at the best interval found by search over the same formula.
func TestYoungDalyIntervalMinimisesWall(t *testing.T) {
	for _, c := range []struct{ c, m float64 }{{0.01, 50}, {0.1, 10}, {0.5, 4}, {1, 3}} {
		tau := YoungDalyInterval(c.c, c.m)
		work := 1000.0 // long enough that the interval, not the job's end, decides
		at := ExpectedWallHours(work, tau, c.c, 0.1, c.m)
		best := math.Inf(1)
		for x := 0.001; x < 5*c.m; x *= 1.01 {
			best = math.Min(best, ExpectedWallHours(work, x, c.c, 0.1, c.m))
		}
		if at > best*1.005 {
			t.Errorf("c=%v m=%v: Daly's tau %.3f h gives %.1f h; the best interval %.1f h", c.c, c.m, tau, at, best)
		}
		if lead := math.Sqrt(2*c.c*c.m) - c.c; c.c < c.m/10 && math.Abs(tau/lead-1) > 0.1 {
			t.Errorf("c=%v m=%v: tau %.3f far from Young's leading term %.3f", c.c, c.m, tau, lead)
		}
	}
	if got := YoungDalyInterval(3, 1); got != 1 {
		t.Errorf("checkpoint longer than 2M: tau %v; want M", got)
	}
}

// TestCheckpointBytes: a full fine-tune with AdamW saves 12 bytes a parameter under AMP
// (fp32 weights, m, v) and 14 under ZeRO-3 (16-bit weights, fp32 masters, m, v: the ZeRO
// paper's 16 less the gradients), whatever the GPU count; a LoRA adapter's checkpoint is
// a small fraction of that, and serving saves none.
func TestCheckpointBytes(t *testing.T) {
	m, ok, err := model.CatalogModel("llama-2-7b")
	if err != nil || !ok {
		t.Fatal(err)
	}
	est := func(j fit.Job) *fit.Result {
		r, err := fit.Estimate(m, j)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	one := CheckpointBytes(est(fit.Job{Task: fit.TaskFullFT, Precision: "bf16-mixed", GPUs: 1}))
	z3 := CheckpointBytes(est(fit.Job{Task: fit.TaskFullFT, Precision: "bf16-mixed", GPUs: 8, Shard: "zero3"}))
	P := float64(m.Params())
	if per := one / P; math.Abs(per-12) > 0.01 {
		t.Errorf("AMP full fine-tune: %.2f bytes per parameter; want 12", per)
	}
	if per := z3 / P; math.Abs(per-14) > 0.01 {
		t.Errorf("ZeRO-3 full fine-tune over 8 GPUs: %.2f bytes per parameter; want 14", per)
	}
	lora := CheckpointBytes(est(fit.Job{Task: fit.TaskLoRA, GPUs: 1}))
	if lora <= 0 || lora > one/50 {
		t.Errorf("LoRA checkpoint %.3f GiB vs full %.1f GiB: want a small positive fraction", lora/fit.GiB, one/fit.GiB)
	}
	if got := CheckpointBytes(est(fit.Job{Task: fit.TaskInference, GPUs: 1})); got != 0 {
		t.Errorf("serving checkpoint = %v; want 0", got)
	}
}

// TestPlanSpot: with checkpoints a spot run is no longer than restarting from scratch,
// a fixed interval is used as given, and no interruption means no overhead.
func TestPlanSpot(t *testing.T) {
	ckpt := 50.0 * fit.GiB // 50 GiB: about 7 minutes at 125 MiB/s
	s := PlanSpot(9, 20, ckpt, 0.2, 0)
	if s.WriteHours < 0.1 || s.WriteHours > 0.12 {
		t.Errorf("write hours %v; want 50 GiB / 125 MiB/s = %.3f h", s.WriteHours, 50*1024.0/125/3600)
	}
	scratch := ExpectedWallHours(9, 9, s.WriteHours, s.RestartHours, 20)
	if !(s.WallHours > 9) || s.WallHours > scratch {
		t.Errorf("spot wall %v h: want above the 9 h of work and below restarting from scratch (%v h)", s.WallHours, scratch)
	}
	if s.Interruptions <= 0 || math.Abs(s.Interruptions-s.WallHours/20) > 1e-9 {
		t.Errorf("interruptions %v; want wall/M", s.Interruptions)
	}
	if fixed := PlanSpot(9, 20, ckpt, 0.2, 0.25); fixed.IntervalHours != 0.25 || fixed.WallHours <= s.WallHours {
		t.Errorf("--checkpoint-every 15m: interval %v, wall %v h; want 0.25 and dearer than the optimum's %v h", fixed.IntervalHours, fixed.WallHours, s.WallHours)
	}
	if calm := PlanSpot(9, math.Inf(1), ckpt, 0.2, 0); calm.WallHours != 9 || calm.Interruptions != 0 {
		t.Errorf("no interruptions: %+v; want the work alone", calm)
	}
}

func TestTieredMonthlyUSD(t *testing.T) {
	tiers := []TieredDisk{{128, 19.71}, {256, 38.01}, {512, 73.22}, {32, 5.28}}
	for _, c := range []struct{ size, want float64 }{
		{10, 5.28}, {32, 5.28}, {33, 19.71}, {300, 73.22}, {1200, 3 * 73.22},
	} {
		if got := TieredMonthlyUSD(c.size, tiers); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%v GiB: $%v a month; want $%v", c.size, got, c.want)
		}
	}
	if got := TieredMonthlyUSD(10, nil); got != 0 {
		t.Errorf("no tiers: %v", got)
	}
}

package jobtime

import (
	"math"

	"github.com/pickergpu/picker/fit"
)

// Checkpoints and spot interruptions: what a job saves, how long saving takes, how often
// it should save, and how long it runs on an instance that is interrupted at random.

// CheckpointWriteBps is the rate a checkpoint is written to (and read back from) the job's
// disk: 125 MiB/s, the baseline throughput of an EBS gp3 volume (AWS EBS User Guide,
// "General Purpose SSD volumes": gp3 "deliver a consistent baseline throughput
// performance of 125 MiB/s"), the disk the all-in bill prices. A host with local NVMe
// writes faster; --checkpoint-every overrides the interval this rate leads to.
const CheckpointWriteBps = 125 << 20

// CheckpointBytes is what one training checkpoint holds: the trainable weights as the
// job keeps them (16-bit; fp32 for fp32 training, for PyTorch AMP, whose weights are the
// fp32 masters, and for LoRA adapters kept in fp32) and the optimizer's states over every
// GPU (the fit estimate's per-GPU states times the shards, the fp32 masters among them
// under ZeRO/FSDP mixed precision; the host's copy when the optimizer is offloaded). A
// full fine-tune with AdamW so saves 12 bytes a parameter under AMP and 14 under ZeRO
// (the ZeRO paper's 16 less the 2 of the gradients). 0 for inference: serving saves
// nothing.
func CheckpointBytes(r *fit.Result) float64 {
	j := &r.Job // read only: the resolved job is not copied
	if !j.IsTraining() {
		return 0
	}
	T := float64(r.TrainableParams)
	wB := 2.0
	amp := j.Task == fit.TaskFullFT && j.Precision.Mixed() && !j.Shard.Sharded()
	if j.Precision == "fp32" || amp || adapterFP32(j) {
		wB = 4
	}
	opt := r.Breakdown.Optimizer * fit.GiB * stateShards(j)
	if j.Offload == "optimizer" || j.Offload == "optimizer+params" {
		opt = r.CPURAMGiB * fit.GiB // the host holds the states (and a loading buffer)
	}
	return T*wB + opt
}

// stateShards is how many partitions the optimizer states are split over: every GPU of
// every node under ZeRO and FSDP, one otherwise.
func stateShards(j *fit.Job) float64 {
	if j.Shard.Sharded() && j.Shard != "tp" {
		return float64(max(j.GPUs, 1) * max(j.Nodes, 1))
	}
	return 1
}

// adapterFP32 reports whether LoRA adapters are trained in fp32: under mixed precision,
// and under the hf framework's PEFT (autocast_adapter_dtype), as fit's memory model keeps
// them.
func adapterFP32(j *fit.Job) bool {
	return j.Task != fit.TaskFullFT && (j.Precision.Mixed() || j.Framework == "" || j.Framework == fit.FrameworkHF)
}

// YoungDalyInterval is the checkpoint interval that minimises the expected run time for
// checkpoints that take c hours to write and interruptions a mean m hours apart. J. T.
// Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps"
// (Future Generation Computer Systems 22(3), 2006): sqrt(2cm) [1 + (1/3) sqrt(c/2m) +
// (1/9) (c/2m)] - c for c < 2m, whose leading term sqrt(2cm) - c is Young's (1974)
// sqrt(2cm) less the write time; m itself once c >= 2m.
func YoungDalyInterval(c, m float64) float64 {
	if math.IsInf(m, 1) {
		return math.Inf(1)
	}
	if c <= 0 {
		return 0
	}
	if c >= 2*m {
		return m
	}
	x := c / (2 * m)
	return math.Sqrt(2*c*m)*(1+math.Sqrt(x)/3+x/9) - c
}

// ExpectedWallHours is the expected time to finish work hours of computation on an
// instance interrupted at random (exponentially distributed, mean m hours apart) that
// writes a checkpoint taking c hours every tau hours of work and needs r hours to restart
// after an interruption (boot, downloads, reading the checkpoint back): Daly 2006's
// m e^(r/m) (e^((tau+c)/m) - 1) work/tau, which counts the work lost since the last
// checkpoint, the checkpoints written and the restarts (themselves interruptible). A job
// no longer than tau writes no checkpoint and restarts from scratch (one segment:
// m e^(r/m) (e^(work/m) - 1)); a job that saves nothing (c = 0, serving) loses only the
// restart, the limit tau -> 0: work e^(r/m).
func ExpectedWallHours(work, tau, c, r, m float64) float64 {
	if work <= 0 || math.IsInf(m, 1) || !(m > 0) {
		return work
	}
	switch {
	case c <= 0 || tau <= 0:
		return work * math.Exp(r/m)
	case tau >= work:
		return m * math.Exp(r/m) * math.Expm1(work/m)
	}
	return m * math.Exp(r/m) * math.Expm1((tau+c)/m) * work / tau
}

// SpotRun is a job's expected run on a spot instance: the assumptions and what follows.
type SpotRun struct {
	MTBIHours       float64 // mean time between interruptions
	CheckpointBytes float64
	WriteHours      float64 // one checkpoint's write time (c)
	RestartHours    float64 // one restart: start-up again plus reading the checkpoint back (r)
	IntervalHours   float64 // checkpoint every this many hours of work (tau); +Inf: none
	WallHours       float64 // expected run time, checkpoints, lost work and restarts included
	Interruptions   float64 // expected interruptions: WallHours / MTBIHours
}

// PlanSpot is the expected run of work hours on spot at m hours between interruptions,
// for a job whose checkpoint is ckptBytes and whose start-up takes setup hours; every
// (if > 0) fixes the checkpoint interval instead of the Young/Daly optimum.
func PlanSpot(work, m, ckptBytes, setup, every float64) SpotRun {
	s := SpotRun{MTBIHours: m, CheckpointBytes: ckptBytes, IntervalHours: math.Inf(1)}
	s.WriteHours = ckptBytes / CheckpointWriteBps / 3600
	s.RestartHours = setup + s.WriteHours
	if s.WriteHours > 0 {
		s.IntervalHours = YoungDalyInterval(s.WriteHours, m)
		if every > 0 {
			s.IntervalHours = every
		}
	}
	tau := s.IntervalHours
	if math.IsInf(tau, 1) {
		tau = work // no checkpoint before the end
	}
	s.WallHours = ExpectedWallHours(work, tau, s.WriteHours, s.RestartHours, m)
	if m > 0 && !math.IsInf(m, 1) {
		s.Interruptions = s.WallHours / m
	}
	return s
}

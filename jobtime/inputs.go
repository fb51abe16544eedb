package jobtime

// The time model's inputs from the product's own facts: a model and an estimate's
// resolved job (TimeModelFor), an offer's GPU datasheet figures (TimeGPUFor) and what an
// instance type says about its GPU-to-GPU path (InstanceGPULink).

import (
	"strings"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// TimeModelFor builds the time model's input from a model and an estimate's resolved
// job.
func TimeModelFor(mod *model.Model, r *fit.Result) *TimeModel {
	j := &r.Job // read only: the resolved job is not copied
	tm := &TimeModel{
		Task:            j.Task,
		ActiveParams:    float64(mod.ActiveParams()),
		Params:          float64(mod.Params()),
		TrainableParams: float64(r.TrainableParams),
		Hidden:          float64(mod.Hidden),
		Layers:          float64(mod.Dec.Layers),
		Heads:           float64(mod.Dec.Heads),
		KVPerToken:      float64(mod.KVPerToken),
		Layer:           LayerShapeOf(mod),
		ComputeBytes:    2,
		GradBytes:       2,
		GradCkpt:        j.GradCkpt,
		EagerAttention:  j.Attention == "eager",
		Batch:           float64(j.Batch),
		SeqLen:          float64(j.SeqLen),
		Shard:           j.Shard,
		Offload:         j.Offload,
	}
	if mod.Enc != nil {
		tm.Layers += float64(mod.Enc.Layers)
	}
	if tm.Hidden == 0 {
		tm.Hidden = float64(mod.Dec.Hidden)
	}
	if j.Precision == "fp32" {
		tm.ComputeBytes, tm.GradBytes = 4, 4
	} else if j.Precision.Mixed() {
		tm.GradBytes = 4 // fp32 master weights: gradients are reduced in fp32
	}
	// fp8 weights (--quant fp8, an fp8 checkpoint) run their GEMMs on fp8 tensor cores
	// where the GPU has them (vLLM's fp8 W8A8 path; elsewhere its Marlin kernels read the
	// fp8 bytes and compute in 16 bits), as fp8-mixed training does (Transformer Engine).
	tm.FP8 = j.Precision == "fp8-mixed" || j.Quant == "fp8"
	tm.Pipeline = j.Split == fit.SplitLayer
	tm.KVBytes = tm.ComputeBytes
	if j.KVCacheDtype == "fp8" {
		tm.KVBytes = 1
	}
	lin := float64(mod.LinearParams)
	var routed float64
	for _, md := range mod.Modules {
		if md.Routed {
			routed += float64(md.In * md.Out * md.Count)
		}
	}
	// The linear weights as stored: a pre-quantized checkpoint's layers as it stores them,
	// else the job's format for every linear layer (fit.QuantBytes, the memory model's).
	denseLin, routedLin := (lin-routed)*tm.ComputeBytes, routed*tm.ComputeBytes
	if mod.Ckpt != nil && j.Quant.Quantized() {
		tm.QuantParams = lin
		denseLin, routedLin = mod.Ckpt.LinearBytes(mod, false, tm.ComputeBytes), mod.Ckpt.LinearBytes(mod, true, tm.ComputeBytes)
	} else if qb := fit.QuantBytes(mod, j.Quant, j.DoubleQuant); qb > 0 {
		tm.QuantParams = lin
		denseLin, routedLin = (lin-routed)*qb, routed*qb
	}
	// A decode step reads the linear weights, the LM head (the tied embedding when there
	// is no separate head) and the small tensors; the embedding lookup reads one row.
	head := float64(mod.HeadParams)
	if head == 0 && mod.Kind != model.KindEncoder {
		head = float64(mod.EmbedParams)
	}
	rest := (head + float64(mod.OtherParams)) * tm.ComputeBytes
	if routed > 0 && lin > 0 && mod.MoEExperts > 0 {
		tm.RoutedWeightBytes = routedLin
		tm.RoutedFrac = float64(mod.MoETopK) / float64(mod.MoEExperts)
	} else {
		denseLin += routedLin
	}
	tm.DenseWeightBytes = denseLin + rest

	// The optimizer step and DDP's last bucket (optimizer.go), a layer's GEMMs and the
	// for-loop step's launches (stepfixed.go).
	tm.OptStepBytes = optimizerStepBytes(r)
	tm.LayerGEMMs, tm.OptLaunches = launchCounts(mod, r)
	tm.OptCPUParams = optimizerCPUParams(r)
	tm.GradAccum = float64(j.GradAccum)
	if mod.Enc != nil && j.TargetTokens > 0 && j.IsTraining() && j.SeqLen > 0 {
		// Encoder–decoder (--target-tokens): the encoder's layers run over the source, the
		// decoder's over the target; throughput stays in source tokens.
		le, ld := float64(mod.Enc.Layers), float64(mod.Dec.Layers)
		s, t := float64(j.SeqLen), float64(j.TargetTokens)
		tm.WorkScale = (le*s + ld*t) / ((le + ld) * s)
	}
	if j.IsTraining() {
		tm.LastBucketBytes = lastBucketBytes(float64(mod.EmbedParams), tm.TrainableParams, tm.GradBytes)
		if j.Task != fit.TaskFullFT {
			tm.LastBucketBytes = lastBucketBytes(0, tm.TrainableParams, tm.GradBytes) // the embedding is frozen
		}
	}
	if j.Task == fit.TaskImageGen {
		tm.Image = imageWorkFor(mod.Pipe, r, tm.ComputeBytes, fit.QuantBytes(mod, j.Quant, j.DoubleQuant)) // image.go
	}
	return tm
}

// TimeGPUFor reads an offer's GPU figures for a job in the given precision; ok is false
// when the catalog lacks the figures. count is the GPUs the job uses (a slice's
// fraction for vGPU offers). link overrides the GPU's own GPU-GPU link (instance
// knowledge); negative keeps it.
func TimeGPUFor(spec pricing.GPU, precision fit.Precision, count, link float64) (TimeGPU, bool) {
	g := TimeGPU{Arch: spec.Architecture, HBM: spec.HBM(), Count: count}
	if spec.BandwidthGBs == nil {
		return g, false
	}
	g.BandwidthGBs = *spec.BandwidthGBs
	tf := spec.HalfTFLOPS()
	tensor := precision != "fp32" && tf != nil
	if !tensor {
		// Pre-Volta GPUs have no fast 16-bit path: a 16-bit job runs at the FP32 rate.
		tf = spec.FP32TFLOPS
	}
	if tf == nil || *tf <= 0 {
		return g, false
	}
	g.PeakTFLOPS = *tf
	if spec.FP32TFLOPS != nil {
		g.FP32TFLOPS = *spec.FP32TFLOPS
	}
	if spec.FP8TFLOPS != nil && precision != "fp32" {
		g.FP8TFLOPS = *spec.FP8TFLOPS
	}
	if tensor {
		ApplyPowerCap(&g, PowerCapTFLOPS(spec, link == 0)) // power.go
	}
	if spec.GPULinkGBs != nil {
		g.LinkGBs = *spec.GPULinkGBs / 2 // datasheets quote both directions
	}
	if link >= 0 {
		g.LinkGBs = link
	}
	if spec.HostLinkGBs != nil {
		g.HostLinkGBs = *spec.HostLinkGBs
	}
	return g, true
}

// InstanceGPULink is what an instance type says about its GPU-to-GPU path beyond the
// GPU model's datasheet: 0 when its GPUs talk over PCIe although the model has an SXM
// variant with NVLink (the catalog names both A100-80GB), -1 to keep the GPU's figure.
func InstanceGPULink(provider, instanceType string) float64 {
	it := instanceType // compared without case, and without a lowered copy: recommend asks per offer
	switch {
	case containsFold(it, "pcie"), containsFold(it, "-pci_"):
		return 0 // the name says PCIe (cudo, fluidstack, lambda *_pcie)
	case strings.EqualFold(provider, "azure") && len(it) >= 11 && strings.EqualFold(it[:11], "standard_nc"):
		// NCv3 (V100 PCIe) and NC A100 v4 (PCIe A100 80GB, no NVLink): Microsoft Learn,
		// "NC A100 v4-series" and "NCv3-series" size pages. ND sizes have NVLink.
		return 0
	case strings.EqualFold(provider, "hyperstack") && containsFold(it, "a100") && !containsFold(it, "nvlink"):
		// Hyperstack sells A100 PCIe by default and names the NVLink (SXM) flavour
		// (hyperstack.cloud GPU pricing page).
		return 0
	}
	return -1
}

// containsFold reports whether s contains the lower-case ASCII sub, ignoring ASCII case.
// It compares bytes, as strings.EqualFold over each window would decide: a non-ASCII
// rune that folds to an ASCII letter (the Kelvin sign to k) has another length, so no
// window of sub's length matches through one (TestContainsFoldIsEqualFold).
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && lowerASCII(s[i+j]) == sub[j] {
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// lowerASCII lower-cases an ASCII capital and leaves every other byte.
func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

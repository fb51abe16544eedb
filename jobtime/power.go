package jobtime

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/pickergpu/picker/pricing"
)

// Sustained tensor throughput under the board power limit (issue 15).
//
// A datasheet's tensor TFLOPS is the boost clock times the tensor cores' ops per clock.
// Dense GEMMs are the heaviest load a GPU runs; a board whose power limit (TDP) is low
// for its tensor peak cannot hold the boost clock under them, and the clock governor
// lowers the clock until the board draws its TDP. Power is energy per operation times
// operations per second (plus leakage and memory), and energy per operation is set by
// the process and the supply voltage (Horowitz, "Computing's energy problem (and what we
// can do about it)", ISSCC 2014, doi:10.1109/ISSCC.2014.6757323), so at equal energy per
// operation a board sustains at most
//
//	TDP / (W per TFLOPS of a part that sustains its peak)
//
// TFLOPS. The reference is the part each generation's GEMM efficiency (archEfficiency)
// was measured on, so the efficiency and the cap agree there: A100 SXM for Ampere and Ada
// Lovelace (effAmpere), H100 SXM for Hopper (effHopper), V100 SXM2 for Volta and Turing
// (effVolta); Blackwell takes B200, its flagship. A capped part runs at a lower voltage
// than the reference, which saves energy per operation (dynamic power ∝ C·V²·f), so the
// cap is an upper bound on the slow-down; it matches NVIDIA's own datasheets where they
// list both: the H100 PCIe's 756 dense TFLOPS at 350 W versus the SXM's 989 at 700 W is
// the PCIe part's lower clock (1755 vs 1980 MHz boost, NVIDIA H100 datasheet and
// whitepaper) and not yet its power cap, which the cap adds (350 W / 0.707 W per TFLOPS =
// 495 TFLOPS sustained). Cards listed at half rate (GeForce FP16 with FP32 accumulate:
// RTX 3090, 4090; L40) have TDP to spare for their listed peak and are not capped.
//
// TDPs are datasheet figures (gpu_power.csv, a source per row); GPUs without a row and
// architectures without a reference are not capped.

//go:embed gpu_power.csv
var gpuPowerCSV []byte

// gpuPower is one gpu_power.csv row.
type gpuPower struct {
	tdp, pcieTDP float64 // watts; pcieTDP: the PCIe variant sold under the same model name (0 = none)
	source       string
}

// powerRef is the reference part of a GPU generation: datasheet watts per dense 16-bit
// tensor TFLOPS.
type powerRef struct {
	part       string
	wattsPerTF float64
}

var powerRefs = map[string]powerRef{
	// NVIDIA A100 datasheet: SXM 400 W, 312 dense BF16/FP16 tensor TFLOPS.
	"Ampere":       {"A100 SXM", 400.0 / 312},
	"Ada Lovelace": {"A100 SXM", 400.0 / 312},
	// NVIDIA H100 datasheet: SXM 700 W, 989.5 dense BF16 TFLOPS (1979 with sparsity).
	"Hopper": {"H100 SXM", 700.0 / 989.5},
	// NVIDIA HGX B200 datasheet: 1000 W per GPU, 2250 dense BF16 TFLOPS (4.5 PF sparse).
	"Blackwell":       {"B200", 1000.0 / 2250},
	"Blackwell Ultra": {"B200", 1000.0 / 2250},
	// NVIDIA V100 datasheet: SXM2 300 W, 125 tensor TFLOPS.
	"Volta":  {"V100 SXM2", 300.0 / 125},
	"Turing": {"V100 SXM2", 300.0 / 125},
}

var (
	powerOnce sync.Once
	powerBy   map[string]gpuPower
	powerErr  error
)

// parseGPUPower reads gpu_power.csv's format.
func parseGPUPower(data []byte) (map[string]gpuPower, error) {
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("gpu_power.csv: %w", err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "gpu_model,tdp_w,pcie_variant_tdp_w,source" {
		return nil, fmt.Errorf("gpu_power.csv: unexpected header")
	}
	out := map[string]gpuPower{}
	for i, r := range rows[1:] {
		tdp, err := strconv.ParseFloat(r[1], 64)
		if err != nil || tdp <= 0 || r[0] == "" || r[3] == "" {
			return nil, fmt.Errorf("gpu_power.csv:%d: want a GPU model, a positive tdp_w and a source", i+2)
		}
		p := gpuPower{tdp: tdp, source: r[3]}
		if r[2] != "" {
			if p.pcieTDP, err = strconv.ParseFloat(r[2], 64); err != nil || p.pcieTDP <= 0 {
				return nil, fmt.Errorf("gpu_power.csv:%d: pcie_variant_tdp_w %q: want a positive number or empty", i+2, r[2])
			}
		}
		k := strings.ToLower(r[0])
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("gpu_power.csv:%d: %s listed twice", i+2, r[0])
		}
		out[k] = p
	}
	return out, nil
}

func lookupGPUPower(model string) (gpuPower, bool) {
	powerOnce.Do(func() { powerBy, powerErr = parseGPUPower(gpuPowerCSV) })
	if powerErr != nil {
		return gpuPower{}, false
	}
	p, ok := powerBy[strings.ToLower(model)]
	return p, ok
}

// PowerCapTFLOPS is the dense 16-bit tensor TFLOPS the board's power limit sustains
// (0 = no cap known). pcie selects the PCIe variant's TDP where the catalog names an
// SXM part (an instance whose GPUs are the PCIe cards, InstanceGPULink).
func PowerCapTFLOPS(spec pricing.GPU, pcie bool) float64 {
	ref, ok := powerRefs[spec.Architecture]
	if !ok {
		return 0
	}
	p, ok := lookupGPUPower(spec.Model)
	if !ok {
		return 0
	}
	w := p.tdp
	if pcie && p.pcieTDP > 0 {
		w = p.pcieTDP
	}
	return w / ref.wattsPerTF
}

// ApplyPowerCap lowers g's tensor peaks to what cap TFLOPS of power sustains; the fp8
// peak scales with the 16-bit one (the same clock drives both).
func ApplyPowerCap(g *TimeGPU, cap float64) {
	if cap <= 0 || g.PeakTFLOPS <= cap {
		return
	}
	f := cap / g.PeakTFLOPS
	g.PeakTFLOPS = cap
	g.FP8TFLOPS *= f
}

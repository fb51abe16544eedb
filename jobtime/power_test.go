package jobtime

import (
	"math"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

func TestGPUPowerTable(t *testing.T) {
	rows, err := parseGPUPower(gpuPowerCSV)
	if err != nil {
		t.Fatal(err)
	}
	for model := range rows {
		if _, ok := pricing.LookupGPU(model); !ok {
			t.Errorf("gpu_power.csv: %s is not in the GPU catalog", model)
		}
	}
	// Every reference part must sit exactly at its own cap (its efficiency constant was
	// measured there), so the cap never changes the reference's time.
	for _, ref := range []struct{ model string }{{"A100"}, {"A100-80GB"}, {"H100"}, {"H200"}, {"B200"}, {"V100"}} {
		spec, _ := pricing.LookupGPU(ref.model)
		if c := PowerCapTFLOPS(spec, false); c < *spec.HalfTFLOPS()*(1-1e-9) {
			t.Errorf("%s: cap %.1f TFLOPS below its own peak %.1f", ref.model, c, *spec.HalfTFLOPS())
		}
	}
	for _, bad := range []string{
		"gpu_model,tdp_w,source\n",
		"gpu_model,tdp_w,pcie_variant_tdp_w,source\nA10,0,,x\n",
		"gpu_model,tdp_w,pcie_variant_tdp_w,source\nA10,150,-1,x\n",
		"gpu_model,tdp_w,pcie_variant_tdp_w,source\nA10,150,,\n",
		"gpu_model,tdp_w,pcie_variant_tdp_w,source\nA10,150,,x\na10,150,,x\n",
	} {
		if _, err := parseGPUPower([]byte(bad)); err == nil {
			t.Errorf("parseGPUPower(%q): no error", bad)
		}
	}
}

// TestPowerCap checks the cap against hand-computed datasheet ratios: sustained TFLOPS =
// TDP / (reference W per TFLOPS), never above the listed peak.
func TestPowerCap(t *testing.T) {
	cases := []struct {
		model string
		pcie  bool
		want  float64 // TFLOPS the time model uses
	}{
		{"H100-PCIE", false, 350 / (700 / 989.5)}, // 494.8 of 756.5 listed
		{"H100", false, 989.5},                    // the Hopper reference itself
		{"A100", true, 250 / (400.0 / 312)},       // A100 40GB PCIe: 195 of 312
		{"A100", false, 312},
		{"A100-80GB", true, 300 / (400.0 / 312)}, // 234
		{"L4", false, 72 / (400.0 / 312)},        // 56.2 of 121
		{"RTX6000-Ada", false, 300 / (400.0 / 312)},
		{"RTX4090", false, 165.2}, // half-rate GeForce peak: 450 W is plenty
		{"A6000", false, 154.8},   // 300 W / 1.28 W per TFLOPS = 234 > 154.8
		{"T4", false, 70 / 2.4},   // Turing against V100 SXM2: 29.2 of 65
		{"MI300X", false, 1307.4}, // no reference for CDNA: not capped
		{"A10G", false, 140},      // no published TDP: not capped
	}
	for _, c := range cases {
		spec, ok := pricing.LookupGPU(c.model)
		if !ok {
			t.Fatalf("%s not in the catalog", c.model)
		}
		link := -1.0
		if c.pcie {
			link = 0
		}
		g, ok := TimeGPUFor(spec, "bf16-mixed", 1, link)
		if !ok {
			t.Fatalf("%s: no figures", c.model)
		}
		if math.Abs(g.PeakTFLOPS-c.want) > 1e-6*c.want {
			t.Errorf("%s pcie=%v: peak %.2f TFLOPS, want %.2f", c.model, c.pcie, g.PeakTFLOPS, c.want)
		}
		if spec.FP8TFLOPS != nil && *spec.FP8TFLOPS > 0 {
			// fp8 scales with the same clock.
			if want := *spec.FP8TFLOPS * c.want / *spec.HalfTFLOPS(); math.Abs(g.FP8TFLOPS-want) > 1e-6*want {
				t.Errorf("%s: fp8 %.2f, want %.2f", c.model, g.FP8TFLOPS, want)
			}
		}
	}
	// fp32 jobs run on the CUDA cores at the FP32 figure: not capped by the tensor budget.
	spec, _ := pricing.LookupGPU("L4")
	if g, _ := TimeGPUFor(spec, "fp32", 1, -1); g.PeakTFLOPS != *spec.FP32TFLOPS {
		t.Errorf("L4 fp32: peak %.1f, want the FP32 figure %.1f", g.PeakTFLOPS, *spec.FP32TFLOPS)
	}
}

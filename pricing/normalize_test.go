package pricing

import (
	"os"
	"testing"
	"time"
)

func TestNormalizeGPU(t *testing.T) {
	tests := []struct {
		name string
		mem  float64
		want string
	}{
		// Canonical names (the snapshot's gpu_model column) map to themselves.
		{"H100-PCIE", 0, "H100-PCIE"}, {"a100-80gb", 0, "A100-80GB"}, {"RTX6000-Ada", 0, "RTX6000-Ada"},
		// AWS DescribeInstanceTypes GpuInfo names, with the per-GPU memory they report.
		{"A100", 40, "A100"}, {"A100", 80, "A100-80GB"}, {"V100", 16, "V100"}, {"V100", 32, "V100-32GB"},
		{"L4", 22.35, "L4"}, {"T4", 16, "T4"}, {"T4g", 16, "T4G"}, {"A10G", 22.35, "A10G"},
		{"H100", 80, "H100"}, {"H200", 141, "H200"}, {"L40S", 44.7, "L40S"}, {"Radeon Pro V520", 8, "RadeonProV520"},
		{"B200", 179, "B200"}, {"M60", 8, "M60"}, {"K80", 12, "K80"},
		// GCP accelerator types.
		{"nvidia-tesla-a100", 0, "A100"}, {"nvidia-a100-40gb", 0, "A100"}, {"nvidia-a100-80gb", 0, "A100-80GB"},
		{"nvidia-l4", 0, "L4"}, {"nvidia-l4-vws", 0, "L4"}, {"nvidia-h100-80gb", 0, "H100"},
		{"nvidia-h100-mega-80gb", 0, "H100"}, {"nvidia-h200-141gb", 0, "H200"}, {"nvidia-tesla-t4", 0, "T4"},
		{"nvidia-tesla-v100", 0, "V100"}, {"nvidia-tesla-p100", 0, "P100"}, {"nvidia-tesla-p4", 0, "P4"},
		{"nvidia-b200", 0, "B200"}, {"nvidia-gb200", 0, "GB200"}, {"nvidia-rtx-pro-6000", 0, "RTXPRO6000"},
		// Lambda descriptions.
		{"8x H100 (80 GB SXM5)", 0, "H100"}, {"1x H100 (80 GB PCIe)", 0, "H100-PCIE"}, {"1x A10 (24 GB PCIe)", 0, "A10"},
		{"8x A100 (80 GB SXM4)", 0, "A100-80GB"}, {"1x A100 (40 GB SXM4)", 0, "A100"}, {"1x GH200 (96 GB)", 0, "GH200"},
		{"H100 (80 GB SXM5)", 0, "H100"}, {"1x RTX 6000 (24 GB)", 0, "RTX6000"}, {"8x Tesla V100 (16 GB)", 0, "V100"},
		// RunPod ids and display names (memoryInGb alongside).
		{"NVIDIA A100-SXM4-80GB", 80, "A100-80GB"}, {"NVIDIA H100 80GB HBM3", 80, "H100"}, {"NVIDIA H200", 141, "H200"},
		{"NVIDIA GeForce RTX 4090", 24, "RTX4090"}, {"NVIDIA RTX A5000", 24, "RTXA5000"}, {"A100 SXM", 80, "A100-80GB"},
		{"H100 SXM", 80, "H100"}, {"H100 PCIe", 80, "H100-PCIE"}, {"H100 NVL", 94, "H100-NVL"}, {"RTX 6000 Ada", 48, "RTX6000-Ada"},
		{"NVIDIA RTX 6000 Ada Generation", 48, "RTX6000-Ada"}, {"RTX A6000", 48, "A6000"}, {"RTX A4000", 16, "RTXA4000"},
		{"RTX 4000 Ada", 20, "RTX4000-Ada"}, {"AMD Instinct MI300X OAM", 192, "MI300X"}, {"RTX PRO 6000", 96, "RTXPRO6000"},
		// Other collectors' spellings named in the snapshot README.
		{"H100-SXM", 0, "H100"}, {"h100_pcie", 0, "H100-PCIE"}, {"H100_PCIE", 0, "H100-PCIE"},
		{"H100-80G-PCIe-NVLink", 0, "H100-PCIE"}, {"A100-80GB-SXM", 0, "A100-80GB"}, {"RTXA6000", 0, "A6000"},
		{"NVIDIA A100 80GB PCIe", 0, "A100-80GB-PCIE"}, {"A100 (40 GB PCIe)", 0, "A100-PCIE"}, {"A100 PCIe", 80, "A100-80GB-PCIE"},
		{"A100-PCIE", 0, "A100-PCIE"}, {"A100-SXM4-40GB", 0, "A100"},
		{"RTX-A6000", 0, "A6000"}, {"RTX-A4000", 0, "RTXA4000"}, {"rtx-pro-server-6000", 0, "RTXPRO6000"},
		{"rtx6000", 96, "RTXPRO6000"}, {"h100-80gb-mega", 0, "H100"},
	}
	for _, tt := range tests {
		got, ok := NormalizeGPU(tt.name, tt.mem)
		if !ok || got != tt.want {
			t.Errorf("NormalizeGPU(%q, %v) = %q, %v; want %q, true", tt.name, tt.mem, got, ok, tt.want)
		}
		if _, inCatalog := LookupGPU(got); !inCatalog {
			t.Errorf("NormalizeGPU(%q) = %q, which is not in the GPU catalog", tt.name, got)
		}
	}
}

func TestNormalizeGPUUnknownIsKept(t *testing.T) {
	for _, name := range []string{"NVIDIA", "Gaudi HL-205", "  Mystery X9  ", "", "unknown"} {
		got, ok := NormalizeGPU(name, 0)
		if ok {
			t.Errorf("NormalizeGPU(%q) = %q, true; want unknown", name, got)
		}
		if want := trimmed(name); got != want {
			t.Errorf("NormalizeGPU(%q) kept %q; want %q", name, got, want)
		}
	}
}

func trimmed(s string) string {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

func TestGPUCatalog(t *testing.T) {
	gpus := GPUs()
	if len(gpus) != 44 {
		t.Fatalf("catalog has %d GPUs; want 44", len(gpus))
	}
	// The PCIe A100s are parts of their own: lower bandwidth (80 GB), no NVLink.
	for sxm, pcie := range map[string]string{"A100": "A100-PCIE", "A100-80GB": "A100-80GB-PCIE"} {
		s, _ := LookupGPU(sxm)
		p, ok := LookupGPU(pcie)
		if !ok || p.MemGB != s.MemGB || p.GPULinkGBs == nil || *p.GPULinkGBs != 0 || *p.HalfTFLOPS() != *s.HalfTFLOPS() {
			t.Errorf("%s = %+v; want %s's memory and peak without NVLink", pcie, p, sxm)
		}
	}
	t4, ok := LookupGPU("t4")
	if !ok || t4.SupportsBF16 || t4.FlashAttention() || t4.MemGB != 16 {
		t.Errorf("T4 = %+v; want 16 GiB, no bf16, no flash attention", t4)
	}
	h100, _ := LookupGPU("H100")
	if tf := h100.HalfTFLOPS(); tf == nil || *tf != 989.5 || !h100.FlashAttention() {
		t.Errorf("H100 half TFLOPS = %v; want 989.5 with flash attention", tf)
	}
	if tf := t4.HalfTFLOPS(); tf == nil || *tf != 65 {
		t.Errorf("T4 half TFLOPS = %v; want fp16 65 (no bf16)", tf)
	}
	// Issue 15: every GPU has what the job-time model needs (bandwidth, some compute
	// figure, memory type, links) and says where the performance columns came from.
	for _, g := range gpus {
		if g.BandwidthGBs == nil || (g.HalfTFLOPS() == nil && g.FP32TFLOPS == nil) {
			t.Errorf("%s: no bandwidth or compute figure: %+v", g.Model, g)
		}
		if g.MemoryType == "" || g.GPULinkGBs == nil || g.HostLinkGBs == nil || g.PerfSource == "" {
			t.Errorf("%s: performance columns incomplete: %+v", g.Model, g)
		}
	}
	if b300, _ := LookupGPU("B300"); b300.HalfTFLOPS() == nil || *b300.HalfTFLOPS() != 2250 || !b300.HBM() {
		t.Errorf("B300: want 2250 dense BF16 TFLOPS (HGX B300 datasheet, 36 PF sparse / 8 / 2) and HBM: %+v", b300)
	}
	if l4, _ := LookupGPU("L4"); l4.HBM() {
		t.Errorf("L4 has GDDR6, HBM() = true")
	}
}

// TestSnapshotNamesAreCanonical: every gpu_model of the embedded snapshot (and every row
// of it) maps to a catalog GPU, so no offer is stored under a name the fit engine can't
// look up.
func TestSnapshotNamesAreCanonical(t *testing.T) {
	f, err := os.Open("../snapshot/gpu_offers_snapshot.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	offers, err := ParseOffersCSV(f, "gpu_offers_snapshot.csv", time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if len(offers) < 2482 {
		t.Fatalf("%d offers from 2,482 rows; want at least one per row", len(offers))
	}
	seen := map[string]bool{}
	for _, o := range offers {
		if _, ok := LookupGPU(o.GPUModel); !ok && !seen[o.GPUModel] {
			seen[o.GPUModel] = true
			t.Errorf("snapshot GPU %q (e.g. %s) is not in the catalog", o.GPUModel, o.Key())
		}
	}
}

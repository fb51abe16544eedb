package pricing

import (
	"strings"
	"testing"
)

func TestWithUsableMemory(t *testing.T) {
	l4, ok := LookupGPU("L4")
	if !ok || l4.UsableGiB <= 0 || l4.UsableGiB >= 24*1e9/(1<<30) {
		t.Fatalf("L4 usable %v: want a figure below its 24 GB (22.35 GiB)", l4.UsableGiB)
	}
	for _, reported := range []float64{22.35, 24} {
		o := Offer{GPUModel: "L4", GPUCount: 0.5, GPUMemGiB: reported}.WithUsableMemory()
		if o.GPUMemGiB != l4.UsableGiB || o.GPUMemReportedGiB != reported || o.MemPerDeviceGiB() != 0.5*l4.UsableGiB {
			t.Errorf("reported %v: got %+v; want usable %v, reported kept, half of it per slice", reported, o, l4.UsableGiB)
		}
		if again := o.WithUsableMemory(); again != o {
			t.Errorf("applied twice: %+v", again)
		}
	}
	unknown := Offer{GPUModel: "X999", GPUMemGiB: 40}.WithUsableMemory()
	if unknown.GPUMemGiB != 40 || unknown.GPUMemReportedGiB != 0 {
		t.Errorf("unknown GPU: %+v; want the reported figure", unknown)
	}
}

// Every catalog GPU has a usable figure below its datasheet GB and a source, and a stack.
func TestCatalogUsableAndStack(t *testing.T) {
	for _, g := range GPUs() {
		if g.UsableGiB <= 0 || g.UsableGiB > g.MemGB*1.0001 || g.UsableSource == "" {
			t.Errorf("%s: usable %v GiB (datasheet %v GB), source %q", g.Model, g.UsableGiB, g.MemGB, g.UsableSource)
		}
		if g.PyTorch == "" || g.ComputeCapability == "" || g.StackSource == "" {
			t.Errorf("%s: stack %q %q %q", g.Model, g.PyTorch, g.ComputeCapability, g.StackSource)
		}
	}
	for model, runs := range map[string]bool{"K80": false, "RadeonProV520": false, "V100": true, "H100": true, "MI300X": true} {
		if g, _ := LookupGPU(model); g.RunsPyTorch() != runs {
			t.Errorf("%s RunsPyTorch = %v; want %v", model, g.RunsPyTorch(), runs)
		}
	}
	bad := "gpu_model,vendor,architecture,memory_gb,memory_bandwidth_gbs,fp32_tflops,fp16_tflops_dense,bf16_tflops_dense,int8_tops_dense,supports_bf16,nvlink,released,source,pytorch\n" +
		"X,NVIDIA,Ampere,24,,,,,,true,false,2020,s,maybe\n"
	if _, err := ParseGPUCatalog(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "pytorch") {
		t.Errorf("bad pytorch value: %v", err)
	}
}

package fit

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkKernelNeedsMissing is the per-offer kernel check: a GPU that has every kernel
// (the common case) and one that lacks one (the reason is built).
func BenchmarkKernelNeedsMissing(b *testing.B) {
	n := KernelNeedsOf(Job{Engine: EngineVLLM, Quant: "fp8", Attention: "flash"})
	for _, c := range []struct {
		name, vendor, cc string
		fp8, miss        bool
	}{
		{"no-miss", "NVIDIA", "9.0", true, false},
		{"fallback", "NVIDIA", "8.0", false, false},
		{"miss", "NVIDIA", "7.0", false, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if k, _, _ := n.Missing(c.vendor, c.cc, c.fp8); (k != "") != c.miss {
					b.Fatalf("missing %q", k)
				}
			}
		})
	}
}

// TestKernelReasons: every branch of Missing's reason reads as its fmt form (the message
// users see in the excluded list), including the ones no catalog job reaches: a kernel
// family the engine has no row for, a row capped at one compute capability, ROCm.
func TestKernelReasons(t *testing.T) {
	for _, c := range []struct {
		n            KernelNeeds
		vendor, cc   string
		fp8          bool
		kernel, flag string
	}{
		{KernelNeeds{Engine: EngineLlamaCpp, Kernels: []Kernel{KernelMXFP4}, flags: []string{"MXFP4 weights"}}, "NVIDIA", "9.0", true, string(KernelMXFP4), "MXFP4 weights"},
		{KernelNeeds{Engine: EngineLlamaCpp, Kernels: []Kernel{KernelFP8W8A8}, flags: []string{"fp8 weights"}}, "NVIDIA", "9.0", true, string(KernelFP8W8A8), "fp8 weights"},
		{KernelNeeds{Engine: EngineVLLM, Kernels: []Kernel{KernelFlashAttn3}, flags: []string{"fa3"}}, "NVIDIA", "10.0", false, string(KernelFlashAttn3), "fa3"},
		{KernelNeeds{Engine: EngineVLLM, Kernels: []Kernel{KernelFlashAttn2}, flags: []string{"--attention flash"}}, "AMD", "gfx942", true, string(KernelFlashAttn2), "--attention flash"},
		{KernelNeedsOf(Job{Engine: EngineVLLM, Quant: "fp8"}), "NVIDIA", "7.5", false, string(KernelFP8W8A16), "fp8 weights without fp8 tensor cores"},
		{KernelNeedsOf(Job{Engine: EngineTRTLLM}), "amd", "gfx90a", false, string(KernelRuntime), "the engine itself"},
		{KernelNeedsOf(Job{Engine: EngineSGLang, Quant: "int4"}), "NVIDIA", "7.5", false, string(KernelInt4), "int4 weights"},
	} {
		k, why, _ := c.n.Missing(c.vendor, c.cc, c.fp8)
		name := fmt.Sprintf("%s %s", c.n.Engine, c.n.Engine.Spec().Version)
		want := fmt.Sprintf("%s has no %s kernels (%s)", name, c.kernel, c.flag)
		if r, ok := c.n.row(Kernel(c.kernel)); ok {
			amd := strings.EqualFold(c.vendor, "AMD")
			need, on := fmt.Sprintf("compute capability %.1f+", r.MinCC), "compute capability "+c.cc
			if r.MaxCC > 0 {
				need = fmt.Sprintf("compute capability %.1f", r.MaxCC)
			}
			if amd {
				need, on = "NVIDIA", "ROCm ("+c.cc+")"
			}
			want = fmt.Sprintf("%s's %s kernels (%s) need %s, not %s [%s]", name, c.kernel, c.flag, need, on, r.Source)
		}
		if string(k) != c.kernel || why != want {
			t.Errorf("%s %v on %s %s: missing %q, %q\nwant %q, %q", c.n.Engine, c.n.Kernels, c.vendor, c.cc, k, why, c.kernel, want)
		}
	}
}

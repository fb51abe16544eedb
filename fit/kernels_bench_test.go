package fit

import "testing"

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

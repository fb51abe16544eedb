package jobtime

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// BenchmarkTimeModel is what recommend pays per estimate variant (build the time model,
// once) and per GPU model and link it times the variant on (Estimate, memoized per
// slot by the evaluator), for an inference and a LoRA job on H100s.
func BenchmarkTimeModel(b *testing.B) {
	spec, _ := pricing.LookupGPU("H100")
	m, _, err := model.CatalogModel("llama-3.1-8b-instruct")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		job  fit.Job
	}{
		{"inference-8b", fit.Job{}},
		{"lora-8b-fsdp-4gpu", fit.Job{Task: fit.TaskLoRA, SeqLen: 2048, GPUs: 4, Shard: "fsdp"}},
	} {
		res, err := fit.Estimate(m, c.job)
		if err != nil {
			b.Fatal(err)
		}
		g, _ := TimeGPUFor(spec, res.Job.Precision, float64(res.Job.GPUs), -1)
		b.Run("For/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				TimeModelFor(m, res)
			}
		})
		tm := TimeModelFor(m, res)
		b.Run("Estimate/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := tm.Estimate(&g); !ok {
					b.Fatal("no timing")
				}
			}
		})
	}
}

// TestContainsFoldIsEqualFold: containsFold's byte comparison decides as strings.EqualFold
// over every window of sub's length, on instance names with every case mix and on
// strings of ASCII, Unicode letters that fold to ASCII ones (Kelvin sign, long s) and
// invalid bytes.
func TestContainsFoldIsEqualFold(t *testing.T) {
	ref := func(s, sub string) bool {
		for i := 0; i+len(sub) <= len(s); i++ {
			if strings.EqualFold(s[i:i+len(sub)], sub) {
				return true
			}
		}
		return false
	}
	subs := []string{"pcie", "-pci_", "a100", "nvlink", "k", "sk"}
	alphabet := []string{"p", "P", "c", "C", "i", "I", "e", "E", "-", "_", "a", "A", "1", "0", "n", "N", "v", "V", "l", "L", "k", "K", "s", "S",
		"\u212a", "\u017f", "\u0130", "\u0131", "\xff", "\xe2\x84", "é"}
	r := rand.New(rand.NewPCG(29, 4))
	cases := []string{"", "gpu_1x_h100_PCIe", "epyc-genoa-a100-pcie_8x64v128gb", "intel-ice-lake-a100-pci_8x64v128gb", "n3-A100x8-NVLink", "Standard_NC96ads_A100_v4", "nvlin\u212a"}
	for range 20000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		for _, sub := range subs {
			if got, want := containsFold(s, sub), ref(s, sub); got != want {
				t.Fatalf("containsFold(%q, %q) = %v; EqualFold windows say %v", s, sub, got, want)
			}
		}
	}
}

// BenchmarkInstanceGPULink is the per-offer link check on typical instance names.
func BenchmarkInstanceGPULink(b *testing.B) {
	names := [][2]string{{"aws", "p4d.24xlarge"}, {"lambda", "gpu_8x_a100_80gb_sxm4"}, {"vast", "vast-12345678-RTX_4090"}, {"azure", "Standard_ND96amsr_A100_v4"}, {"hyperstack", "n3-A100x8-NVLink"}}
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range names {
			InstanceGPULink(n[0], n[1])
		}
	}
}

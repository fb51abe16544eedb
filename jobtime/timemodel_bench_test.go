package jobtime

import (
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

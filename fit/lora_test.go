package fit

import (
	"testing"

	"github.com/pickergpu/picker/model"
)

func TestLoRATrainableParams(t *testing.T) {
	tests := []struct {
		model   string
		r       int
		targets string
		want    int64
	}{
		{"llama-2-7b", 8, "q_proj,v_proj", 4_194_304}, // PEFT print_trainable_parameters
		{"llama-2-7b", 8, "", 4_194_304},              // the default targets are q_proj,v_proj
		{"llama-2-7b", 16, "q_proj,v_proj", 8_388_608},
		// all-linear on Llama-2-7B r=8: 32 layers x 8 x (4x(4096+4096) + 3x(4096+11008)).
		{"llama-2-7b", 8, "all-linear", 32 * 8 * (4*8192 + 3*15104)},
		{"mistral-7b", 8, "q_proj,v_proj", 32 * 8 * ((4096 + 4096) + (4096 + 1024))},
		{"falcon-7b", 8, "", 32 * 8 * (4544 + 4672)},
	}
	for _, tt := range tests {
		m, _, err := model.CatalogModel(tt.model)
		if err != nil {
			t.Fatal(err)
		}
		job, err := ParseJob(map[string]string{"task": "lora", "lora-targets": tt.targets})
		if err != nil {
			t.Fatal(err)
		}
		job.LoRARank = tt.r
		res, err := Estimate(m, job)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.model, tt.targets, err)
		}
		if res.TrainableParams != tt.want {
			t.Errorf("%s r=%d %q: trainable = %d, want %d", tt.model, tt.r, tt.targets, res.TrainableParams, tt.want)
		}
	}
}

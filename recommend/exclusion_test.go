package recommend

import "testing"

// The summary line counts offers once per GPU model, names the model when there is one,
// and lists the reasons by offers left out, most first.
func TestTallyExclusions(t *testing.T) {
	for _, tt := range []struct {
		name string
		xs   []Exclusion
		want string
	}{
		{"one model", []Exclusion{{GPUModel: "M60", Offers: 61, Code: ExclNoBnB}},
			"61 offers on M60 left out: no bitsandbytes (61)"},
		{"most first", []Exclusion{
			{GPUModel: "K80", Offers: 3, Code: ExclNoPyTorch}, {GPUModel: "M60", Offers: 61, Code: ExclNoBnB},
			{GPUModel: "V520", Offers: 5, Code: ExclNoPyTorch}, {GPUModel: "M4000", Offers: 1, Code: ExclNoBnB}},
			"70 offers on 4 GPU models left out: no bitsandbytes (62), no current PyTorch (8)"},
		{"a model under two reasons counts once", []Exclusion{
			{GPUModel: "K80", Offers: 3, Code: ExclNoFP8}, {GPUModel: "K80", Offers: 3, Code: ExclNoPyTorch}},
			"3 offers on K80 left out: no fp8 (3), no current PyTorch (3)"},
		{"one offer, an unlabelled code", []Exclusion{{GPUModel: "X1", Offers: 1, Code: "new-code"}, {GPUModel: "X2", Offers: 2}},
			"3 offers on 2 GPU models left out: other (2), new-code (1)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := TallyExclusions(tt.xs).String(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	if got := TallyExclusions([]Exclusion{{GPUModel: "A", Offers: 1}}).Head(); got != "1 offer on A left out" {
		t.Errorf("Head = %q; want the singular", got)
	}
}

package store

import "testing"

func TestClassGB(t *testing.T) {
	for _, tt := range []struct {
		model string
		gib   float64
		want  float64
	}{
		{"H100", 79.19, 80},            // the datasheet class, whatever the store holds
		{"A100-80GB", 80, 80},          // a provider's "80" is the class too
		{"L4", 22.35, 24},              // sold as 24 GB, 22 GiB usable
		{"NoSuchGPU", 10, 10.73741824}, // not in the catalogue: its GiB in GB
	} {
		if got := ClassGB(tt.model, tt.gib); got != tt.want {
			t.Errorf("ClassGB(%s, %v) = %v, want %v", tt.model, tt.gib, got, tt.want)
		}
	}
	q := Query{MinVRAMGB: 24}
	if !q.classOK("L4", 1, 22.35) || q.classOK("L4", 0.5, 22.35) || !(Query{MinTotalVRAMGB: 48}).classOK("L4", 2, 22.35) {
		t.Error("classOK: an L4 is 24 GB, half of one 12 GB, two 48 GB")
	}
}

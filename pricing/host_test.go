package pricing

import (
	"math"
	"slices"
	"testing"
)

// TestHostClean: each implausible fact is dropped to unknown and named; plausible ones
// and unknown ones stay as they are.
func TestHostClean(t *testing.T) {
	good := Host{Reliability: 0.97, MaxCUDA: 12.2, Driver: "535.183.01", NetUpMbps: 77.7, NetDownMbps: 105.9, DiskGB: 1607.9, Verification: HostVerified}
	if h, dropped := good.Clean(); h != good || dropped != nil {
		t.Errorf("Clean(%+v) = %+v, %v; want it unchanged", good, h, dropped)
	}
	if h, dropped := (Host{}).Clean(); h != (Host{}) || dropped != nil || (Host{}).Stated() {
		t.Errorf("the zero Host: %+v, %v", h, dropped)
	}
	for _, tt := range []struct {
		name string
		bad  func(h *Host)
		want string
	}{
		{"percent reliability", func(h *Host) { h.Reliability = 97 }, "reliability"},
		{"negative reliability", func(h *Host) { h.Reliability = -0.1 }, "reliability"},
		{"NaN reliability", func(h *Host) { h.Reliability = math.NaN() }, "reliability"},
		{"CUDA below 1", func(h *Host) { h.MaxCUDA = 0.5 }, "max CUDA"},
		{"CUDA absurd", func(h *Host) { h.MaxCUDA = 535 }, "max CUDA"},
		{"negative upload", func(h *Host) { h.NetUpMbps = -1 }, "network up"},
		{"infinite download", func(h *Host) { h.NetDownMbps = math.Inf(1) }, "network down"},
		{"disk absurd", func(h *Host) { h.DiskGB = 1e9 }, "disk"},
		{"driver not a version", func(h *Host) { h.Driver = "535; rm -rf /" }, "driver"},
		{"unknown verification", func(h *Host) { h.Verification = "trusted" }, "verification"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := good
			tt.bad(&h)
			got, dropped := h.Clean()
			if !slices.Equal(dropped, []string{tt.want}) {
				t.Errorf("dropped %v, want [%s]", dropped, tt.want)
			}
			// Only that fact became unknown.
			want := good
			tt.bad(&want)
			switch tt.want {
			case "reliability":
				want.Reliability = 0
			case "max CUDA":
				want.MaxCUDA = 0
			case "network up":
				want.NetUpMbps = 0
			case "network down":
				want.NetDownMbps = 0
			case "disk":
				want.DiskGB = 0
			case "driver":
				want.Driver = ""
			case "verification":
				want.Verification = ""
			}
			if got != want {
				t.Errorf("Clean = %+v, want %+v", got, want)
			}
		})
	}
}

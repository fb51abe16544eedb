package pricing

import (
	"math"
	"strings"
)

// Host is what a marketplace states about the one machine behind an offer (Vast.ai,
// TensorDock): a marketplace offer is a host, not an instance type, and these facts
// decide whether a job can run there at all (an old driver) or should (a flaky host).
// Every field's zero value means "not stated": clouds state none of them, and an
// unknown fact never excludes an offer.
type Host struct {
	// Reliability is the provider's score of the host, 0 to 1 (Vast's reliability2,
	// TensorDock's uptime_percentage / 100).
	Reliability float64 `json:"reliability,omitempty"`
	// MaxCUDA is the newest CUDA version the host's driver supports (Vast
	// cuda_max_good, e.g. 12.2): the job's CUDA runtime must not need a newer one.
	MaxCUDA float64 `json:"max_cuda,omitempty"`
	// Driver is the NVIDIA driver version ("535.183.01").
	Driver string `json:"driver,omitempty"`
	// NetUpMbps and NetDownMbps are the host's measured or stated internet speed in
	// megabits per second.
	NetUpMbps   float64 `json:"net_up_mbps,omitempty"`
	NetDownMbps float64 `json:"net_down_mbps,omitempty"`
	// DiskGB is the disk the host can give the instance, in GB.
	DiskGB float64 `json:"disk_gb,omitempty"`
	// Verification is the provider's vetting of the host: HostVerified,
	// HostUnverified, or "" when the provider says nothing.
	Verification string `json:"verification,omitempty"`
}

// Host verification states (Host.Verification).
const (
	HostVerified   = "verified"
	HostUnverified = "unverified"
)

// Bounds of plausible host facts: CUDA versions run from 1.0 to a few dozen, network
// speeds up to a few hundred Gb/s, disks up to a petabyte. A fact outside them is a
// provider's error and is dropped (set to unknown) rather than trusted.
const (
	MaxHostCUDA     = 99.0
	MaxHostNetMbps  = 1e6
	MaxHostDiskGB   = 1e6
	maxHostDriverLn = 64
)

// Stated reports whether the provider stated any host fact.
func (h Host) Stated() bool { return h != Host{} }

// Clean returns h with every implausible fact dropped to unknown, and the names of the
// facts it dropped (for a warning): a reliability outside [0, 1], a CUDA version
// outside [1, MaxHostCUDA], negative or absurd speeds and disks, a driver string that
// is not a version, a verification state it does not know.
func (h Host) Clean() (Host, []string) {
	var dropped []string
	num := func(name string, v *float64, lo, hi float64) {
		if *v == 0 {
			return
		}
		if math.IsNaN(*v) || *v < lo || *v > hi {
			dropped = append(dropped, name)
			*v = 0
		}
	}
	num("reliability", &h.Reliability, 0, 1)
	num("max CUDA", &h.MaxCUDA, 1, MaxHostCUDA)
	num("network up", &h.NetUpMbps, 0, MaxHostNetMbps)
	num("network down", &h.NetDownMbps, 0, MaxHostNetMbps)
	num("disk", &h.DiskGB, 0, MaxHostDiskGB)
	h.Driver = strings.TrimSpace(h.Driver)
	if h.Driver != "" && (len(h.Driver) > maxHostDriverLn || strings.Trim(h.Driver, "0123456789.") != "") {
		dropped = append(dropped, "driver")
		h.Driver = ""
	}
	if h.Verification != "" && h.Verification != HostVerified && h.Verification != HostUnverified {
		dropped = append(dropped, "verification")
		h.Verification = ""
	}
	return h, dropped
}

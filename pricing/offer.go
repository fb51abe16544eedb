// Package pricing is picker's vocabulary: GPU instance offers, GPU specs, the GPU-name
// normalisation table and coded errors. It imports only the standard library so every
// other package (store, fit, providers, cmd) can share it without cycles.
package pricing

import (
	"strings"
	"time"
)

// Purchase is how an instance is bought.
type Purchase string

const (
	OnDemand Purchase = "on-demand"
	Spot     Purchase = "spot"
)

// ParsePurchase accepts "on-demand", "ondemand", "spot" (case-insensitive).
func ParsePurchase(s string) (Purchase, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on-demand", "ondemand", "on_demand":
		return OnDemand, nil
	case "spot", "preemptible", "interruptible":
		return Spot, nil
	}
	return "", Errorf(Invalid, "purchase %q: want on-demand or spot", s)
}

// Offer is one way to rent GPUs: an instance type in a region (and zone, where the
// provider prices per zone), bought on demand or as spot, at a price per hour for the
// whole instance. Memory is stored per GPU; totals are derived, never stored, so the two
// can't disagree.
type Offer struct {
	Provider     string  `json:"provider"`
	Region       string  `json:"region"`
	Zone         string  `json:"zone"`
	InstanceType string  `json:"instance_type"`
	GPUModel     string  `json:"gpu_model"`   // canonical name from the GPU catalog, or the raw name when unknown
	GPUCount     float64 `json:"gpu_count"`   // fractional for vGPU slices (e.g. 0.125 of an L4)
	GPUMemGiB    float64 `json:"gpu_mem_gib"` // per whole GPU, also for a slice (which holds GPUCount × GPUMemGiB)
	// GPUMemReportedGiB is the provider's own per-GPU figure, kept as information once
	// WithUsableMemory has replaced GPUMemGiB by the catalog's usable memory (0 before).
	GPUMemReportedGiB float64   `json:"gpu_mem_reported_gib,omitempty"`
	VCPUs             float64   `json:"vcpus"`
	RAMGiB            float64   `json:"ram_gib"`
	Purchase          Purchase  `json:"purchase"`
	PriceUSDHr        float64   `json:"price_usd_hr"`
	Currency          string    `json:"currency"`
	ObservedAt        time.Time `json:"observed_at"`
	// Source says where the price came from: "snapshot" for the embedded catalog,
	// "api" for a live refresh, "file" for a user's price file.
	Source string `json:"source"`
	// Available is the provider's word on capacity at ObservedAt (Lambda, RunPod,
	// Hyperstack, Shadeform, Prime Intellect say it); unknown (omitted) for the rest.
	// recommend ranks an unavailable offer after every launchable one.
	Available Availability `json:"available,omitempty"`
	// Host holds the machine's facts where a marketplace states them (host.go); zero
	// everywhere else. They are fit facts: recommend excludes a host whose driver is
	// too old for the job's CUDA and filters by --min-reliability.
	Host Host `json:"host,omitzero"`
}

// Where an offer's price came from (Offer.Source). Callers compare against these, never
// against bare strings, so a new source is one edit.
const (
	SourceSnapshot = "snapshot" // the embedded, dated catalog that seeds an empty database
	SourceAPI      = "api"      // a live provider refresh
	SourceFile     = "file"     // a user's static price file
)

// Key identifies an offer across refreshes: the same instance bought the same way in the
// same place is the same offer whose price may change over time.
type Key struct {
	Provider, Region, Zone, InstanceType string
	Purchase                             Purchase
}

// Key returns the offer's identity.
func (o Offer) Key() Key {
	return Key{o.Provider, o.Region, o.Zone, o.InstanceType, o.Purchase}
}

func (k Key) String() string {
	parts := []string{k.Provider, k.Region}
	if k.Zone != "" {
		parts = append(parts, k.Zone)
	}
	return strings.Join(append(parts, k.InstanceType, string(k.Purchase)), "/")
}

// Fractional reports whether the offer is a slice of one GPU (vGPU, MIG-like partition).
func (o Offer) Fractional() bool { return o.GPUCount > 0 && o.GPUCount < 1 }

// WithUsableMemory returns the offer with GPUMemGiB set to the memory a CUDA/ROCm program
// can use on its GPU model (gpus.csv usable_gib), whatever the provider reported: AWS
// reports an L4 as 22.4 GiB, others as 24 (datasheet GB), and neither is what
// torch.cuda.get_device_properties().total_memory says (~22.0). The provider's figure moves
// to GPUMemReportedGiB. A GPU the catalog lacks keeps the reported figure.
func (o Offer) WithUsableMemory() Offer {
	if o.GPUMemReportedGiB != 0 {
		return o // already applied
	}
	if g, ok := LookupGPU(o.GPUModel); ok && g.UsableGiB > 0 {
		o.GPUMemReportedGiB = o.GPUMemGiB
		o.GPUMemGiB = g.UsableGiB
	}
	return o
}

// TotalGPUMemGiB is the VRAM of the whole instance. For a fractional offer GPUMemGiB is
// the memory of the whole physical GPU (as clouds and the snapshot report it), so a 1/8
// slice of a 24 GiB L4 holds 3 GiB: the product is right in both cases.
func (o Offer) TotalGPUMemGiB() float64 { return o.GPUCount * o.GPUMemGiB }

// MemPerDeviceGiB is the memory one process can use on one device of the offer: the
// GPU's memory, or the slice's for a fractional offer. A job fits when its per-GPU need
// is at most this.
func (o Offer) MemPerDeviceGiB() float64 {
	if o.Fractional() {
		return o.GPUCount * o.GPUMemGiB
	}
	return o.GPUMemGiB
}

// PricePerGPU is the hourly price divided by the GPU count (fractions included, so a
// 1/8 slice is priced per whole-GPU equivalent).
func (o Offer) PricePerGPU() float64 {
	if o.GPUCount <= 0 {
		return 0
	}
	return o.PriceUSDHr / o.GPUCount
}

// PricePerGiB is the hourly price per GiB of VRAM on the instance.
func (o Offer) PricePerGiB() float64 {
	t := o.TotalGPUMemGiB()
	if t <= 0 {
		return 0
	}
	return o.PriceUSDHr / t
}

// Validate checks the facts every stored offer must have. Adapters call it before they
// return offers so a broken API answer is caught at the edge, with the offer named.
func (o Offer) Validate() error {
	switch {
	case o.Provider == "":
		return Errorf(Invalid, "offer %s: provider is empty", o.Key())
	case o.InstanceType == "":
		return Errorf(Invalid, "offer %s: instance type is empty", o.Key())
	case o.Purchase != OnDemand && o.Purchase != Spot:
		return Errorf(Invalid, "offer %s: purchase %q is not on-demand or spot", o.Key(), o.Purchase)
	case !(o.PriceUSDHr > 0):
		return Errorf(Invalid, "offer %s: price %v is not positive", o.Key(), o.PriceUSDHr)
	case o.Currency == "":
		return Errorf(Invalid, "offer %s: currency is empty", o.Key())
	case !(o.GPUCount > 0):
		return Errorf(Invalid, "offer %s: gpu count %v is not positive", o.Key(), o.GPUCount)
	case !(o.GPUMemGiB > 0):
		return Errorf(Invalid, "offer %s: gpu memory %v GiB is not positive", o.Key(), o.GPUMemGiB)
	case o.GPUModel == "":
		return Errorf(Invalid, "offer %s: gpu model is empty", o.Key())
	}
	return nil
}

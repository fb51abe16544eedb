package web

import (
	"strings"

	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// interconnect is what an instance type's GPUs talk over, among themselves and between
// instances, from the facts the time model uses: pricing/gpus.csv's link columns, what
// the instance type says beyond its GPU's datasheet (jobtime.InstanceGPULink: an A100 in
// a PCIe instance has no NVLink), and the cluster interconnects picker knows
// (recommend/interconnect.csv). So the page shows the link a recommendation was timed
// with, not a second opinion.
type interconnect struct {
	// GPU is the GPU-to-GPU link: "NVLink", "Infinity Fabric" (AMD), "PCIe", or "" with
	// one GPU (a slice included) or a GPU the catalogue lacks.
	GPU string
	// GPUGBs is the datasheet GPU-to-GPU bandwidth per GPU, both directions (NVLink or
	// Infinity Fabric; 0 for PCIe or unknown).
	GPUGBs float64
	// HostGBs is the GPU's host link per direction (PCIe x16: 16, 32, 64 GB/s for Gen3,
	// 4, 5; NVLink-C2C on Grace parts), 0 when unknown.
	HostGBs float64
	// Cluster is the interconnect between instances, when listed.
	Cluster    recommend.Interconnect
	HasCluster bool
}

func interconnectOf(o *pricing.Offer) interconnect {
	var ic interconnect
	g, known := pricing.LookupGPU(o.GPUModel)
	if known && g.HostLinkGBs != nil {
		ic.HostGBs = *g.HostLinkGBs
	}
	if o.GPUCount > 1 && known {
		switch {
		case jobtime.InstanceGPULink(o.Provider, o.InstanceType) == 0:
			ic.GPU = "PCIe"
		case g.GPULinkGBs == nil:
		case *g.GPULinkGBs > 0:
			ic.GPU, ic.GPUGBs = "NVLink", *g.GPULinkGBs
			if strings.EqualFold(g.Vendor, "AMD") {
				ic.GPU = "Infinity Fabric"
			}
		default:
			ic.GPU = "PCIe"
		}
	}
	ic.Cluster, ic.HasCluster = recommend.LookupInterconnect(o.Provider, o.InstanceType)
	return ic
}

// Short is the Compare table's cell: the GPU link and the cluster interconnect's name,
// "–" when there is neither.
func (ic interconnect) Short() string {
	var parts []string
	if ic.GPU != "" {
		parts = append(parts, ic.GPU)
	}
	if ic.HasCluster {
		parts = append(parts, ic.Cluster.Name)
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, " · ")
}

// pcieGen names a PCIe x16 host link by its bandwidth per direction.
func pcieGen(gbs float64) string {
	switch gbs {
	case 16:
		return "PCIe Gen3 x16"
	case 32:
		return "PCIe Gen4 x16"
	case 64:
		return "PCIe Gen5 x16"
	}
	return ""
}

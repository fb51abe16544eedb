package azure

import (
	"regexp"
	"sync"
)

// azureFamilies maps an Azure N-series size family (the size name without "Standard_"
// and without its vCPU count, e.g. Standard_NC24ads_A100_v4 -> NCads_A100_v4) to its GPU.
// Source: Microsoft Learn N-series size tables (NC, ND, NV families), as used for the
// embedded snapshot. It names the GPU of a size the per-size table (sizes.csv) lacks a
// canonical model for, and cross-checks that table in the tests.
var azureFamilies = map[string]string{
	"NCadis_H100_v5":            "H100-NVL",
	"NCads_H100_v5":             "H100-NVL",
	"NCads_A100_v4":             "A100-80GB",
	"NCas_T4_v3":                "T4",
	"NCds_xl_RTXPRO6000BSE_v6":  "RTXPRO6000",
	"NClds_xl_RTXPRO6000BSE_v6": "RTXPRO6000",
	"NCrs_v3":                   "V100",
	"NCs_v3":                    "V100",
	"NDamsr_A100_v4":            "A100-80GB",
	"NDasr_v4":                  "A100",
	"NDisr_H100_v5":             "H100",
	"NDisr_H200_v5":             "H200",
	"NDisr_MI300X_v5":           "MI300X",
	"NDrs_v2":                   "V100-32GB",
	"NVadms_A10_v5":             "A10",
	"NVads_A10_v5":              "A10",
	"NVs_v3":                    "M60",
}

// Compiled on first use, not in package init, which every picker command runs.
var azureSizeRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:Standard_)?([A-Z]+)\d+(?:-\d+)?(.*)$`) })

// sizeFamily strips "Standard_" and the vCPU count from an Azure size name.
func sizeFamily(size string) string {
	m := azureSizeRe().FindStringSubmatch(size)
	if m == nil {
		return size
	}
	return m[1] + m[2]
}

// familyGPU returns the canonical GPU of an Azure VM size, ok=false when the size's
// family is not a known GPU family.
func familyGPU(size string) (string, bool) {
	m, ok := azureFamilies[sizeFamily(size)]
	return m, ok
}

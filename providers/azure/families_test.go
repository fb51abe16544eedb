package azure

import "testing"

func TestFamilyGPU(t *testing.T) {
	tests := map[string]string{
		"Standard_NC24ads_A100_v4":             "A100-80GB",
		"Standard_NC40ads_H100_v5":             "H100-NVL",
		"Standard_ND96isr_H100_v5":             "H100",
		"Standard_ND96isr_H200_v5":             "H200",
		"Standard_NC4as_T4_v3":                 "T4",
		"Standard_NC6s_v3":                     "V100",
		"Standard_ND40rs_v2":                   "V100-32GB",
		"Standard_NV36ads_A10_v5":              "A10",
		"Standard_ND96asr_v4":                  "A100",
		"Standard_ND96amsr_A100_v4":            "A100-80GB",
		"Standard_NV12s_v3":                    "M60",
		"Standard_ND96isr_MI300X_v5":           "MI300X",
		"Standard_NC128ds_xl_RTXPRO6000BSE_v6": "RTXPRO6000",
	}
	for size, want := range tests {
		if got, ok := familyGPU(size); !ok || got != want {
			t.Errorf("familyGPU(%q) = %q, %v; want %q", size, got, ok, want)
		}
	}
	if got, ok := familyGPU("Standard_E4ds_v4"); ok {
		t.Errorf("familyGPU(E4ds_v4) = %q; want not a GPU size", got)
	}
}

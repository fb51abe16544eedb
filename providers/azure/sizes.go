package azure

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/pickergpu/picker/pricing"
)

// sizesCSV holds the hardware of Azure's GPU VM sizes; its header comment names the source.
//
//go:embed sizes.csv
var sizesCSV []byte

// Size is one Azure GPU VM size's hardware: what the Retail Prices API does not carry.
type Size struct {
	Name      string // ARM size name, e.g. Standard_NC24ads_A100_v4
	GPUModel  string // canonical GPU model
	GPUCount  float64
	GPUMemGiB float64 // per GPU; the slice's memory for fractional sizes
	VCPUs     float64
	RAMGiB    float64
}

var (
	sizesOnce sync.Once
	sizes     map[string]Size
	sizesErr  error
)

// Sizes returns the embedded size table keyed by size name. A malformed table is a
// build mistake; the error says which line.
func Sizes() (map[string]Size, error) {
	sizesOnce.Do(func() { sizes, sizesErr = parseSizes(sizesCSV) })
	return sizes, sizesErr
}

func parseSizes(b []byte) (map[string]Size, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.Comment = '#'
	r.FieldsPerRecord = 6
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("azure: sizes.csv: %w", err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "size,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib" {
		return nil, fmt.Errorf("azure: sizes.csv: unexpected header")
	}
	out := make(map[string]Size, len(rows)-1)
	for i, row := range rows[1:] {
		var nums [4]float64
		for j := range nums {
			v, err := strconv.ParseFloat(row[2+j], 64)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("azure: sizes.csv row %d (%s): bad number %q", i+2, row[0], row[2+j])
			}
			nums[j] = v
		}
		if _, dup := out[row[0]]; dup {
			return nil, fmt.Errorf("azure: sizes.csv: %s listed twice", row[0])
		}
		out[row[0]] = Size{Name: row[0], GPUModel: row[1], GPUCount: nums[0], GPUMemGiB: nums[1], VCPUs: nums[2], RAMGiB: nums[3]}
	}
	return out, nil
}

// gpuFamilyRe matches the N-series (GPU) size names: NC, ND, NV and NG families. A size
// it matches that the table lacks is reported; other sizes (D, E, F, M, ...) are not GPU
// VMs and are ignored.
// Compiled on first use, not in package init, which every picker command runs.
var gpuFamilyRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Standard_N[CDVG][0-9]`) })

// IsGPUSize reports whether an ARM size name belongs to a GPU (N-series) family.
func IsGPUSize(name string) bool { return gpuFamilyRe().MatchString(name) }

// gpuModel returns the size's canonical GPU, cross-checked against the family
// table (families.go); ok is false when the table names a model the GPU catalog
// lacks (the caller keeps it raw).
func (s Size) gpuModel() (string, bool) {
	if g, ok := pricing.LookupGPU(s.GPUModel); ok {
		return g.Model, true
	}
	if m, ok := familyGPU(s.Name); ok {
		return m, true
	}
	return s.GPUModel, false
}

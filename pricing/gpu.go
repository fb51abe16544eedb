package pricing

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// gpusCSV is ../shared/data/gpus.csv: datasheet figures for every GPU model that appears
// in the embedded offer snapshot (see that file's README for per-row sources).
//
//go:embed gpus.csv
var gpusCSV []byte

// GPU is one GPU model's datasheet facts. A nil figure means the datasheet figure is not
// known (the catalog leaves it empty rather than guessing); 0 means the GPU lacks the
// feature (e.g. BF16 on a T4).
type GPU struct {
	Model        string `json:"gpu_model"`
	Vendor       string `json:"vendor"`
	Architecture string `json:"architecture"`
	// MemGB is the datasheet memory in the vendor's GB (what providers report): not what a
	// program can use. UsableGiB is that: torch.cuda.get_device_properties().total_memory in
	// GiB (or nvidia-smi's total where only that is published), per UsableSource.
	MemGB        float64  `json:"memory_gb"`
	UsableGiB    float64  `json:"usable_gib"`
	UsableSource string   `json:"usable_source"`
	BandwidthGBs *float64 `json:"memory_bandwidth_gbs"`
	FP32TFLOPS   *float64 `json:"fp32_tflops"`
	FP16TFLOPS   *float64 `json:"fp16_tflops_dense"`
	BF16TFLOPS   *float64 `json:"bf16_tflops_dense"`
	INT8TOPS     *float64 `json:"int8_tops_dense"`
	SupportsBF16 bool     `json:"supports_bf16"`
	NVLink       bool     `json:"nvlink"`
	Released     int      `json:"released"`
	Source       string   `json:"source"`
	// FP8 reports fp8 (e4m3/e5m2) tensor-core matmuls: NVIDIA Ada Lovelace (sm89), Hopper
	// (sm90) and Blackwell (NVIDIA Transformer Engine docs, "FP8 support": "FP8 is
	// available on Ada, Hopper and Blackwell"), AMD CDNA 3/4 (MI300X/MI355X data sheets:
	// FP8 matrix throughput). What vLLM's fp8 weights / fp8 KV cache and TransformerEngine
	// fp8 training need. The gpus.csv column is optional (false when absent).
	FP8 bool `json:"fp8"`
	// Performance columns (appended to gpus.csv for the job-time model; optional in a
	// user's file). MemoryType is HBM2/HBM2e/HBM3/HBM3e/GDDR5/GDDR6/GDDR6X/GDDR7: single-
	// stream decoders reach a different share of HBM and GDDR bandwidth.
	MemoryType string   `json:"memory_type,omitempty"`
	FP8TFLOPS  *float64 `json:"fp8_tflops_dense"`
	// GPULinkGBs is the datasheet GPU-to-GPU bandwidth per GPU (NVLink, Infinity Fabric),
	// both directions together; 0 = none (PCIe only), nil = unknown.
	GPULinkGBs *float64 `json:"gpu_link_gbs"`
	// HostLinkGBs is the host (CPU) link per direction: PCIe x16 16/32/64 GB/s for
	// Gen3/4/5, NVLink-C2C on Grace parts. Offload traffic crosses it.
	HostLinkGBs *float64 `json:"host_link_gbs"`
	PerfSource  string   `json:"perf_source,omitempty"`
	// The software stack (gpus.csv stack_source says where each comes from): compute
	// capability or gfx target; PyTorch support in the current wheels (StackYes, or
	// StackLegacy for GPUs only the older CUDA 12.6 wheels build for, or StackNo);
	// bitsandbytes and FlashAttention-2 kernels for the GPU.
	ComputeCapability string `json:"compute_capability"`
	PyTorch           string `json:"pytorch"`
	BitsAndBytes      bool   `json:"bitsandbytes"`
	FlashAttn2        bool   `json:"flash_attn2"`
	StackSource       string `json:"stack_source"`
}

// HBM reports whether the GPU's memory is HBM (stacked, wide and high-latency) rather
// than GDDR.
func (g GPU) HBM() bool { return strings.HasPrefix(strings.ToUpper(g.MemoryType), "HBM") }

// PyTorch support levels (gpus.csv pytorch column).
const (
	StackYes    = "yes"    // the current default wheels run it
	StackLegacy = "legacy" // only the CUDA 12.6 wheels (sm_50-sm_70), dropped from CUDA 12.8+/13 builds
	StackNo     = "no"     // no current PyTorch wheel runs it (Kepler, RDNA1)
)

// RunsPyTorch reports whether some current PyTorch wheel runs on the GPU.
func (g GPU) RunsPyTorch() bool { return g.PyTorch == StackYes || g.PyTorch == StackLegacy }

// FlashAttention reports whether FlashAttention-2 kernels run on the GPU: they need
// NVIDIA Ampere (sm80) or newer, or AMD CDNA 3+ (ROCm's flash-attention port); gpus.csv's
// flash_attn2 column holds it per model.
func (g GPU) FlashAttention() bool { return g.FlashAttn2 }

// Usable is the memory a program can allocate on one GPU of the model: the catalog's
// usable figure, or reported (the provider's figure) for a GPU the catalog lacks.
func (g GPU) Usable(reported float64) float64 {
	if g.UsableGiB > 0 {
		return g.UsableGiB
	}
	return reported
}

// HalfTFLOPS is the dense tensor throughput the GPU gives a bf16 job (or an fp16 job on
// GPUs without bf16). nil when the datasheet figure is unknown.
func (g GPU) HalfTFLOPS() *float64 {
	if g.SupportsBF16 && g.BF16TFLOPS != nil && *g.BF16TFLOPS > 0 {
		return g.BF16TFLOPS
	}
	if g.FP16TFLOPS != nil && *g.FP16TFLOPS > 0 {
		return g.FP16TFLOPS
	}
	return nil
}

var (
	catalogOnce sync.Once
	catalog     []GPU
	catalogBy   map[string]int
	catalogErr  error
)

func loadCatalog() {
	catalog, catalogErr = ParseGPUCatalog(bytes.NewReader(gpusCSV))
	catalogBy = make(map[string]int, len(catalog))
	for i, g := range catalog {
		catalogBy[strings.ToLower(g.Model)] = i
	}
}

// GPUs returns the embedded GPU catalog in file order. The slice is a copy.
func GPUs() []GPU {
	catalogOnce.Do(loadCatalog)
	if catalogErr != nil {
		panic("pricing: embedded gpus.csv: " + catalogErr.Error()) // a build defect, caught by tests
	}
	return slices.Clone(catalog)
}

// LookupGPU finds a canonical model name (case-insensitive) in the catalog.
func LookupGPU(model string) (GPU, bool) {
	catalogOnce.Do(loadCatalog)
	i, ok := catalogBy[strings.ToLower(model)]
	if !ok {
		return GPU{}, false
	}
	return catalog[i], true
}

// ParseGPUCatalog reads a CSV with gpus.csv's header.
func ParseGPUCatalog(r io.Reader) ([]GPU, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("gpus.csv: header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"gpu_model", "vendor", "architecture", "memory_gb", "memory_bandwidth_gbs", "fp32_tflops", "fp16_tflops_dense", "bf16_tflops_dense", "int8_tops_dense", "supports_bf16", "nvlink", "released", "source"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("gpus.csv: missing column %q", need)
		}
	}
	var out []GPU
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("gpus.csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		opt := func(name string) (*float64, error) {
			s := strings.TrimSpace(rec[col[name]])
			if s == "" {
				return nil, nil
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("gpus.csv:%d: %s %q: not a number", line, name, s)
			}
			return &v, nil
		}
		g := GPU{Model: rec[col["gpu_model"]], Vendor: rec[col["vendor"]], Architecture: rec[col["architecture"]], Source: rec[col["source"]]}
		mem, err := opt("memory_gb")
		if err != nil || mem == nil {
			return nil, fmt.Errorf("gpus.csv:%d: memory_gb is required", line)
		}
		g.MemGB = *mem
		if err := parseStack(rec, col, line, &g); err != nil {
			return nil, err
		}
		for name, dst := range map[string]**float64{"memory_bandwidth_gbs": &g.BandwidthGBs, "fp32_tflops": &g.FP32TFLOPS, "fp16_tflops_dense": &g.FP16TFLOPS, "bf16_tflops_dense": &g.BF16TFLOPS, "int8_tops_dense": &g.INT8TOPS} {
			if *dst, err = opt(name); err != nil {
				return nil, err
			}
		}
		for name, dst := range map[string]**float64{"fp8_tflops_dense": &g.FP8TFLOPS, "gpu_link_gbs": &g.GPULinkGBs, "host_link_gbs": &g.HostLinkGBs} {
			if _, ok := col[name]; !ok {
				continue // performance columns are optional
			}
			if *dst, err = opt(name); err != nil {
				return nil, err
			}
		}
		if i, ok := col["memory_type"]; ok {
			g.MemoryType = strings.TrimSpace(rec[i])
		}
		if i, ok := col["perf_source"]; ok {
			g.PerfSource = rec[i]
		}
		g.SupportsBF16 = rec[col["supports_bf16"]] == "true"
		g.NVLink = rec[col["nvlink"]] == "true"
		if i, ok := col["fp8"]; ok && i < len(rec) {
			g.FP8 = rec[i] == "true"
		}
		if s := rec[col["released"]]; s != "" {
			if g.Released, err = strconv.Atoi(s); err != nil {
				return nil, fmt.Errorf("gpus.csv:%d: released %q: not a year", line, s)
			}
		}
		out = append(out, g)
	}
}

// parseStack reads the optional usable-memory and software-stack columns (a catalog
// without them, like an older gpus.csv, leaves them zero: usable = reported memory,
// PyTorch support assumed, no bitsandbytes/flash claims).
func parseStack(rec []string, col map[string]int, line int, g *GPU) error {
	get := func(name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	if s := get("usable_gib"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 {
			return fmt.Errorf("gpus.csv:%d: usable_gib %q: not a positive number", line, s)
		}
		g.UsableGiB = v
	}
	g.UsableSource, g.ComputeCapability, g.StackSource = get("usable_source"), get("compute_capability"), get("stack_source")
	g.PyTorch = get("pytorch")
	switch g.PyTorch {
	case "":
		g.PyTorch = StackYes
	case StackYes, StackLegacy, StackNo:
	default:
		return fmt.Errorf("gpus.csv:%d: pytorch %q: want yes, legacy or no", line, g.PyTorch)
	}
	for name, dst := range map[string]*bool{"bitsandbytes": &g.BitsAndBytes, "flash_attn2": &g.FlashAttn2} {
		switch v := get(name); v {
		case "yes":
			*dst = true
		case "no", "":
		default:
			return fmt.Errorf("gpus.csv:%d: %s %q: want yes or no", line, name, v)
		}
	}
	return nil
}

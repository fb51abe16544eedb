// Package cudo prices Cudo Compute's GPU virtual machines from its public REST API
// (GET https://rest.compute.cudo.org/v1/vms/machine-types, and /v1/vms/gpu-models for
// each GPU's memory). Cudo sells a VM by its parts: the price of one GPU, one vCPU and
// one GiB of RAM per hour in each data centre and machine type, within per-GPU and
// per-GiB vCPU bounds. The adapter prices one shape per GPU count (1, 2, 4, 8, as many
// as one host has free now): 4 vCPUs per GPU and 2 GiB of RAM per vCPU, SkyPilot's
// middle Cudo shape (skypilot-org/skypilot, sky/provision/cudo/cudo_utils.py,
// machine_specs), moved into the machine type's bounds. Instance types are named as the
// embedded snapshot's Cudo rows, "epyc-rome-rtx-a5000_2x8v16gb", so a refresh
// supersedes them.
package cudo

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// Name is the provider name of every Cudo offer.
const Name = "cudo"

// DefaultEndpoint is Cudo Compute's REST API base URL.
const DefaultEndpoint = "https://rest.compute.cudo.org"

// DefaultAPIKeyEnv is the environment variable read when api_key_env is empty.
const DefaultAPIKeyEnv = "CUDO_API_KEY"

// The shape: SkyPilot's Cudo machine_specs run from 2 vCPU / 4 GB to 8 vCPU / 16 GB per
// GPU, always 2 GB per vCPU; 4 vCPU per GPU is their middle.
const (
	vcpusPerGPU = 4
	ramPerVCPU  = 2
)

// counts are the GPU counts priced, as far as one host has them free.
var counts = []int{1, 2, 4, 8}

// Config is the [providers.cudo] section.
type Config struct {
	providers.Common
	// APIKeyEnv names the environment variable holding a Cudo API key. The price
	// calls answer without one; when the variable is set, the key is sent.
	APIKeyEnv string `toml:"api_key_env"`
}

// Descriptor registers the adapter.
var Descriptor = providers.Descriptor{
	Name: Name,
	Description: "Cudo Compute REST API (public; key optional): GPU + vCPU + RAM prices of each data centre's machine types, " +
		"one shape per GPU count up to what a host has free (4 vCPU, 8 GiB per GPU), as <machine-type>_<n>x<v>v<m>gb",
	Options: []providers.Option{
		{Key: "api_key_env", Help: "environment variable that holds a Cudo API key; sent when set (the price list is readable without one)", Default: DefaultAPIKeyEnv},
	},
	Needs:  providers.Needs{Kind: providers.NeedsOptionalKey, KeyEnv: DefaultAPIKeyEnv, Where: "Cudo Compute console, API keys"},
	Config: Config{},
	New:    providers.Constructor(Name, func(c Config) (*Provider, error) { return New(c) }),
}

// Option configures New: httpx.WithHTTPClient, WithClock, WithSleep and WithBackoff.
type Option = httpx.Option

// Provider fetches Cudo prices.
type Provider struct {
	httpx.Keyed
	regions []string // configured filter; nil means all
}

// New checks cfg and returns a provider. The key is read at Fetch time.
func New(cfg Config, opts ...Option) (*Provider, error) {
	k, err := httpx.NewKeyed(Name, cfg.Endpoint, DefaultEndpoint, cfg.APIKeyEnv, DefaultAPIKeyEnv, opts...)
	if err != nil {
		return nil, err
	}
	return &Provider{Keyed: k, regions: providers.RegionFilter(cfg.Regions)}, nil
}

// decimal is Cudo's Decimal message: {"value": "0.52"}.
type decimal struct {
	Value *httpx.Number `json:"value"`
}

// machineType is one element of machineTypes (swagger
// cudoventures/cudo-compute-python-client, swagger/compute.swagger.json).
type machineType struct {
	DataCenterID        string   `json:"dataCenterId"`
	MachineType         string   `json:"machineType"`
	GPUModel            string   `json:"gpuModel"`
	GPUModelID          string   `json:"gpuModelId"`
	MinVcpuPerMemoryGib float64  `json:"minVcpuPerMemoryGib"`
	MaxVcpuPerMemoryGib float64  `json:"maxVcpuPerMemoryGib"`
	MinVcpuPerGPU       float64  `json:"minVcpuPerGpu"`
	MaxVcpuPerGPU       float64  `json:"maxVcpuPerGpu"`
	VcpuPriceHr         *decimal `json:"vcpuPriceHr"`
	MemoryGibPriceHr    *decimal `json:"memoryGibPriceHr"`
	GPUPriceHr          *decimal `json:"gpuPriceHr"`
	MaxVcpuFree         float64  `json:"maxVcpuFree"`
	MaxMemoryGibFree    float64  `json:"maxMemoryGibFree"`
	MaxGPUFree          int      `json:"maxGpuFree"`
	MinVcpu             float64  `json:"minVcpu"`
	MinMemoryGib        float64  `json:"minMemoryGib"`
}

type gpuModel struct {
	ID        string  `json:"id"`
	ModelName string  `json:"modelName"`
	MemoryGib float64 `json:"memoryGib"`
}

// Fetch reads the GPU models and machine types and returns an offer per machine type,
// data centre and GPU count.
func (p *Provider) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "cudo: %w", err)
	}
	key, err := httpx.APIKey(Name, p.KeyEnv, false)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	sentEnv := ""
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
		sentEnv = p.KeyEnv
	}
	now := p.Now().UTC()
	tr := providers.NewTracker(ctx, "requests", 2)
	var models struct {
		GPUModels []gpuModel `json:"gpuModels"`
	}
	var warnings []string
	if err := p.Client.GetJSON(ctx, Name, "gpu models", p.URL("/v1/vms/gpu-models", ""), h, sentEnv, &models); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// The GPU models only add memory figures; the catalog has most of them.
		warnings = append(warnings, fmt.Sprintf("%v; GPU memory taken from the GPU catalog", err))
	}
	tr.Done("gpu models", 0)
	var types struct {
		MachineTypes *[]machineType `json:"machineTypes"`
	}
	if err := p.Client.GetJSON(ctx, Name, "machine types", p.URL("/v1/vms/machine-types", ""), h, sentEnv, &types); err != nil {
		return nil, err
	}
	if types.MachineTypes == nil {
		return nil, httpx.Field(Name, "machine types", "machineTypes")
	}
	mem := map[string]float64{}
	for _, m := range models.GPUModels {
		mem[m.ID] = m.MemoryGib
	}
	snap, err := p.snapshot(*types.MachineTypes, mem, now, warnings)
	if err == nil {
		tr.Done("machine types", len(snap.Offers))
	}
	return snap, err
}

func (p *Provider) snapshot(types []machineType, memByID map[string]float64, now time.Time, warnings []string) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{Regions: slices.Clone(p.regions), Warnings: warnings}
	var offers []pricing.Offer
	listed := 0
	unknown := map[string]bool{}
	for i, mt := range types {
		if mt.GPUModel == "" && mt.GPUModelID == "" {
			continue // a CPU-only machine type
		}
		listed++
		where := fmt.Sprintf("machineTypes[%d] (%s in %s)", i, mt.MachineType, mt.DataCenterID)
		for _, f := range []struct {
			name string
			d    *decimal
		}{{"gpuPriceHr", mt.GPUPriceHr}, {"vcpuPriceHr", mt.VcpuPriceHr}, {"memoryGibPriceHr", mt.MemoryGibPriceHr}} {
			if f.d == nil || f.d.Value == nil {
				return nil, httpx.Field(Name, where, f.name+".value")
			}
		}
		if p.regions != nil && !slices.Contains(p.regions, mt.DataCenterID) {
			continue
		}
		model, gmem, ok := providers.GPUFromName(mt.GPUModel, memByID[mt.GPUModelID])
		if !ok && !unknown[mt.GPUModel] {
			unknown[mt.GPUModel] = true
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("cudo: unknown GPU %q kept as is", mt.GPUModel))
		}
		if gmem == 0 {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("cudo: %s skipped: no memory for GPU %q", where, mt.GPUModel))
			continue
		}
		gpu, vcpu, ram := float64(*mt.GPUPriceHr.Value), float64(*mt.VcpuPriceHr.Value), float64(*mt.MemoryGibPriceHr.Value)
		free := mt.MaxGPUFree
		avail := pricing.AvailableNow
		if free <= 0 {
			free, avail = 1, pricing.SoldOut // nothing free now: keep the one-GPU price, marked
		}
		for _, k := range counts {
			if k > free {
				break
			}
			v, m, ok := shape(mt, k, avail == pricing.AvailableNow)
			if !ok {
				continue // no shape within the bounds and what the host has free
			}
			offers = append(offers, pricing.Offer{
				Provider:     Name,
				Region:       mt.DataCenterID,
				InstanceType: fmt.Sprintf("%s_%dx%gv%ggb", mt.MachineType, k, v, m),
				GPUModel:     model,
				GPUCount:     float64(k),
				GPUMemGiB:    gmem,
				VCPUs:        v,
				RAMGiB:       m,
				Purchase:     pricing.OnDemand,
				PriceUSDHr:   providers.RoundPrice(float64(k)*gpu + v*vcpu + m*ram),
				Currency:     "USD",
				ObservedAt:   now,
				Source:       pricing.SourceAPI,
				Available:    avail,
			})
		}
	}
	return providers.Finish(Name, snap, offers, listed)
}

// shape returns the vCPUs and GiB of RAM of a k-GPU VM: vcpusPerGPU per GPU and
// ramPerVCPU per vCPU, raised to the machine type's minimums and moved into its per-GPU
// and per-GiB vCPU bounds; ok is false when no such shape fits what one host has free (checked only
// when checkFree: a sold-out type is priced as if free).
func shape(mt machineType, k int, checkFree bool) (vcpus, ram float64, ok bool) {
	kf := float64(k)
	vcpus = kf * vcpusPerGPU
	if mt.MinVcpuPerGPU > 0 {
		vcpus = math.Max(vcpus, math.Ceil(kf*mt.MinVcpuPerGPU))
	}
	if mt.MaxVcpuPerGPU > 0 {
		vcpus = math.Min(vcpus, math.Floor(kf*mt.MaxVcpuPerGPU))
	}
	vcpus = math.Max(vcpus, mt.MinVcpu)
	ram = math.Max(vcpus*ramPerVCPU, mt.MinMemoryGib)
	// vcpus / ram within [MinVcpuPerMemoryGib, MaxVcpuPerMemoryGib].
	if mt.MaxVcpuPerMemoryGib > 0 && vcpus/ram > mt.MaxVcpuPerMemoryGib {
		ram = math.Ceil(vcpus / mt.MaxVcpuPerMemoryGib)
	}
	if mt.MinVcpuPerMemoryGib > 0 && vcpus/ram < mt.MinVcpuPerMemoryGib {
		ram = math.Floor(vcpus / mt.MinVcpuPerMemoryGib)
	}
	if vcpus <= 0 || ram <= 0 {
		return 0, 0, false
	}
	if checkFree && ((mt.MaxVcpuFree > 0 && vcpus > mt.MaxVcpuFree) || (mt.MaxMemoryGibFree > 0 && ram > mt.MaxMemoryGibFree)) {
		return 0, 0, false
	}
	return vcpus, ram, true
}

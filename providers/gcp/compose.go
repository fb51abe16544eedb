package gcp

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/billing/apiv1/billingpb"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// SKU kinds a machine price is composed of.
const (
	kindCore  = "core"  // per vCPU-hour, of a machine family ("A2", "N1 Predefined")
	kindRAM   = "ram"   // per GiB-hour, of a machine family
	kindGPU   = "gpu"   // per GPU-hour, of an accelerator type (nvidia-tesla-t4)
	kindSlice = "slice" // per GPU-hour covering the whole VM share (A4 "1 gpu slice")
	kindSSD   = "ssd"   // local SSD, per GiB-month
)

type skuKey struct {
	kind     string
	family   string // machine family SKU name, or accelerator type for GPUs
	region   string
	purchase pricing.Purchase
}

type skuPrice struct {
	usd     float64
	regions int // how many regions the SKU spans: the most specific SKU wins
	desc    string
}

// catalog is the usable part of the Compute Engine SKU list, indexed for composition.
type catalog struct {
	prices map[skuKey]skuPrice
	n      int        // SKUs used
	disks  diskPrices // Persistent Disk prices (storage.go)
}

func newCatalog() *catalog { return &catalog{prices: map[skuKey]skuPrice{}} }

// Descriptions that name SKUs outside on-demand and spot list prices of standard VMs.
var skipWords = []string{"Sole Tenancy", "Reserved", "Premium", "Custom", "Commitment", "DWS", "Calendar", "suspended", "Virtual Workstation", "Extended", "Reservation"}

// gpuSKUs maps a GPU SKU description, squashed (lower case, alphanumerics only, without
// "nvidia", "tesla" and the trailing "gpu"), to the accelerator type it prices.
var gpuSKUs = map[string]string{
	"t4":                  "nvidia-tesla-t4",
	"v100":                "nvidia-tesla-v100",
	"p100":                "nvidia-tesla-p100",
	"p4":                  "nvidia-tesla-p4",
	"k80":                 "nvidia-tesla-k80",
	"a100":                "nvidia-tesla-a100",
	"a10040gb":            "nvidia-tesla-a100",
	"a10080gb":            "nvidia-a100-80gb",
	"h100":                "nvidia-h100-80gb",
	"h10080gb":            "nvidia-h100-80gb",
	"h10080gbmega":        "nvidia-h100-mega-80gb",
	"h10080gbplus":        "nvidia-h100-mega-80gb",
	"h100mega80gb":        "nvidia-h100-mega-80gb",
	"h100mega":            "nvidia-h100-mega-80gb",
	"h200":                "nvidia-h200-141gb",
	"h200141gb":           "nvidia-h200-141gb",
	"l4":                  "nvidia-l4",
	"b200":                "nvidia-b200",
	"rtxpro6000":          "nvidia-rtx-pro-6000",
	"rtxpro6000blackwell": "nvidia-rtx-pro-6000",
}

// Compiled on first use, not in package init, which every picker command runs.
var nonAlnum = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9]+`) })

func squash(s string) string {
	s = nonAlnum().ReplaceAllString(strings.ToLower(s), "")
	s = strings.ReplaceAll(s, "nvidia", "")
	s = strings.ReplaceAll(s, "tesla", "")
	return s
}

// classify reads a SKU description: "A2 Instance Core running in Americas",
// "Spot Preemptible N1 Predefined Instance Ram running in Paris",
// "Nvidia Tesla T4 GPU attached to Spot Preemptible VMs running in Americas",
// "A4 Nvidia B200 (1 gpu slice) running in Belgium", "SSD backed Local Storage".
func classify(desc string) (kind, family string, ok bool) {
	for _, w := range skipWords {
		if strings.Contains(desc, w) {
			return "", "", false
		}
	}
	d := desc
	if i := strings.Index(d, " running in "); i >= 0 {
		d = d[:i]
	}
	d = strings.TrimPrefix(d, "Spot Preemptible ")
	d = strings.TrimPrefix(d, "Preemptible ")
	d = strings.TrimSuffix(d, " attached to Spot Preemptible VMs")
	d = strings.TrimSuffix(d, " attached to Preemptible VMs")
	d = strings.TrimSpace(d)
	switch {
	case strings.HasSuffix(d, " Instance Core"):
		return kindCore, strings.TrimSuffix(d, " Instance Core"), true
	case strings.HasSuffix(d, " Instance Ram"):
		return kindRAM, strings.TrimSuffix(d, " Instance Ram"), true
	case d == "SSD backed Local Storage":
		return kindSSD, "", true
	case strings.Contains(d, "(1 gpu slice)"):
		fam, _, _ := strings.Cut(d, " ")
		return kindSlice, fam, true
	case strings.HasSuffix(d, " GPU"):
		if acc, ok := gpuSKUs[strings.TrimSuffix(squash(d), "gpu")]; ok {
			return kindGPU, acc, true
		}
	}
	return "", "", false
}

// unitFor is the usage unit each kind must be priced in.
var unitFor = map[string]string{kindCore: "h", kindRAM: "GiBy.h", kindGPU: "h", kindSlice: "h", kindSSD: "GiBy.mo"}

// skuUSD is the SKU's latest price per unit in USD when it is priced per unit: the first
// tier with a positive price (a 0-priced first tier, free usage, would price a machine
// at 0, which an offer must never be); false for another unit or currency, or no price.
func skuUSD(s *billingpb.Sku, unit string) (float64, bool) {
	infos := s.GetPricingInfo()
	if len(infos) == 0 {
		return 0, false
	}
	expr := infos[len(infos)-1].GetPricingExpression() // the latest
	if expr.GetUsageUnit() != unit {
		return 0, false
	}
	for _, r := range expr.GetTieredRates() {
		m := r.GetUnitPrice()
		if m.GetCurrencyCode() != "" && m.GetCurrencyCode() != "USD" {
			return 0, false
		}
		if v := float64(m.GetUnits()) + float64(m.GetNanos())/1e9; v > 0 {
			return v, true
		}
	}
	return 0, false
}

func (c *catalog) add(s *billingpb.Sku) {
	kind, family, ok := classify(s.GetDescription())
	if !ok || s.GetCategory().GetResourceFamily() != "Compute" && s.GetCategory().GetResourceFamily() != "Storage" {
		return
	}
	var purchase pricing.Purchase
	switch s.GetCategory().GetUsageType() {
	case "OnDemand":
		purchase = pricing.OnDemand
	case "Preemptible":
		purchase = pricing.Spot
	default:
		return
	}
	usd, ok := skuUSD(s, unitFor[kind])
	if !ok {
		return
	}
	c.n++
	regions := s.GetServiceRegions()
	for _, region := range regions {
		k := skuKey{kind, family, region, purchase}
		if old, ok := c.prices[k]; ok && old.regions <= len(regions) {
			continue
		}
		c.prices[k] = skuPrice{usd: usd, regions: len(regions), desc: s.GetDescription()}
	}
}

func (c *catalog) price(kind, family, region string, p pricing.Purchase) (float64, bool) {
	v, ok := c.prices[skuKey{kind, family, region, p}]
	return v.usd, ok
}

// familyOf maps a machine type to the family name its SKUs carry.
// a3-megagpu is "A3Plus" (gpuhunt); "A3Ultra" and "G4" follow the pattern and are
// unverified: a machine whose SKUs are absent is skipped with a warning, never priced 0.
func familyOf(machine string) (family string, slice bool, ok bool) {
	switch {
	case strings.HasPrefix(machine, "a2-"):
		return "A2", false, true
	case strings.HasPrefix(machine, "a3-megagpu"):
		return "A3Plus", false, true
	case strings.HasPrefix(machine, "a3-ultragpu"):
		return "A3Ultra", false, true
	case strings.HasPrefix(machine, "a3-"):
		return "A3", false, true
	case strings.HasPrefix(machine, "a4-"):
		return "A4", true, true
	case strings.HasPrefix(machine, "g2-"):
		return "G2", false, true
	case strings.HasPrefix(machine, "g4-"):
		return "G4", false, true
	case strings.HasPrefix(machine, "n1-standard-"):
		return "N1 Predefined", false, true
	}
	return "", false, false
}

// localSSDGiB is the local SSD that comes with a machine type and is billed with it
// (GCP machine-family docs: 375 GiB disks, 1-32 per machine). The composed price
// includes it; see README.md.
var localSSDGiB = map[string]float64{
	"a2-ultragpu-1g": 375, "a2-ultragpu-2g": 750, "a2-ultragpu-4g": 1500, "a2-ultragpu-8g": 3000,
	"a3-highgpu-1g": 750, "a3-highgpu-2g": 1500, "a3-highgpu-4g": 3000, "a3-highgpu-8g": 6000,
	"a3-edgegpu-8g": 6000, "a3-megagpu-8g": 6000, "a3-ultragpu-8g": 12000,
}

// spotOnly machine types have no on-demand capacity (only spot, flex-start or
// reservations), so no on-demand offer is made for them even where a SKU exists.
func spotOnly(machine string) bool {
	switch {
	case machine == "a3-highgpu-1g", machine == "a3-highgpu-2g", machine == "a3-highgpu-4g":
		return true
	case strings.HasPrefix(machine, "a3-ultragpu-"), strings.HasPrefix(machine, "a4-"):
		return true
	}
	return false
}

// hoursPerMonth converts GiB-month SKUs to hourly prices (Google bills 730 h a month).
const hoursPerMonth = 730

// attachable are the GPUs attached to n1-standard hosts, with the host sizes offered per
// GPU count: 1 GPU on n1-standard-4 and -8, k GPUs on n1-standard-8k (within every
// GPU's per-count vCPU limit).
var attachable = map[string]bool{"nvidia-tesla-t4": true, "nvidia-tesla-v100": true, "nvidia-tesla-p100": true, "nvidia-tesla-p4": true}

func n1Hosts(k int32) []string {
	if k == 1 {
		return []string{"n1-standard-4", "n1-standard-8"}
	}
	return []string{fmt.Sprintf("n1-standard-%d", 8*k)}
}

// regionOf is a zone's region: the zone without its last "-x".
func regionOf(zone string) string {
	if i := strings.LastIndexByte(zone, '-'); i > 0 {
		return zone[:i]
	}
	return zone
}

// shape is one priceable instance in a region.
type shape struct {
	region, instanceType, family string
	slice                        bool
	vcpus, ramGiB                float64
	accel                        string
	gpus                         int32
	ssdGiB                       float64
}

// compose builds the offers: one per (region, instance type, purchase), priced
// vCPUs × core SKU + RAM GiB × RAM SKU + GPUs × GPU SKU (+ bundled local SSD), or
// GPUs × slice SKU for A4.
func compose(machines []zoneMachine, accels []zoneAccel, cat *catalog, regions []string, now time.Time) *providers.Snapshot {
	want := func(region string) bool { return len(regions) == 0 || slices.Contains(regions, region) }
	shapes := map[[2]string]shape{}
	hosts := map[string]map[string]zoneMachine{} // zone -> name -> n1 host
	for _, m := range machines {
		if m.deprecd || !want(regionOf(m.zone)) {
			continue
		}
		family, slice, ok := familyOf(m.name)
		if !ok {
			continue
		}
		if family == "N1 Predefined" {
			if hosts[m.zone] == nil {
				hosts[m.zone] = map[string]zoneMachine{}
			}
			hosts[m.zone][m.name] = m
			continue
		}
		if m.nAccel <= 0 || m.accel == "" || strings.HasSuffix(m.accel, "-vws") {
			continue
		}
		region := regionOf(m.zone)
		shapes[[2]string{region, m.name}] = shape{region: region, instanceType: m.name, family: family, slice: slice,
			vcpus: float64(m.vcpus), ramGiB: float64(m.memMiB) / 1024, accel: m.accel, gpus: m.nAccel, ssdGiB: localSSDGiB[m.name]}
	}
	for _, a := range accels {
		if !attachable[a.name] || !want(regionOf(a.zone)) {
			continue
		}
		region := regionOf(a.zone)
		for _, k := range []int32{1, 2, 4, 8} {
			if k > a.maxCards {
				break
			}
			for _, h := range n1Hosts(k) {
				host, ok := hosts[a.zone][h]
				if !ok {
					continue
				}
				name := fmt.Sprintf("%s+%sx%d", h, a.name, k)
				shapes[[2]string{region, name}] = shape{region: region, instanceType: name, family: "N1 Predefined",
					vcpus: float64(host.vcpus), ramGiB: float64(host.memMiB) / 1024, accel: a.name, gpus: k}
			}
		}
	}

	snap := &providers.Snapshot{}
	skipped := map[string][]string{} // warning -> regions
	keys := make([][2]string, 0, len(shapes))
	for k := range shapes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	unknown := map[string]bool{}
	for _, k := range keys {
		s := shapes[k]
		model, known := pricing.NormalizeGPU(s.accel, 0)
		g, inCatalog := pricing.LookupGPU(model)
		if !known || !inCatalog {
			if !unknown[s.accel] {
				unknown[s.accel] = true
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("gcp: accelerator %q is not in the GPU catalog; its machines (e.g. %s) are skipped: GCP reports no GPU memory", s.accel, s.instanceType))
			}
			continue
		}
		for _, p := range []pricing.Purchase{pricing.OnDemand, pricing.Spot} {
			if p == pricing.OnDemand && spotOnly(s.instanceType) {
				continue
			}
			usd, missing := s.price(cat, p)
			if missing != "" {
				w := fmt.Sprintf("gcp: %s %s skipped: no %s", s.instanceType, p, missing)
				skipped[w] = append(skipped[w], s.region)
				continue
			}
			snap.Offers = append(snap.Offers, pricing.Offer{
				Provider: Name, Region: s.region, InstanceType: s.instanceType,
				GPUModel: g.Model, GPUCount: float64(s.gpus), GPUMemGiB: g.MemGB,
				VCPUs: s.vcpus, RAMGiB: math.Round(s.ramGiB*100) / 100,
				Purchase: p, PriceUSDHr: math.Round(usd*1e6) / 1e6, Currency: "USD", ObservedAt: now, Source: pricing.SourceAPI,
			})
		}
	}
	for _, w := range sortedKeys(skipped) {
		snap.Warnings = append(snap.Warnings, fmt.Sprintf("%s in %s", w, strings.Join(skipped[w], ", ")))
	}
	return snap
}

// price composes the shape's hourly price; missing names the first absent SKU.
func (s shape) price(cat *catalog, p pricing.Purchase) (usd float64, missing string) {
	if s.slice {
		v, ok := cat.price(kindSlice, s.family, s.region, p)
		if !ok {
			return 0, fmt.Sprintf("%q GPU slice SKU", s.family)
		}
		return v * float64(s.gpus), ""
	}
	core, ok := cat.price(kindCore, s.family, s.region, p)
	if !ok {
		return 0, fmt.Sprintf("%q Instance Core SKU", s.family)
	}
	ram, ok := cat.price(kindRAM, s.family, s.region, p)
	if !ok {
		return 0, fmt.Sprintf("%q Instance Ram SKU", s.family)
	}
	gpu, ok := cat.price(kindGPU, s.accel, s.region, p)
	if !ok {
		return 0, fmt.Sprintf("GPU SKU for %s", s.accel)
	}
	usd = s.vcpus*core + s.ramGiB*ram + float64(s.gpus)*gpu
	if s.ssdGiB > 0 {
		ssd, ok := cat.price(kindSSD, "", s.region, p)
		if !ok {
			return 0, "local SSD SKU"
		}
		usd += s.ssdGiB * ssd / hoursPerMonth
	}
	return usd, ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

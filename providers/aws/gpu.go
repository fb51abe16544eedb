package aws

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// ec2API is the EC2 methods the adapter uses, with the SDK's signatures, so the SDK's
// paginators accept fakes.
type ec2API interface {
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

// gpuFacts is what an offer needs besides its price.
type gpuFacts struct {
	model  string  // canonical where known
	count  float64 // fractional for GPU slices
	memGiB float64 // per GPU, or of the slice for a fractional type
	vcpus  float64
	ramGiB float64
}

func (f gpuFacts) offer(region, typ string, p pricing.Purchase, price float64, now time.Time) pricing.Offer {
	return pricing.Offer{
		Provider: Name, Region: region, InstanceType: typ,
		GPUModel: f.model, GPUCount: f.count, GPUMemGiB: f.memGiB,
		VCPUs: f.vcpus, RAMGiB: f.ramGiB,
		Purchase: p, PriceUSDHr: price, Currency: "USD", ObservedAt: now, Source: pricing.SourceAPI,
	}
}

// withAttributes fills vCPUs and RAM from the price list where EC2 gave none.
func (f gpuFacts) withAttributes(a *itemAttributes) gpuFacts {
	if f.vcpus == 0 {
		if v := parseGiB(a.VCPU); v > 0 {
			f.vcpus = v
		}
	}
	if f.ramGiB == 0 {
		f.ramGiB = parseGiB(a.Memory)
	}
	return f
}

// Overrides for AWS's known bad GPU data. Each is documented in README.md.
var (
	// familyGPU names the GPU of families whose reported name is not a model: p5en
	// reports its H200s as just "NVIDIA".
	familyGPU = map[string]string{
		"p5en": "H200",
	}
	// missingGPU gives the GPUs of types DescribeInstanceTypes has reported without
	// GpuInfo (p4de.24xlarge during its preview).
	missingGPU = map[string]struct {
		model string
		count float64
	}{
		"p4de.24xlarge": {"A100-80GB", 8},
	}
	// fractionalGPU is the share of one GPU each sliced type gets (AWS G6f/Gr6f docs:
	// 1/8, 1/8, 1/4, 1/2 and 1/2 of an L4), used when GpuInfo carries no
	// GpuPartitionSize. Such offers keep the whole GPU's memory with a fractional count.
	fractionalGPU = map[string]float64{
		"g6f.large":    0.125,
		"g6f.xlarge":   0.125,
		"g6f.2xlarge":  0.25,
		"g6f.4xlarge":  0.5,
		"gr6f.4xlarge": 0.5,
	}
)

// factsFromEC2 reads one DescribeInstanceTypes item. ok is false for types without a
// GPU; warn names data that was overridden or left unknown.
func factsFromEC2(it ec2types.InstanceTypeInfo) (f gpuFacts, warn string, ok bool) {
	typ := string(it.InstanceType)
	fam, _, _ := strings.Cut(typ, ".")
	if it.VCpuInfo != nil && it.VCpuInfo.DefaultVCpus != nil {
		f.vcpus = float64(*it.VCpuInfo.DefaultVCpus)
	}
	if it.MemoryInfo != nil && it.MemoryInfo.SizeInMiB != nil {
		f.ramGiB = math.Round(float64(*it.MemoryInfo.SizeInMiB)/1024*100) / 100
	}
	var name string
	var count, devMiB, partition float64
	if it.GpuInfo != nil {
		for _, g := range it.GpuInfo.Gpus {
			if name == "" {
				name = awssdk.ToString(g.Name)
				if g.MemoryInfo != nil {
					devMiB = float64(awssdk.ToInt32(g.MemoryInfo.SizeInMiB))
				}
				if g.GpuPartitionSize != nil {
					partition = *g.GpuPartitionSize
				}
			}
			count += float64(awssdk.ToInt32(g.Count))
		}
		// TotalGpuMemoryInMiB is sometimes 0 or absent: the per-device size is used, and
		// the total only to recover a missing per-device size.
		if devMiB == 0 && count > 0 {
			devMiB = float64(awssdk.ToInt32(it.GpuInfo.TotalGpuMemoryInMiB)) / count
		}
	}
	if name == "" || count == 0 {
		m, known := missingGPU[typ]
		if !known {
			return f, "", false
		}
		name, count = m.model, m.count
		warn = fmt.Sprintf("aws: %s: no GpuInfo from EC2; assumed %v x %s", typ, m.count, m.model)
	}
	memGiB := devMiB / 1024
	model, known := pricing.NormalizeGPU(name, memGiB)
	if !known {
		if m, ok := familyGPU[fam]; ok {
			warn = fmt.Sprintf("aws: %s: EC2 reports GPU %q; assumed %s", typ, name, m)
			model, known = m, true
		}
	}
	g, inCatalog := pricing.LookupGPU(model)
	switch {
	case !known || !inCatalog:
		warn = fmt.Sprintf("aws: %s: unknown GPU %q kept as reported", typ, name)
	case memGiB == 0 || math.Abs(memGiB-g.MemGB) <= 0.1*g.MemGB:
		// EC2 reports usable memory after ECC and driver reservations (L4: 22888 MiB
		// = 22.35 GiB; H100: 81559 MiB); the datasheet figure is the one offers
		// compare on.
		memGiB = g.MemGB
	}
	frac := 0.0
	switch {
	case partition > 0 && partition < 1:
		frac = partition
	case fractionalGPU[typ] > 0:
		frac = fractionalGPU[typ]
	}
	if frac > 0 {
		// A slice keeps the whole GPU's memory with a fractional count, as the embedded
		// snapshot does; the slice holds count × memory (pricing.Offer.MemPerDeviceGiB).
		count = frac
		if inCatalog {
			memGiB = g.MemGB
		} else if devMiB > 0 && devMiB/1024 < memGiB*0.9 {
			memGiB = devMiB / 1024 / frac // the device reported the slice
		}
	}
	f.model, f.count, f.memGiB = model, count, math.Round(memGiB*100)/100
	return f, warn, f.memGiB > 0
}

// describeBatch is how many instance types one DescribeInstanceTypes call names in its
// instance-type filter.
const describeBatch = 100

// factsCache holds the GPU facts of every instance type one fetch has described. A
// type's facts are the type's, not the region's (DescribeInstanceTypes describes the
// type; which regions offer it is DescribeInstanceTypeOfferings' answer), so each type
// is described once per fetch instead of once per region: at 300 regions the SDK's XML
// decoding of the same facts again and again was a quarter of a 90k-offer refresh's CPU
// (issue 17).
type factsCache struct {
	mu sync.Mutex
	m  map[string]cachedFacts
}

// cachedFacts is one described type: its facts, whether it has a GPU at all, and the
// warning its description gave ("" for none), which every region offering it repeats.
type cachedFacts struct {
	f    gpuFacts
	ok   bool
	warn string
}

func newFactsCache() *factsCache { return &factsCache{m: map[string]cachedFacts{}} }

// missing returns the types not described yet.
func (c *factsCache) missing(types []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, t := range types {
		if _, ok := c.m[t]; !ok {
			out = append(out, t)
		}
	}
	return out
}

func (c *factsCache) put(typ string, cf cachedFacts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[typ] = cf
}

// facts returns the GPU facts of those of types that have a GPU, and the warnings of
// types, sorted and without repeats: what describing types in this region would give,
// whichever region described them.
func (c *factsCache) facts(types []string) (map[string]gpuFacts, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]gpuFacts, len(types))
	var warns []string
	for _, t := range types {
		cf := c.m[t]
		if cf.ok {
			out[t] = cf.f
		}
		if cf.warn != "" {
			warns = append(warns, cf.warn)
		}
	}
	slices.Sort(warns)
	return out, slices.Compact(warns)
}

// gpuFamilyFilter is the instance-type filter with values: the g* and p* families (gr*
// included) or names of such types; isGPUType checks each answer again.
func gpuFamilyFilter(values ...string) []ec2types.Filter {
	return []ec2types.Filter{{Name: awssdk.String("instance-type"), Values: values}}
}

// describeGPUInstanceTypes returns the GPU facts of the region's g*/p* instance types:
// the types the region offers (DescribeInstanceTypeOfferings, every page), with facts
// from cache, describing (DescribeInstanceTypes, named in batches of describeBatch)
// only the types no region of this fetch has described yet. The warnings are those of
// the region's types, whichever region described them.
func describeGPUInstanceTypes(ctx context.Context, c ec2API, cache *factsCache) (map[string]gpuFacts, []string, error) {
	offered, err := offeredGPUTypes(ctx, c)
	if isUnauthorized(err) {
		// A policy written for the adapter before it called
		// DescribeInstanceTypeOfferings: list and describe the region's g*/p* types in
		// one go, as it used to (DescribeInstanceTypes lists only the region's types).
		described, err := describe(ctx, c, "g*", "p*")
		if err != nil {
			return nil, nil, err
		}
		for t, cf := range described {
			cache.put(t, cf)
		}
		facts, warns := cache.facts(sortedKeys(described))
		return facts, warns, nil
	}
	if err != nil {
		return nil, nil, err
	}
	unknown := cache.missing(offered)
	for start := 0; start < len(unknown); start += describeBatch {
		batch := unknown[start:min(start+describeBatch, len(unknown))]
		described, err := describe(ctx, c, batch...)
		if err != nil {
			return nil, nil, err
		}
		// A type asked for and not described has no facts (and is not asked again).
		for _, t := range batch {
			cache.put(t, described[t])
		}
	}
	facts, warns := cache.facts(offered)
	return facts, warns, nil
}

// describe runs DescribeInstanceTypes with the instance-type filter values (names or
// wildcards), every page, and returns the GPU types it describes.
func describe(ctx context.Context, c ec2API, values ...string) (map[string]cachedFacts, error) {
	in := &ec2.DescribeInstanceTypesInput{MaxResults: awssdk.Int32(100), Filters: gpuFamilyFilter(values...)}
	described := map[string]cachedFacts{}
	pg := ec2.NewDescribeInstanceTypesPaginator(c, in, func(o *ec2.DescribeInstanceTypesPaginatorOptions) { o.StopOnDuplicateToken = true })
	var guard providers.PageGuard // StopOnDuplicateToken misses A, B, A
	for pg.HasMorePages() {
		out, err := pg.NextPage(ctx)
		if err == nil {
			err = guard.Next("DescribeInstanceTypes", awssdk.ToString(out.NextToken))
		}
		if err != nil {
			return nil, fmt.Errorf("describe instance types: %w", err)
		}
		for _, it := range out.InstanceTypes {
			typ := string(it.InstanceType)
			if !isGPUType(typ) {
				continue
			}
			f, warn, ok := factsFromEC2(it)
			described[typ] = cachedFacts{f, ok, warn}
		}
	}
	return described, nil
}

// isUnauthorized reports an EC2 UnauthorizedOperation answer: the credentials' policy
// does not allow the action.
func isUnauthorized(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "UnauthorizedOperation"
}

// offeredGPUTypes lists the g*/p* instance types the region offers, sorted.
func offeredGPUTypes(ctx context.Context, c ec2API) ([]string, error) {
	in := &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeRegion,
		MaxResults:   awssdk.Int32(1000),
		Filters:      gpuFamilyFilter("g*", "p*"),
	}
	seen := map[string]bool{}
	pg := ec2.NewDescribeInstanceTypeOfferingsPaginator(c, in, func(o *ec2.DescribeInstanceTypeOfferingsPaginatorOptions) { o.StopOnDuplicateToken = true })
	var guard providers.PageGuard
	for pg.HasMorePages() {
		out, err := pg.NextPage(ctx)
		if err == nil {
			err = guard.Next("DescribeInstanceTypeOfferings", awssdk.ToString(out.NextToken))
		}
		if err != nil {
			return nil, fmt.Errorf("describe instance type offerings: %w", err)
		}
		for _, o := range out.InstanceTypeOfferings {
			if t := string(o.InstanceType); isGPUType(t) {
				seen[t] = true
			}
		}
	}
	return sortedKeys(seen), nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

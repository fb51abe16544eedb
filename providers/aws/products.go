package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// getProductsAPI is the one Pricing method the adapter uses, with the SDK's signature, so
// the SDK's paginator accepts a fake (karpenter's pattern).
type getProductsAPI interface {
	GetProducts(ctx context.Context, in *awspricing.GetProductsInput, optFns ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error)
}

// productFilters are the TERM_MATCH filters of every GetProducts call: one row per
// instance type, Linux, shared tenancy, no pre-installed software or licence, capacity
// actually used (not a capacity reservation). The server is trusted with none of them:
// every decoded item is checked again in accept.
func productFilters(region string) []pricingtypes.Filter {
	f := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: awssdk.String(field), Value: awssdk.String(value)}
	}
	return []pricingtypes.Filter{
		f("regionCode", region),
		f("operatingSystem", "Linux"),
		f("tenancy", "Shared"),
		f("preInstalledSw", "NA"),
		f("capacitystatus", "Used"),
		f("licenseModel", "No License required"),
		f("productFamily", "Compute Instance"),
	}
}

// getProducts streams every page of GetProducts for one region through fn, one decoded
// PriceList item at a time, and calls page (when set) after each page's items, for the
// refresh's progress. Only one page is held at once: peak memory is bounded by a page
// (at most 100 items), not by the catalog.
func getProducts(ctx context.Context, c getProductsAPI, region string, pageSize int32, fn func(*priceItem), page func()) error {
	in := &awspricing.GetProductsInput{
		ServiceCode:   awssdk.String("AmazonEC2"),
		FormatVersion: awssdk.String("aws_v1"),
		Filters:       productFilters(region),
		MaxResults:    awssdk.Int32(pageSize),
	}
	return getProductsPages(ctx, c, in, "GetProducts "+region, fn, page)
}

// getProductsPages runs GetProducts query in over every page, decoding each PriceList
// item into fn and calling page (when set) after each page; where names the list for the
// page guard's error.
func getProductsPages(ctx context.Context, c getProductsAPI, in *awspricing.GetProductsInput, where string, fn func(*priceItem), page ...func()) error {
	pg := awspricing.NewGetProductsPaginator(c, in, func(o *awspricing.GetProductsPaginatorOptions) { o.StopOnDuplicateToken = true })
	var item priceItem
	var guard providers.PageGuard // StopOnDuplicateToken misses A, B, A
	for pg.HasMorePages() {
		out, err := pg.NextPage(ctx)
		if err != nil {
			return err
		}
		if err := guard.Next(where, awssdk.ToString(out.NextToken)); err != nil {
			return err
		}
		for i, s := range out.PriceList {
			item = priceItem{}
			// Each PriceList element is itself a JSON document encoded as a string.
			// Decoded in place: json.Unmarshal neither changes nor keeps its input, and
			// copying each item ([]byte(s)) was most of the ingest's allocation.
			if err := json.Unmarshal(unsafe.Slice(unsafe.StringData(s), len(s)), &item); err != nil {
				return fmt.Errorf("decode price list item %d: %w", i, err)
			}
			fn(&item)
		}
		for _, p := range page {
			if p != nil {
				p()
			}
		}
	}
	return nil
}

// priceItem is the part of a decoded PriceList element the adapter reads.
type priceItem struct {
	Product struct {
		ProductFamily string         `json:"productFamily"`
		SKU           string         `json:"sku"`
		Attributes    itemAttributes `json:"attributes"`
	} `json:"product"`
	Terms struct {
		// Keyed "<SKU>.<OfferTermCode>" in GetProducts (the bulk file has one more level).
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string `json:"unit"`
				PricePerUnit struct {
					USD string `json:"USD"`
				} `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

type itemAttributes struct {
	InstanceType    string `json:"instanceType"`
	RegionCode      string `json:"regionCode"`
	OperatingSystem string `json:"operatingSystem"`
	Tenancy         string `json:"tenancy"`
	PreInstalledSw  string `json:"preInstalledSw"`
	CapacityStatus  string `json:"capacitystatus"`
	LicenseModel    string `json:"licenseModel"`
	MarketOption    string `json:"marketoption"`
	Operation       string `json:"operation"`
	UsageType       string `json:"usagetype"`
	VCPU            string `json:"vcpu"`
	Memory          string `json:"memory"`
	GPU             string `json:"gpu"`
	VolumeAPIName   string `json:"volumeApiName"` // EBS storage products (market.go)
}

// gpuFamilyRe matches the GPU instance families: g*, gr* (graphics), p* (e.g. g6,
// g4dn, gr6f, p4d, p6-b200); the family is the part of the type before the dot.
// Compiled on first use, not in package init, which every picker command runs.
var gpuFamilyRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:g|gr|p)\d`) })

func isGPUType(instanceType string) bool {
	fam, _, ok := strings.Cut(instanceType, ".")
	return ok && gpuFamilyRe().MatchString(fam)
}

// reject says why an item is not a plain Linux on-demand row of a GPU type in region,
// "" when it is one. Decoys a server may return despite the filters: Windows, RHEL,
// SUSE and other operating systems; BYOL; SQL or other pre-installed software;
// Dedicated or Host tenancy; capacity-reservation rows.
func (it *priceItem) reject(region string) string {
	a := &it.Product.Attributes
	switch {
	case it.Product.ProductFamily != "Compute Instance":
		return "product family " + it.Product.ProductFamily
	case !isGPUType(a.InstanceType):
		return "not a GPU family"
	case a.RegionCode != region:
		return "region " + a.RegionCode
	case a.OperatingSystem != "Linux":
		return "operating system " + a.OperatingSystem
	case a.Tenancy != "Shared":
		return "tenancy " + a.Tenancy
	case a.PreInstalledSw != "NA":
		return "pre-installed software " + a.PreInstalledSw
	case a.CapacityStatus != "Used":
		return "capacity status " + a.CapacityStatus
	case a.LicenseModel != "No License required":
		return "licence model " + a.LicenseModel
	case a.MarketOption != "" && a.MarketOption != "OnDemand":
		return "market option " + a.MarketOption
	// Plain Linux is operation RunInstances; RHEL, SUSE, Windows and SQL add a code.
	case a.Operation != "" && a.Operation != "RunInstances":
		return "operation " + a.Operation
	// Shared on-demand usage is BoxUsage; Dedicated/Host/Reservation usage types differ.
	case a.UsageType != "" && !strings.Contains(a.UsageType, "BoxUsage"):
		return "usage type " + a.UsageType
	}
	return ""
}

// hourlyUSD is the item's OnDemand price per hour, 0 when it has none.
func (it *priceItem) hourlyUSD() float64 {
	for _, term := range it.Terms.OnDemand {
		for _, d := range term.PriceDimensions {
			if d.Unit != "Hrs" {
				continue
			}
			if v, err := strconv.ParseFloat(d.PricePerUnit.USD, 64); err == nil && v > 0 {
				return v
			}
		}
	}
	return 0
}

// ingester turns one region's stream of price items into on-demand offers.
type ingester struct {
	region  string
	facts   map[string]gpuFacts
	now     time.Time
	offers  []pricing.Offer
	seen    map[string]bool
	noFacts map[string]bool
	dups    map[string]bool
	noPrice map[string]bool
	// rejected counts decoys by reason, for tests and debug logs.
	rejected int
}

func newIngester(region string, facts map[string]gpuFacts, now time.Time) *ingester {
	// One offer per priced type at most: sized so that growing never holds two copies.
	return &ingester{region: region, facts: facts, now: now, offers: make([]pricing.Offer, 0, len(facts)), seen: map[string]bool{},
		noFacts: map[string]bool{}, dups: map[string]bool{}, noPrice: map[string]bool{}}
}

func (g *ingester) add(it *priceItem) {
	if it.reject(g.region) != "" {
		g.rejected++
		return
	}
	typ := it.Product.Attributes.InstanceType
	price := it.hourlyUSD()
	if price <= 0 {
		g.noPrice[typ] = true
		return
	}
	if g.seen[typ] {
		g.dups[typ] = true
		return
	}
	f, ok := g.facts[typ]
	if !ok {
		g.noFacts[typ] = true
		return
	}
	g.seen[typ] = true
	f = f.withAttributes(&it.Product.Attributes)
	g.offers = append(g.offers, f.offer(g.region, typ, pricing.OnDemand, price, g.now))
}

func (g *ingester) warnings() []string {
	var w []string
	add := func(set map[string]bool, what string) {
		for _, t := range sortedKeys(set) {
			w = append(w, fmt.Sprintf("aws: %s %s: %s", g.region, t, what))
		}
	}
	add(g.noFacts, "priced but DescribeInstanceTypes has no GPU facts for it; skipped")
	add(g.dups, "several on-demand Linux rows; kept the first")
	add(g.noPrice, "no positive hourly OnDemand price; skipped")
	return w
}

// parseGiB reads the price list's memory attribute, "244 GiB" (or "0.5 GiB").
func parseGiB(s string) float64 {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "GiB"))
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		return 0
	}
	return v
}

package aws

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"golang.org/x/sync/errgroup"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
)

// The all-in bill's AWS data (issue 24): the Spot Instance Advisor's interruption band
// per region and GPU type (a public file, no credentials), the Spot Placement Score of
// each GPU type per region (EC2 GetSpotPlacementScores, signed), and the EBS gp3 price
// per region (Price List GetProducts). Read when the refresh asks (providers.
// WithMarketRead), at most daily.

// SpotAdvisorURL is the Spot Instance Advisor's data file (the reference README,
// section 23: plain JSON, no auth, ~0.9 MB). With an endpoint configured the file is
// read from the endpoint's /spot-advisor-data.json instead, as every other call goes
// there.
const SpotAdvisorURL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"

// spotAdvisorFile is the part of spot-advisor-data.json the adapter reads.
type spotAdvisorFile struct {
	Ranges []struct {
		Index int     `json:"index"`
		Label string  `json:"label"`
		Max   float64 `json:"max"`
	} `json:"ranges"`
	SpotAdvisor map[string]map[string]map[string]struct {
		Savings int `json:"s"`
		Range   int `json:"r"`
	} `json:"spot_advisor"`
}

// bands turns the file into bands for the GPU types of regions (Linux): a band runs from
// the previous range's max to its own ("5-10%" is max 11, after "<5%"'s 5), per month,
// the file's own figures.
func (f *spotAdvisorFile) bands(regions []string, now time.Time) ([]pricing.SpotBand, error) {
	type rng struct {
		lo, hi float64
		label  string
	}
	ranges := map[int]rng{}
	sorted := slices.Clone(f.Ranges)
	slices.SortFunc(sorted, func(a, b struct {
		Index int     `json:"index"`
		Label string  `json:"label"`
		Max   float64 `json:"max"`
	}) int {
		return a.Index - b.Index
	})
	lo := 0.0
	for _, r := range sorted {
		if r.Max < lo || r.Max > 100 {
			return nil, fmt.Errorf("spot advisor range %d %q: max %v after %v", r.Index, r.Label, r.Max, lo)
		}
		ranges[r.Index] = rng{lo, r.Max, r.Label}
		lo = r.Max
	}
	if len(ranges) == 0 {
		return nil, fmt.Errorf("spot advisor file: no ranges")
	}
	var out []pricing.SpotBand
	for _, region := range regions {
		types := f.SpotAdvisor[region]["Linux"]
		names := make([]string, 0, len(types))
		for t := range types {
			if isGPUType(t) {
				names = append(names, t)
			}
		}
		slices.Sort(names)
		for _, t := range names {
			r, ok := ranges[types[t].Range]
			if !ok {
				return nil, fmt.Errorf("spot advisor %s %s: range %d not in the file's ranges", region, t, types[t].Range)
			}
			out = append(out, pricing.SpotBand{Provider: Name, Region: region, InstanceType: t, LowPct: r.lo, HighPct: r.hi,
				PeriodHours: pricing.HoursPerMonth, Label: r.label, Source: "AWS Spot Instance Advisor (spot-advisor-data.json): instances interrupted in the trailing month", ObservedAt: now})
		}
	}
	return out, nil
}

// readSpotAdvisor fetches and decodes the advisor file: one unsigned GET.
func (p *Provider) readSpotAdvisor(ctx context.Context, now time.Time) ([]pricing.SpotBand, error) {
	url := SpotAdvisorURL
	if p.cfg.Endpoint != "" {
		url = strings.TrimSuffix(p.cfg.Endpoint, "/") + "/spot-advisor-data.json"
	}
	c := httpx.NewClient("", httpx.Apply(httpx.WithHTTPClient(p.opts.httpClient)))
	var f spotAdvisorFile
	if err := c.GetJSON(ctx, Name, "spot advisor", url, http.Header{}, "", &f); err != nil {
		return nil, err
	}
	return f.bands(p.regions, now)
}

// placementAPI is the EC2 call the placement scores make.
type placementAPI interface {
	GetSpotPlacementScores(ctx context.Context, in *ec2.GetSpotPlacementScoresInput, optFns ...func(*ec2.Options)) (*ec2.GetSpotPlacementScoresOutput, error)
}

// placementScores asks, for each GPU type, how likely a one-instance spot request is to
// succeed in each configured region (one call per type, every region in it: a request
// naming several types scores them together, so types are asked one at a time). It stops
// at the first failure (AWS limits how many configurations an account may score a day),
// returning the scores so far; n counts the calls.
func placementScores(ctx context.Context, c placementAPI, types, regions []string) (map[regionType]int, int, error) {
	out := map[regionType]int{}
	n := 0
	for _, t := range types {
		in := &ec2.GetSpotPlacementScoresInput{
			InstanceTypes:          []string{t},
			TargetCapacity:         awssdk.Int32(1),
			TargetCapacityUnitType: ec2types.TargetCapacityUnitTypeUnits,
			SingleAvailabilityZone: awssdk.Bool(false),
			RegionNames:            regions,
			MaxResults:             awssdk.Int32(10),
		}
		pg := ec2.NewGetSpotPlacementScoresPaginator(c, in, func(o *ec2.GetSpotPlacementScoresPaginatorOptions) { o.StopOnDuplicateToken = true })
		var guard providers.PageGuard
		for pg.HasMorePages() {
			n++
			page, err := pg.NextPage(ctx)
			if err != nil {
				return out, n, fmt.Errorf("GetSpotPlacementScores %s: %w", t, err)
			}
			if err := guard.Next("GetSpotPlacementScores "+t, awssdk.ToString(page.NextToken)); err != nil {
				return out, n, err
			}
			for _, s := range page.SpotPlacementScores {
				region, score := awssdk.ToString(s.Region), int(awssdk.ToInt32(s.Score))
				if region == "" || score < 1 || score > 10 {
					continue
				}
				// Per zone (SingleAvailabilityZone) the region's best zone is its score.
				k := regionType{region, t}
				out[k] = max(out[k], score)
			}
		}
	}
	return out, n, nil
}

// ebsFilters select the EBS gp3 capacity price of a region (the reference README,
// section 25: filter on volumeApiName, not usagetype, which carries a region prefix).
func ebsFilters(region string) []pricingtypes.Filter {
	f := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: awssdk.String(field), Value: awssdk.String(value)}
	}
	return []pricingtypes.Filter{f("regionCode", region), f("productFamily", "Storage"), f("volumeApiName", "gp3")}
}

// ebsPrice is the gp3 capacity price of region, per GB-month (EBS volumes are sized in
// GiB: the page's GB is GiB), from every page of the answer; the IOPS and throughput
// products (other families and units) are skipped should the server return them.
func ebsPrice(ctx context.Context, c getProductsAPI, region string, now time.Time) (pricing.StoragePrice, int, error) {
	in := &awspricing.GetProductsInput{ServiceCode: awssdk.String("AmazonEC2"), FormatVersion: awssdk.String("aws_v1"),
		Filters: ebsFilters(region), MaxResults: awssdk.Int32(pageSize)}
	sp := pricing.StoragePrice{Provider: Name, Region: region, Product: "gp3", Source: "AWS Price List GetProducts (EBS gp3, GB-Mo)", ObservedAt: now}
	n := 0
	err := getProductsPages(ctx, c, in, "GetProducts EBS "+region, func(item *priceItem) {
		n++
		a := item.Product.Attributes
		if item.Product.ProductFamily != "Storage" || a.RegionCode != region || a.VolumeAPIName != "gp3" {
			return
		}
		for _, term := range item.Terms.OnDemand {
			for _, d := range term.PriceDimensions {
				if d.Unit != "GB-Mo" {
					continue
				}
				if v, err := strconv.ParseFloat(d.PricePerUnit.USD, 64); err == nil && v > 0 {
					sp.USDPerGiBMonth = v
				}
			}
		}
	})
	if err != nil {
		return sp, n, err
	}
	if sp.USDPerGiBMonth <= 0 {
		return sp, n, pricing.Errorf(pricing.Unavailable, "no gp3 GB-Mo price for %s in %d products", region, n)
	}
	return sp, n, nil
}

// readMarket is the refresh's spot and storage read: the advisor file, the placement
// scores of types (the GPU types found) and each region's EBS gp3 price. Each part that
// fails is in Failed; the rest is reported.
func (p *Provider) readMarket(ctx context.Context, cfg awssdk.Config, pc getProductsAPI, types []string, now time.Time) *providers.MarketReport {
	rep := &providers.MarketReport{}
	fail := func(part string, err error) {
		if rep.Failed == nil {
			rep.Failed = map[string]error{}
		}
		rep.Failed[part] = fmt.Errorf("aws: %s: %w", part, err)
	}
	bands, err := p.readSpotAdvisor(ctx, now)
	rep.Requests++
	if err != nil {
		fail("spot-advisor", err)
	}
	if len(types) > 0 && len(p.regions) > 0 {
		ec := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = p.regions[0] })
		scores, n, err := placementScores(ctx, ec, types, p.regions)
		rep.Requests += n
		if err != nil {
			fail("placement-scores", err)
		}
		bands = withScores(bands, scores)
	}
	rep.Spot = bands
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(concurrency)
	for _, region := range p.regions {
		g.Go(func() error {
			sp, _, err := ebsPrice(ctx, pc, region, now)
			mu.Lock()
			defer mu.Unlock()
			rep.Requests++
			if err != nil {
				fail(region+" ebs", err)
				return nil
			}
			rep.Storage = append(rep.Storage, sp)
			return nil
		})
	}
	_ = g.Wait()
	slices.SortFunc(rep.Storage, func(a, b pricing.StoragePrice) int { return strings.Compare(a.Region, b.Region) })
	// A region is read in full when its advisor bands and its storage price both came.
	if rep.Failed["spot-advisor"] == nil {
		for _, region := range p.regions {
			if rep.Failed[region+" ebs"] == nil {
				rep.Regions = append(rep.Regions, region)
			}
		}
	}
	return rep
}

// withScores sets each band's placement score; a scored type the advisor file lacks in a
// region gets no band (a score is not an interruption rate).
func withScores(bands []pricing.SpotBand, scores map[regionType]int) []pricing.SpotBand {
	for i := range bands {
		if s, ok := scores[regionType{bands[i].Region, bands[i].InstanceType}]; ok {
			bands[i].Score = s
		}
	}
	return bands
}

// types are the GPU instance types whose facts some region gave, sorted.
func (s *sharedFacts) types() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.m))
	for t := range s.m {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

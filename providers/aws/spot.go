package aws

import (
	"context"
	"strconv"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pickergpu/picker/providers"
)

// spotRecord is one zone's current spot price of an instance type.
type spotRecord struct {
	zone, instanceType string
	price              float64
}

// spotBatch is how many instance types one DescribeSpotPriceHistory call names.
const spotBatch = 100

// spotPrices asks for the current (StartTime now) Linux/UNIX spot price of the given
// types, every page, and returns the records as the server gave them, one per zone;
// the caller places each by its zone and keeps the cheapest per region.
func spotPrices(ctx context.Context, c ec2API, types []string, now time.Time) ([]spotRecord, error) {
	var out []spotRecord
	for start := 0; start < len(types); start += spotBatch {
		batch := types[start:min(start+spotBatch, len(types))]
		its := make([]ec2types.InstanceType, len(batch))
		for i, t := range batch {
			its[i] = ec2types.InstanceType(t)
		}
		in := &ec2.DescribeSpotPriceHistoryInput{
			StartTime:           awssdk.Time(now),
			ProductDescriptions: []string{"Linux/UNIX"},
			InstanceTypes:       its,
			MaxResults:          awssdk.Int32(1000),
		}
		pg := ec2.NewDescribeSpotPriceHistoryPaginator(c, in, func(o *ec2.DescribeSpotPriceHistoryPaginatorOptions) { o.StopOnDuplicateToken = true })
		var guard providers.PageGuard // StopOnDuplicateToken misses A, B, A
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			if err := guard.Next("DescribeSpotPriceHistory", awssdk.ToString(page.NextToken)); err != nil {
				return nil, err
			}
			for _, s := range page.SpotPriceHistory {
				// The filter is re-checked: Windows, SUSE and RHEL records are not Linux
				// prices. "Linux/UNIX (Amazon VPC)" is the same price under its old name.
				if !strings.HasPrefix(string(s.ProductDescription), "Linux/UNIX") {
					continue
				}
				p, err := strconv.ParseFloat(awssdk.ToString(s.SpotPrice), 64)
				if err != nil || p <= 0 {
					continue
				}
				zone := awssdk.ToString(s.AvailabilityZone)
				typ := string(s.InstanceType)
				if zone == "" || !isGPUType(typ) {
					continue
				}
				out = append(out, spotRecord{zone: zone, instanceType: typ, price: p})
			}
		}
	}
	return out, nil
}

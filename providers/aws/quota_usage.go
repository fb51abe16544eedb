package aws

import (
	"context"
	"fmt"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// newEC2Client is the region's EC2 client for the usage read.
func newEC2Client(cfg awssdk.Config, region string) *ec2.Client {
	return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = region })
}

// instancesAPI is the EC2 call the usage read makes.
type instancesAPI interface {
	DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
}

// usageKey is what one vCPU quota counts: a family (pricing.QuotaScope's "G" or "P")
// and a purchase.
type usageKey struct {
	family   string
	purchase pricing.Purchase
}

// regionUsage counts the vCPUs the account's pending and running GPU instances hold in
// one region, by quota family and purchase: what the vCPU quotas count (AWS EC2 docs,
// "On-Demand Instance quotas": "the number of vCPUs ... used by running instances"),
// which Service Quotas does not return (its usage is a CloudWatch metric). One
// DescribeInstances listing filtered to the states and GPU families (g*, p*, vt*: gr*
// is g*), every page (MaxResults 1000, the API's most), so a region costs one call per
// thousand instances. An instance counts its type's vCPUs as the offers list them
// (DescribeInstanceTypes' DefaultVCpus, the figure pricing.QuotaScope charges a launch), else its cpuOptions
// (coreCount x threadsPerCore). InstanceLifecycle "spot" counts against the spot quota,
// none against on-demand; others (capacity-block, scheduled) count against neither. Open
// spot requests not yet fulfilled are not counted (they hold no instance). n counts the
// calls.
func regionUsage(ctx context.Context, c instancesAPI, vcpus map[string]float64) (map[usageKey]float64, int, error) {
	in := &ec2.DescribeInstancesInput{
		MaxResults: awssdk.Int32(1000),
		Filters: []ec2types.Filter{
			{Name: awssdk.String("instance-state-name"), Values: []string{"pending", "running"}},
			{Name: awssdk.String("instance-type"), Values: []string{"g*", "p*", "vt*"}},
		},
	}
	out := map[usageKey]float64{}
	n := 0
	pg := ec2.NewDescribeInstancesPaginator(c, in, func(o *ec2.DescribeInstancesPaginatorOptions) { o.StopOnDuplicateToken = true })
	var guard providers.PageGuard // StopOnDuplicateToken misses A, B, A
	for pg.HasMorePages() {
		n++
		page, err := pg.NextPage(ctx)
		if err == nil {
			err = guard.Next("DescribeInstances", awssdk.ToString(page.NextToken))
		}
		if err != nil {
			return nil, n, fmt.Errorf("describe instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				purchase := pricing.OnDemand
				switch inst.InstanceLifecycle {
				case "":
				case ec2types.InstanceLifecycleTypeSpot:
					purchase = pricing.Spot
				default:
					continue
				}
				typ := string(inst.InstanceType)
				v := vcpus[typ]
				if v <= 0 && inst.CpuOptions != nil {
					v = float64(awssdk.ToInt32(inst.CpuOptions.CoreCount) * max(awssdk.ToInt32(inst.CpuOptions.ThreadsPerCore), 1))
				}
				family, unit, _, ok := pricing.QuotaScope(&pricing.Offer{Provider: Name, InstanceType: typ, VCPUs: v})
				if !ok || unit != pricing.QuotaVCPU {
					continue
				}
				out[usageKey{family, purchase}] += v
			}
		}
	}
	return out, n, nil
}

// vcpus maps each described GPU type to its default vCPUs (DescribeInstanceTypes'
// VCpuInfo.DefaultVCpus, what the offers carry).
func (s *sharedFacts) vcpus() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]float64, len(s.m))
	for t, f := range s.m {
		if f.vcpus > 0 {
			out[t] = f.vcpus
		}
	}
	return out
}

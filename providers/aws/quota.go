package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	sqtypes "github.com/aws/aws-sdk-go-v2/service/servicequotas/types"
	"golang.org/x/sync/errgroup"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// gpuQuotas are the EC2 quotas that bound GPU launches: running on-demand vCPUs and
// spot-request vCPUs of the G (G and VT share theirs) and P families, per region. Codes,
// names and classes are the real ListServiceQuotas items quoted in
// aquasecurity/cloudsploit:plugins/aws/ec2/instanceLimit.spec.js (and repeated in AWS's
// EC2 "On-Demand Instance quotas" and "Spot Instance quotas" pages); all count vCPUs.
var gpuQuotas = []struct {
	code, family string
	purchase     pricing.Purchase
}{
	{"L-DB2E81BA", "G", pricing.OnDemand}, // Running On-Demand G and VT instances
	{"L-417A185B", "P", pricing.OnDemand}, // Running On-Demand P instances
	{"L-3819A6DF", "G", pricing.Spot},     // All G and VT Spot Instance Requests
	{"L-7212CCBC", "P", pricing.Spot},     // All P Spot Instance Requests
}

// sqAPI is the Service Quotas call the read makes.
type sqAPI interface {
	GetServiceQuota(ctx context.Context, in *servicequotas.GetServiceQuotaInput, opts ...func(*servicequotas.Options)) (*servicequotas.GetServiceQuotaOutput, error)
}

// readQuotas reads the GPU vCPU quotas of every configured region: one GetServiceQuota
// per region and quota (4 per region), regions four at a time. A region where a call
// fails (no servicequotas:GetServiceQuota permission, throttled past the retries) is in
// Failed and keeps its stored quotas; a quota the region does not have
// (NoSuchResourceException) is skipped. Usage is not in Service Quotas' answer (it is a
// CloudWatch metric): the region's running GPU instances are counted instead
// (regionUsage, one DescribeInstances listing per region, ec2:DescribeInstances), so
// Remaining is the limit less what the account already runs. A region whose usage read
// fails keeps its limits with UsageKnown false (Describe then names the limit only) and
// a warning saying usage was not read. vcpus are the offered types' vCPUs.
func (p *Provider) readQuotas(ctx context.Context, cfg awssdk.Config, vcpus map[string]float64, now time.Time) (*providers.QuotaReport, []string) {
	newClient := func(region string) sqAPI {
		return servicequotas.NewFromConfig(cfg, func(o *servicequotas.Options) {
			o.Region = region
			// Service Quotas throttles with its own exception name.
			o.Retryer = retry.AddWithErrorCodes(o.Retryer, (&sqtypes.TooManyRequestsException{}).ErrorCode())
		})
	}
	newEC2 := func(region string) instancesAPI { return newEC2Client(cfg, region) }
	return readRegionQuotas(ctx, p.regions, newClient, newEC2, vcpus, now)
}

func readRegionQuotas(ctx context.Context, regions []string, newClient func(region string) sqAPI, newEC2 func(region string) instancesAPI,
	vcpus map[string]float64, now time.Time) (*providers.QuotaReport, []string) {
	rep := &providers.QuotaReport{}
	var warns []string
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(concurrency)
	for _, region := range regions {
		g.Go(func() error {
			qs, account, n, err := regionQuotas(ctx, newClient(region), region, now)
			mu.Lock()
			defer mu.Unlock()
			rep.Requests += n
			if err != nil {
				if rep.Failed == nil {
					rep.Failed = map[string]error{}
				}
				rep.Failed[region] = fmt.Errorf("aws: %s: service quotas: %w", region, err)
				return nil
			}
			if len(qs) > 0 {
				used, un, uerr := regionUsage(ctx, newEC2(region), vcpus)
				rep.Requests += un
				if uerr != nil {
					warns = append(warns, fmt.Sprintf("aws: %s: quota usage not read (%v): its quotas compare the limit only", region, uerr))
				}
				for i := range qs {
					if uerr == nil {
						qs[i].Usage, qs[i].UsageKnown = used[usageKey{qs[i].Family, qs[i].Purchase}], true
					}
				}
			}
			if rep.Account == "" {
				rep.Account = account
			}
			rep.Quotas = append(rep.Quotas, qs...)
			rep.Regions = append(rep.Regions, region)
			return nil
		})
	}
	_ = g.Wait()
	// Regions finish in any order; the report lists them in configured order.
	var ordered []string
	for _, r := range regions {
		for _, got := range rep.Regions {
			if got == r {
				ordered = append(ordered, r)
			}
		}
	}
	rep.Regions = ordered
	slices.Sort(warns)
	return rep, warns
}

func regionQuotas(ctx context.Context, c sqAPI, region string, now time.Time) ([]pricing.Quota, string, int, error) {
	var out []pricing.Quota
	account := ""
	n := 0
	for _, gq := range gpuQuotas {
		n++
		res, err := c.GetServiceQuota(ctx, &servicequotas.GetServiceQuotaInput{ServiceCode: awssdk.String("ec2"), QuotaCode: awssdk.String(gq.code)})
		var nsr *sqtypes.NoSuchResourceException
		switch {
		case errors.As(err, &nsr):
			continue // not offered in this region
		case err != nil:
			return nil, "", n, err
		case res.Quota == nil || res.Quota.Value == nil:
			return nil, "", n, fmt.Errorf("GetServiceQuota %s: no quota value in the answer", gq.code)
		}
		sq := res.Quota
		if a := arnAccount(awssdk.ToString(sq.QuotaArn)); a != "" {
			account = a
		}
		name := awssdk.ToString(sq.QuotaName)
		if name == "" {
			name = gq.code
		}
		q := pricing.Quota{Provider: Name, Region: region, Code: gq.code, Name: name, Family: gq.family, Purchase: gq.purchase,
			Unit: pricing.QuotaVCPU, Limit: *sq.Value, ObservedAt: now}
		if err := q.Validate(); err != nil {
			return nil, "", n, err
		}
		out = append(out, q)
	}
	for i := range out {
		out[i].Account = account
	}
	return out, account, n, nil
}

// arnAccount is the account field of an ARN (arn:aws:servicequotas:REGION:ACCOUNT:ec2/L-…),
// "" when s is not one: the quota's own ARN says whose quota it is, so no STS call is
// needed to key quotas by account.
func arnAccount(s string) string {
	f := strings.SplitN(s, ":", 6)
	if len(f) < 6 || f[0] != "arn" {
		return ""
	}
	return f[4]
}

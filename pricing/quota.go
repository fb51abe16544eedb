package pricing

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Quota is one of an account's launch limits in one region, as its provider reports it:
// AWS Service Quotas' EC2 vCPU quotas per instance family and purchase (L-417A185B,
// "Running On-Demand P instances", in vCPUs), GCP's regional GPU quotas per GPU model
// (NVIDIA_A100_GPUS, PREEMPTIBLE_NVIDIA_A100_GPUS, in GPUs). recommend leaves out an
// offer whose instance (or --nodes cluster) needs more than Remaining.
//
// Quota data is the account's own: it is stored beside the prices, shown in answers,
// and never sent anywhere else.
type Quota struct {
	Provider string `json:"provider"`
	// Account is the AWS account id (from the quota's ARN) or the GCP project.
	Account string `json:"account"`
	Region  string `json:"region"`
	// Code identifies the quota to the provider: the AWS quota code (L-DB2E81BA) or the
	// GCP metric (NVIDIA_A100_GPUS). Name is what the provider's console calls it.
	Code string `json:"code"`
	Name string `json:"name"`
	// Family is what the quota counts, in the provider's terms: the AWS instance family
	// class ("G", "P": G and VT share theirs) or the GCP GPU model of the metric
	// ("A100", "A100_80GB", "H100").
	Family   string   `json:"family"`
	Purchase Purchase `json:"purchase"`
	// Unit is QuotaVCPU or QuotaGPU.
	Unit  string  `json:"unit"`
	Limit float64 `json:"limit"`
	// Usage is what the account uses now: GCP's answer says; for AWS (whose Service
	// Quotas leave it to CloudWatch) the read counts the vCPUs of the account's running
	// GPU instances. UsageKnown false (that count failed) means Remaining is the whole
	// limit.
	Usage      float64   `json:"usage"`
	UsageKnown bool      `json:"usage_known"`
	ObservedAt time.Time `json:"observed_at"`
}

// Quota units.
const (
	QuotaVCPU = "vCPU"
	QuotaGPU  = "GPU"
)

// Remaining is the quota left for a new launch: the limit less the usage where known,
// never negative; a fractional limit counts whole units only (GCP reports 8.9).
func (q Quota) Remaining() float64 {
	r := math.Floor(q.Limit + 1e-9)
	if q.UsageKnown {
		r -= math.Ceil(q.Usage - 1e-9)
	}
	return max(r, 0)
}

// Describe is how an answer names the quota: "aws us-east-1 Running On-Demand P
// instances (L-417A185B): 0 of 0 vCPUs left".
func (q Quota) Describe() string {
	left := fmt.Sprintf("limit %s %ss", trimNum(q.Limit), q.Unit)
	if q.UsageKnown {
		left = fmt.Sprintf("%s of %s %ss left", trimNum(q.Remaining()), trimNum(q.Limit), q.Unit)
	}
	name := q.Name
	if name == "" || name == q.Code {
		name = q.Code
	} else {
		name = fmt.Sprintf("%s (%s)", q.Name, q.Code)
	}
	return fmt.Sprintf("%s %s %s: %s", q.Provider, q.Region, name, left)
}

// QuotaKey identifies a quota across reads.
type QuotaKey struct {
	Provider, Account, Region, Code string
}

// Key returns the quota's identity.
func (q Quota) Key() QuotaKey { return QuotaKey{q.Provider, q.Account, q.Region, q.Code} }

// Validate checks what every stored quota must have.
func (q Quota) Validate() error {
	switch {
	case q.Provider == "" || q.Region == "" || q.Code == "":
		return Errorf(Invalid, "quota %s/%s/%s: provider, region and code must be set", q.Provider, q.Region, q.Code)
	case q.Purchase != OnDemand && q.Purchase != Spot:
		return Errorf(Invalid, "quota %s %s %s: purchase %q is not on-demand or spot", q.Provider, q.Region, q.Code, q.Purchase)
	case q.Unit != QuotaVCPU && q.Unit != QuotaGPU:
		return Errorf(Invalid, "quota %s %s %s: unit %q is not %s or %s", q.Provider, q.Region, q.Code, q.Unit, QuotaVCPU, QuotaGPU)
	case math.IsNaN(q.Limit) || math.IsInf(q.Limit, 0) || q.Limit < 0 || math.IsNaN(q.Usage) || math.IsInf(q.Usage, 0) || q.Usage < 0:
		return Errorf(Invalid, "quota %s %s %s: limit %v, usage %v: want finite, non-negative numbers", q.Provider, q.Region, q.Code, q.Limit, q.Usage)
	}
	return nil
}

// trimNum prints 96 as "96" and 8.5 as "8.5".
func trimNum(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

// QuotaScope is what an offer draws from its provider's quotas: the quota family, the
// unit and how much one instance takes. ok is false where picker knows no quota for it
// (providers without quota data, AWS families other than G, VT and P, GPUs whose GCP
// metric is not known): such an offer is never left out for quota.
//
// AWS counts vCPUs per instance family: g*, gr* and vt* draw from G ("G and VT"), p*
// from P (Service Quotas' EC2 quota names; AWS EC2 docs, "On-Demand Instance quotas").
// GCP counts GPUs per GPU model in the metric NVIDIA_<MODEL>_GPUS, whose model names
// are Compute Engine's ("GPU quotas"): a3-megagpu machines draw from H100_MEGA, not
// H100.
func QuotaScope(o *Offer) (family, unit string, perInstance float64, ok bool) {
	switch o.Provider {
	case "aws":
		t := strings.ToLower(o.InstanceType)
		switch {
		case strings.HasPrefix(t, "p") && len(t) > 1 && t[1] >= '0' && t[1] <= '9':
			return "P", QuotaVCPU, o.VCPUs, o.VCPUs > 0
		case strings.HasPrefix(t, "vt") || strings.HasPrefix(t, "gr") || (strings.HasPrefix(t, "g") && len(t) > 1 && t[1] >= '0' && t[1] <= '9'):
			return "G", QuotaVCPU, o.VCPUs, o.VCPUs > 0
		}
	case "gcp":
		if strings.HasPrefix(o.InstanceType, "a3-megagpu") {
			return "H100_MEGA", QuotaGPU, o.GPUCount, true
		}
		if m, ok := gcpQuotaModels[o.GPUModel]; ok {
			return m, QuotaGPU, o.GPUCount, true
		}
	}
	return "", "", 0, false
}

// gcpQuotaModels maps picker's GPU models to the model part of GCP's GPU quota metrics
// (Compute Engine "GPU quotas"; reference README §24: NVIDIA_A100_GPUS is
// nvidia-tesla-a100, NVIDIA_A100_80GB_GPUS nvidia-a100-80gb, NVIDIA_H100_GPUS
// nvidia-h100-80gb).
var gcpQuotaModels = map[string]string{
	"A100": "A100", "A100-80GB": "A100_80GB", "H100": "H100", "H200": "H200", "B200": "B200",
	"L4": "L4", "T4": "T4", "V100": "V100", "P100": "P100", "P4": "P4", "K80": "K80",
}

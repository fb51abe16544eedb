package jobtime

import (
	"math"
	"strings"
)

// Billing is how a provider turns run time into a bill: time is rounded up to
// Increment seconds and never less than Minimum seconds.
type Billing struct {
	Increment float64 // seconds
	Minimum   float64 // seconds
	Source    string
}

// providerBilling: on-demand GPU instance billing, from each provider's pricing pages.
// Providers not listed get defaultBilling.
var providerBilling = map[string]Billing{
	"aws": {1, 60, "aws.amazon.com/ec2/pricing/on-demand: per-second billing, 60-second minimum (Linux)"},
	"gcp": {1, 60, "cloud.google.com/compute/vm-instance-pricing: billed in one-second increments with a 1-minute minimum"},
	"oci": {1, 60, "oracle.com/cloud/compute/pricing: per-second billing with a one-minute minimum"},
	// Azure meters VMs by the minute (azure.microsoft.com/pricing/details/virtual-machines,
	// FAQ "billed per minute"); the price is per hour.
	"azure":  {60, 60, "azure.microsoft.com/pricing/details/virtual-machines: per-minute billing"},
	"lambda": {60, 60, "lambda.ai/pricing (on-demand cloud): billed in one-minute increments"},
	"runpod": {1, 60, "docs.runpod.io/pods/pricing: pods are charged by the second (one minute minimum)"},
	"vast":   {1, 0, "vast.ai/faq: per-second billing while the instance runs"},
}

// defaultBilling is assumed for providers without a published rule: per minute.
var defaultBilling = Billing{60, 60, "no published rule found: per-minute billing assumed"}

// BillingFor returns the provider's billing rule.
func BillingFor(provider string) Billing {
	if b, ok := providerBilling[provider]; ok {
		return b
	}
	if b, ok := providerBilling[strings.ToLower(provider)]; ok {
		return b
	}
	return defaultBilling
}

// BilledHours rounds hours of use up to what the provider bills.
func (b Billing) BilledHours(hours float64) float64 {
	secs := math.Max(hours*3600, b.Minimum)
	if b.Increment > 0 {
		secs = math.Ceil(secs/b.Increment-1e-9) * b.Increment
	}
	return secs / 3600
}

// Start-up overhead: the time an instance is billed before the job's first step.
const (
	// setupBootSec: boot, driver initialisation and pulling a CUDA/PyTorch container
	// image (~10 GB at ~100 MB/s). Cloud GPU VMs reach SSH in 1-3 minutes (AWS EC2 user
	// guide, "instance launch"; GCP "VM startup time" docs), the image pull takes
	// about as long again: 5 minutes together.
	setupBootSec = 300
	// setupDownloadBps: model weights come from the Hugging Face Hub at ~1 Gbit/s,
	// a conservative figure for a single-stream download (the Hub's hf_transfer docs
	// quote >500 MB/s only with parallel transfers).
	setupDownloadBps = 125e6
)

// SetupHours is the default start-up overhead: boot plus downloading weightBytes of
// checkpoint.
func SetupHours(weightBytes float64) float64 {
	return (setupBootSec + weightBytes/setupDownloadBps) / 3600
}

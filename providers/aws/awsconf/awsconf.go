// Package awsconf is the light half of the aws adapter: its [providers.aws] config
// section, options, checks and registry metadata, without the AWS SDK. The picker
// binary links only this (its registry entry runs the fetch in picker-fetch, see
// providers/fetchproc), so the SDK's package initialisation is not paid by every
// command; package aws, the SDK adapter that picker-fetch links, imports it.
package awsconf

import (
	"slices"
	"strings"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// Name is the provider name used in offers and config.
const Name = "aws"

// DefaultRegions are priced when the config names none.
var DefaultRegions = []string{"us-east-1", "us-west-2"}

// PricingRegions are the regions that host the Price List Query API endpoint.
var PricingRegions = []string{"us-east-1", "ap-south-1", "eu-central-1"}

// Config is the [providers.aws] section.
type Config struct {
	providers.Common
	// PricingRegion is where the Price List Query API is called (it prices every region
	// from there): us-east-1 (default), ap-south-1 or eu-central-1.
	PricingRegion string `toml:"pricing_region"`
}

// Validate reports a section the adapter cannot use, as an Invalid error naming the key
// as its Param (so picker points at the key's line in the config), before any process
// is started or call made: an unknown pricing_region, an endpoint that is not an
// http(s) URL.
func (c Config) Validate() error {
	if c.PricingRegion != "" && !slices.Contains(PricingRegions, c.PricingRegion) {
		return pricing.ParamErrorf(pricing.Invalid, "pricing_region", "aws: pricing_region %q: want one of %s", c.PricingRegion, strings.Join(PricingRegions, ", "))
	}
	if c.Endpoint != "" && !strings.HasPrefix(c.Endpoint, "http://") && !strings.HasPrefix(c.Endpoint, "https://") {
		return pricing.ParamErrorf(pricing.Invalid, "endpoint", "aws: endpoint %q: want an http:// or https:// URL", c.Endpoint)
	}
	return nil
}

// Descriptor presents the adapter with newProvider as its constructor: the registry's
// runs picker-fetch, picker-fetch's builds the SDK adapter.
func Descriptor(newProvider func(cfg any) (providers.Provider, error)) providers.Descriptor {
	return providers.Descriptor{
		Name:        Name,
		Description: "Amazon EC2 GPU instances: on-demand (Price List Query API) and spot (EC2 spot price history)",
		Options: []providers.Option{
			{Key: "pricing_region", Help: "region of the Price List Query API endpoint: us-east-1, ap-south-1 or eu-central-1", Default: "us-east-1"},
		},
		Needs:  providers.Needs{Kind: providers.NeedsAccount, Where: "AWS credential chain"},
		Config: Config{},
		New:    newProvider,
	}
}

package pricing

// Place is where an offer is sold: its region, with the zone after a slash where the
// provider prices per zone ("us-east-1/us-east-1a").
func (o Offer) Place() string {
	if o.Zone != "" {
		return o.Region + "/" + o.Zone
	}
	return o.Region
}

// RegionGroupKey is what offers share when they are one instance type sold the same way
// at the same price, and differ only in place: a cloud's instance priced alike in 13
// regions would otherwise fill 13 rows. `picker recommend` (without --by-region) and the
// Compare page fold such offers into one row listing the places; this is the one rule
// for both.
type RegionGroupKey struct {
	Provider, InstanceType, GPUModel string
	Purchase                         Purchase
	PriceUSDHr, GPUCount, GPUMemGiB  float64
}

// RegionGroupKey is o's key in all but its place.
func (o Offer) RegionGroupKey() RegionGroupKey {
	return RegionGroupKey{o.Provider, o.InstanceType, o.GPUModel, o.Purchase, o.PriceUSDHr, o.GPUCount, o.GPUMemGiB}
}

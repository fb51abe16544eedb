package pricing

// Shape is every fact of an offer that the recommender (package fit) reads to judge it,
// everything but the price and the location: two offers of one shape fit a job or don't
// alike, need the same memory, and would run it at the same speed and billing, so only
// their prices (and keys, for ties) tell them apart. That is what lets `picker recommend`
// read the cheapest few offers of each shape instead of every offer (the store keeps a
// shapes table for it, see store.ReadShapes).
//
// Adding a fact that fit reads means adding it here, to the store's shapes table
// (a migration) and to Offer.Shape; fit's TestEvaluationDependsOnlyOnShape fails until
// the new Offer field is classified either way. Provider and instance type are in the
// key because billing, interconnect and capability facts are looked up by them; region
// and zone are not: nothing a job needs depends on where the instance is.
type Shape struct {
	Provider     string
	InstanceType string
	Purchase     Purchase
	GPUModel     string
	GPUCount     float64
	GPUMemGiB    float64
	VCPUs        float64
	RAMGiB       float64
}

// Shape returns the offer's shape.
func (o Offer) Shape() Shape {
	return Shape{Provider: o.Provider, InstanceType: o.InstanceType, Purchase: o.Purchase, GPUModel: o.GPUModel,
		GPUCount: o.GPUCount, GPUMemGiB: o.GPUMemGiB, VCPUs: o.VCPUs, RAMGiB: o.RAMGiB}
}

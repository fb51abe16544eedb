package main

import (
	"context"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/store"
)

// shapeStore is a store that can read by offer shape (store.ReadShapes): recommend's
// fast path, which reads the cheapest offer of each shape and then only the shapes that
// can still win, instead of every matching offer.
type shapeStore interface {
	ReadShapes(ctx context.Context, q store.Query, plan store.ShapePlanner) ([]pricing.Offer, error)
	gpuCounter
}

// gpuCounter counts matching offers per GPU model and host CUDA ceiling
// (store.CountByGPUCUDA), for exclusion counts over the shape read
// (recommend.RecountExclusionsByHost).
type gpuCounter interface {
	CountByGPUCUDA(ctx context.Context, q store.Query, models []string) (recommend.GPUCounts, error)
}

// recommendOffers returns the offers recommend.Recommend needs to answer in as it would
// over every offer matching q: through the shape read when the store has one (the answer
// is decided shape by shape; recommend.ShapeNeeds plans the read), else every matching
// offer. The shape read carries every offer's host facts, as the full read does.
// shaped says whether the shape read was used.
func recommendOffers(ctx context.Context, st offerStore, q store.Query, in recommend.RecommendInput) (offers []pricing.Offer, shaped bool, err error) {
	ss, ok := st.(shapeStore)
	if !ok {
		offers, err = st.Offers(ctx, q)
		return offers, false, err
	}
	plan := recommend.NewShapePlan(in)
	offers, err = ss.ReadShapes(ctx, q, func(cheapest []pricing.Offer, more [][]pricing.Offer, exhausted []bool) ([]store.ShapeNeed, error) {
		needs, err := plan.Needs(cheapest, more, exhausted)
		if err != nil {
			// A job fit.Recommend refuses: it says so over these offers just as well.
			return nil, nil
		}
		out := make([]store.ShapeNeed, len(needs))
		for i, n := range needs {
			out[i] = store.ShapeNeed{Limit: n.Limit, MaxPrice: n.MaxPriceUSDHr}
		}
		return out, nil
	})
	return offers, true, err
}

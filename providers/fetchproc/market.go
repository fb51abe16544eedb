package fetchproc

import (
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// wireMarket is a providers.MarketReport across the process boundary, in the summary:
// a few hundred bands and prices, JSON like the rest of the summary.
type wireMarket struct {
	Spot     []pricing.SpotBand     `json:"spot,omitempty"`
	Storage  []pricing.StoragePrice `json:"storage,omitempty"`
	Regions  []string               `json:"regions,omitempty"`
	Failed   map[string]wireError   `json:"failed,omitempty"`
	Requests int                    `json:"requests,omitempty"`
}

func marketToWire(m *providers.MarketReport) *wireMarket {
	if m == nil {
		return nil
	}
	w := &wireMarket{Spot: m.Spot, Storage: m.Storage, Regions: m.Regions, Requests: m.Requests}
	for part, err := range m.Failed {
		if w.Failed == nil {
			w.Failed = map[string]wireError{}
		}
		w.Failed[part] = toWire(err)
	}
	return w
}

// report is the read as the parent's refresh takes it; nil for none.
func (w *wireMarket) report() *providers.MarketReport {
	if w == nil {
		return nil
	}
	m := &providers.MarketReport{Spot: w.Spot, Storage: w.Storage, Regions: w.Regions, Requests: w.Requests}
	for part, e := range w.Failed {
		if m.Failed == nil {
			m.Failed = map[string]error{}
		}
		m.Failed[part] = e.err()
	}
	return m
}

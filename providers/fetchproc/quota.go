package fetchproc

import (
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// kindQuota is the frame that carries a fetch's quota read (providers.QuotaReport) as
// JSON, sent before the summary and only when the request asks for quotas, so an older
// parent never sees one. maxQuotaPayload bounds it: four quotas per AWS region and
// about twenty GPU metrics per GCP region are a few hundred bytes a region, so 1 MiB
// holds every region of both clouds many times over.
const (
	kindQuota       = 'Q'
	maxQuotaPayload = 1 << 20
)

// wireQuotas is a providers.QuotaReport across the pipe.
type wireQuotas struct {
	Account  string               `json:"account"`
	Quotas   []pricing.Quota      `json:"quotas,omitempty"`
	Regions  []string             `json:"regions,omitempty"`
	Failed   map[string]wireError `json:"failed,omitempty"`
	Requests int                  `json:"requests"`
}

func quotasToWire(r *providers.QuotaReport) *wireQuotas {
	w := &wireQuotas{Account: r.Account, Quotas: r.Quotas, Regions: r.Regions, Requests: r.Requests}
	if len(r.Failed) > 0 {
		w.Failed = make(map[string]wireError, len(r.Failed))
		for region, err := range r.Failed {
			w.Failed[region] = toWire(err)
		}
	}
	return w
}

// report is the QuotaReport the parent hands on; quotas that fail Validate (picker does
// not trust another process's numbers more than a provider's) are dropped.
func (w *wireQuotas) report() *providers.QuotaReport {
	r := &providers.QuotaReport{Account: w.Account, Regions: w.Regions, Requests: w.Requests}
	for _, q := range w.Quotas {
		if q.Validate() == nil {
			r.Quotas = append(r.Quotas, q)
		}
	}
	if len(w.Failed) > 0 {
		r.Failed = make(map[string]error, len(w.Failed))
		for region, e := range w.Failed {
			r.Failed[region] = e.err()
		}
	}
	return r
}

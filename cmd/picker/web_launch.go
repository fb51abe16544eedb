package main

import "github.com/pickergpu/picker/web"

// webLaunch is a provider row's launch data for the web Providers page: the quota read
// and the capacity word `picker providers` prints under its table, as times (the page
// works out their ages when it renders).
func webLaunch(r providerRow) (*web.QuotaRead, *web.CapacityWord) {
	var q *web.QuotaRead
	if r.Quotas != nil {
		q = &web.QuotaRead{Account: r.Quotas.Account, Quotas: r.Quotas.Quotas, LastOK: r.Quotas.LastOK, Oldest: r.Quotas.oldest,
			Attempted: r.Quotas.Attempted, RegionsFailed: r.Quotas.RegionsFailed, Error: r.Quotas.Error}
	}
	var c *web.CapacityWord
	if r.Capacity != nil {
		c = &web.CapacityWord{Available: r.Capacity.Available, SoldOut: r.Capacity.SoldOut, Observed: r.Capacity.Observed}
	}
	return q, c
}

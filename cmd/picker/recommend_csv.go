package main

import (
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// billCells are a fit's trailing CSV columns (fitColumns from compute_usd on): the
// all-in bill's parts as the JSON's bill has them (empty when the job is not timed, so
// there is no bill), the spot offer's interruption band, and the provider's capacity
// word (true, false, or empty where it says nothing), so a spreadsheet can re-add
// est_cost_usd and sort sold-out offers as recommend does.
func billCells(f *recommend.Fit) []string {
	cells := make([]string, 0, 9)
	if b := f.Bill; b != nil {
		cells = append(cells, num(b.ComputeUSD, 6), num(b.BootUSD, 6), num(b.RestartUSD, 6), num(b.DiskUSD, 6),
			num(b.DiskGiB, 3), num(b.EgressUSD, 6), num(b.UploadGB, 3))
	} else {
		cells = append(cells, "", "", "", "", "", "", "")
	}
	band := ""
	if f.SpotRisk != nil {
		band = pricing.SpreadsheetSafe(f.SpotRisk.Band)
	}
	available := ""
	if f.Available.Known() {
		available = "false"
		if f.Available == pricing.AvailableNow {
			available = "true"
		}
	}
	return append(cells, band, available)
}

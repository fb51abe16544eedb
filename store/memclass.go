package store

import (
	"strconv"
	"strings"
	"sync"

	"github.com/pickergpu/picker/pricing"
)

// The memory floors in GB (Query.MinVRAMGB, MinTotalVRAMGB) compare the datasheet class
// a GPU is sold by, not what a program can use: an H100 is an 80 GB part with 79.19 GiB
// usable, so "80 GB" keeps it where "80 GiB" drops it. The class of one GPU is its
// gpus.csv memory_gb; a model the catalogue has no figure for is classed by its stored
// GiB in GB (× 2^30 / 10^9). A fractional slice has its share of the class.

// gibToGB converts GiB to GB.
const gibToGB = float64(1<<30) / 1e9

// ClassGB is the class of one whole GPU of model, whose stored memory is gib (an
// offer's GPUMemReportedGiB once its usable memory is set).
func ClassGB(model string, gib float64) float64 {
	if g, ok := pricing.LookupGPU(model); ok && g.MemGB > 0 {
		return g.MemGB
	}
	return gib * gibToGB
}

// classOK reports whether an offer of count GPUs of model, gib each as stored, meets
// q's floors in GB; the shape and image reads apply it as the SQL does (classSQL).
func (q Query) classOK(model string, count, gib float64) bool {
	if q.MinVRAMGB <= 0 && q.MinTotalVRAMGB <= 0 {
		return true
	}
	c := ClassGB(model, gib)
	per := c
	if count < 1 {
		per = count * c
	}
	return !(q.MinVRAMGB > 0 && per < q.MinVRAMGB) && !(q.MinTotalVRAMGB > 0 && count*c < q.MinTotalVRAMGB)
}

// classOKOffer is classOK for an offer read from the store (its usable memory set, the
// stored figure kept in GPUMemReportedGiB).
func (q Query) classOKOffer(o *pricing.Offer) bool {
	stored := o.GPUMemGiB
	if o.GPUMemReportedGiB != 0 {
		stored = o.GPUMemReportedGiB
	}
	return q.classOK(o.GPUModel, o.GPUCount, stored)
}

// classSQL is ClassGB over an offers row, as usableSQL is the usable memory: the
// floors compare it in SQL, so a LIMIT counts only offers that pass.
var classSQL = sync.OnceValue(func() string {
	var b strings.Builder
	b.WriteString("(CASE gpu_model")
	for _, g := range pricing.GPUs() {
		if g.MemGB > 0 && !strings.Contains(g.Model, "'") {
			b.WriteString(" WHEN '" + g.Model + "' THEN " + strconv.FormatFloat(g.MemGB, 'g', -1, 64))
		}
	}
	b.WriteString(" ELSE gpu_mem_gib * " + strconv.FormatFloat(gibToGB, 'g', -1, 64) + " END)")
	return b.String()
})

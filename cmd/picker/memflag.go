package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// Memory floors (--min-vram, --min-total-vram; the API's and the Compare page's
// min-vram bind through the same params) take a unit. A GPU is sold by its datasheet
// class in GB (pricing/gpus.csv memory_gb) and a program gets less, in GiB (usable_gib:
// an H100 is 80 GB, 79.19 GiB), so "--min-vram 80" meaning GiB drops every H100. A bare
// number keeps meaning usable GiB, as it always did; 79GiB says so; 80GB compares the
// class.

// memoryFloor parses a memory floor into gib (usable GiB) or gb (the datasheet class),
// zeroing the other.
func memoryFloor(name string, gib, gb *float64) func(string) error {
	return func(v string) error {
		num, unit := splitUnit(strings.TrimSpace(v))
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || (unit != "" && unit != "gib" && unit != "gb") {
			return pricing.Errorf(pricing.Invalid, "--%s %q: want usable GiB (80, 79.5GiB) or a datasheet class in GB (80GB)", name, v)
		}
		if f < 0 {
			return pricing.Errorf(pricing.Invalid, "--%s %s: must not be negative", name, v)
		}
		*gib, *gb = 0, 0
		if unit == "gb" {
			*gb = f
		} else {
			*gib = f
		}
		return nil
	}
}

// splitUnit splits "79.5GiB" into "79.5" and "gib" (lower case; "" for a bare number).
func splitUnit(v string) (num, unit string) {
	i := strings.LastIndexFunc(v, func(r rune) bool { return r >= '0' && r <= '9' || r == '.' })
	return strings.TrimSpace(v[:i+1]), strings.ToLower(strings.TrimSpace(v[i+1:]))
}

// memoryUnitsHint explains an empty answer (total, the offers q matched, is 0) to floors
// in GiB whose cause is the GB/GiB difference: read as a datasheet class in GB, the same
// numbers match offers that have less usable GiB than their class. "" otherwise: no GiB
// floor, offers found, or none of the class either. The run function the CLI and the API
// share calls it, so both say why; a failed read only loses the hint.
func memoryUnitsHint(ctx context.Context, st offerStore, q store.Query, total int) string {
	if total > 0 || q.MinVRAMGiB <= 0 && q.MinTotalVRAMGiB <= 0 {
		return ""
	}
	alt := q // the same numbers read as GB
	var use []string
	if q.MinVRAMGiB > 0 {
		alt.MinVRAMGB, alt.MinVRAMGiB = q.MinVRAMGiB, 0
		use = append(use, "--min-vram "+num(q.MinVRAMGiB, 3)+"GB")
	}
	if q.MinTotalVRAMGiB > 0 {
		alt.MinTotalVRAMGB, alt.MinTotalVRAMGiB = q.MinTotalVRAMGiB, 0
		use = append(use, "--min-total-vram "+num(q.MinTotalVRAMGiB, 3)+"GB")
	}
	alt.Limit, alt.After = 0, ""
	offers, err := st.Offers(ctx, alt)
	if err != nil {
		return ""
	}
	// One group per GPU model (and count, for a slice or a floor on the whole instance),
	// with its usable GiB and its class, most offers first.
	type group struct {
		label      string
		usable, gb float64
		n          int
	}
	var groups []*group
	byLabel := map[string]*group{}
	n := 0
	wholeInstance := q.MinVRAMGiB <= 0
	for _, o := range offers {
		gb := store.ClassGB(o.GPUModel, cmp.Or(o.GPUMemReportedGiB, o.GPUMemGiB))
		usable, label := o.MemPerDeviceGiB(), o.GPUModel
		switch {
		case wholeInstance:
			usable, gb, label = o.TotalGPUMemGiB(), gb*o.GPUCount, num(o.GPUCount, 3)+"×"+o.GPUModel
		case o.Fractional():
			gb, label = gb*o.GPUCount, num(o.GPUCount, 3)+"×"+o.GPUModel
		}
		if usable >= cmp.Or(q.MinVRAMGiB, q.MinTotalVRAMGiB) {
			continue // not missed for its units
		}
		g := byLabel[label]
		if g == nil {
			g = &group{label: label, usable: usable, gb: gb}
			byLabel[label] = g
			groups = append(groups, g)
		}
		g.n++
		n++
	}
	if n == 0 {
		return ""
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return b.n - a.n })
	if len(groups) == 1 {
		g, have := groups[0], "offers have"
		if g.n == 1 {
			have = "offer has"
		}
		return fmt.Sprintf("%d %s %s %s GiB usable (%s GB class): use %s", g.n, g.label, have, num(g.usable, 1), num(g.gb, 1), strings.Join(use, " "))
	}
	var parts []string
	for i, g := range groups {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(groups)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s GiB of %s GB", g.label, num(g.usable, 1), num(g.gb, 1)))
	}
	return fmt.Sprintf("%d offers have less usable GiB than their GB class (%s): use %s", n, strings.Join(parts, ", "), strings.Join(use, " "))
}

// writeHint prints the run function's hint, if any, on stderr after the answer.
func (o *OffersOptions) writeHint() {
	if o.Hint != "" && !o.IO.Quiet {
		fmt.Fprintln(o.IO.ErrOut, "hint: "+o.Hint)
	}
}

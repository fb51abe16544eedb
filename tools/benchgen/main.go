// Command benchgen writes a static price file (the snapshot's CSV columns) for
// tools/bench-recommend.sh: realistic in shape, not in prices. Instance types repeat
// across regions and zones as clouds' do, so a 100k-offer file holds a few hundred
// distinct offer shapes (GPU model, count, memory, vCPUs, RAM, purchase), which is
// what recommend's per-shape read depends on.
//
//	benchgen -rows 50000 -round 3 -change 1 > prices.csv
//
// Each row is one on-demand and one spot offer. -round moves every price (a new price
// interval per offer and round, so ten rounds make a 1M-row history); -change N instead
// moves only N % of the rows of round -round's prices (a steady-state refresh).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/pickergpu/picker/pricing"
)

func main() {
	rows := flag.Int("rows", 50_000, "CSV rows (each is an on-demand and a spot offer)")
	round := flag.Int("round", 0, "price round: every price differs between rounds")
	change := flag.Float64("change", 0, "percent of rows whose price moves against -round (0 = round's prices)")
	flag.Parse()
	if err := write(*rows, *round, *change); err != nil {
		fmt.Fprintln(os.Stderr, "benchgen:", err)
		os.Exit(1)
	}
}

func write(rows, round int, change float64) error {
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date")
	gpus := pricing.GPUs()
	counts := []int{1, 2, 4, 8}
	ramPerGPU := []int{32, 64, 128} // three instance families per GPU model and count
	types := len(gpus) * len(counts) * len(ramPerGPU)
	every := 0
	if change > 0 {
		every = int(100 / change)
	}
	for i := range rows {
		t := i % types
		g := gpus[t%len(gpus)]
		c := counts[(t/len(gpus))%len(counts)]
		fam := (t / len(gpus) / len(counts)) % len(ramPerGPU)
		loc := i / types // region x zone
		region := fmt.Sprintf("region-%03d", loc/5)
		zone := fmt.Sprintf("%s%c", region, 'a'+loc%5)
		r := round
		if every > 0 && i%every == 0 {
			r++
		}
		base := 0.4 + 0.05*float64((t*7919+loc*104729)%997)/997*float64(c)*(1+float64(fam))
		od := base * (1 + 0.013*float64(r))
		fmt.Fprintf(w, "bench,%s,%s,fam%d-%s-x%d,%s,%d,%g,%d,%d,%.6f,%.6f,\n", region, zone, fam, sanitize(g.Model), c,
			g.Model, c, g.MemGB, 8*c*(fam+1), ramPerGPU[fam]*c, od, od*0.4)
	}
	return w.Flush()
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == ' ' || c == ',' {
			b[i] = '_'
		}
	}
	return string(b)
}

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
//
// -market writes a marketplace instead (issue 29): every row is one host with its own
// instance type (so every offer is its own pricing.Shape, as Vast.ai's or TensorDock's
// are), a GPU model and count, host RAM from a few DIMM sizes and vCPUs that vary from
// host to host, an on-demand and an interruptible (spot) price, in one of 40 locations.
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
	market := flag.Bool("market", false, "a marketplace: every row its own host (instance type)")
	flag.Parse()
	w := write
	if *market {
		w = writeMarket
	}
	if err := w(*rows, *round, *change); err != nil {
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

// writeMarket writes rows marketplace hosts. A host's facts come from a hash of its
// index, so the same -rows give the same hosts in every round.
func writeMarket(rows, round int, change float64) error {
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date")
	gpus := pricing.GPUs()
	counts := []int{1, 1, 1, 2, 2, 4, 8}
	ramGiB := []int{32, 64, 128, 256, 512} // host DIMM configurations
	every := 0
	if change > 0 {
		every = int(100 / change)
	}
	for i := range rows {
		h := splitmix(uint64(i))
		g := gpus[h%uint64(len(gpus))]
		c := counts[(h>>8)%uint64(len(counts))]
		ram := ramGiB[(h>>16)%uint64(len(ramGiB))] * max(1, c/2)
		vcpus := 4 + int((h>>24)%29)*c
		r := round
		if every > 0 && i%every == 0 {
			r++
		}
		base := (0.08 + 0.002*float64(g.MemGB)) * float64(c) * (0.7 + 0.6*float64((h>>32)%1000)/1000)
		od := base * (1 + 0.013*float64(r))
		fmt.Fprintf(w, "market,loc-%02d,,host%06d,%s,%d,%g,%d,%d,%.6f,%.6f,\n", (h>>40)%40, i, g.Model, c, g.MemGB, vcpus, ram, od, od*0.45)
	}
	return w.Flush()
}

// splitmix is SplitMix64's output function (Steele, Lea, Flood 2014): a well-mixed hash
// of a host's index.
func splitmix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

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
// -hosts adds the host-fact columns of a static price file (pricing.HostCSVColumns): a
// reliability score from 0.80 to 0.999, a CUDA ceiling from a mix of driver generations
// (11.8 through 13.0, with the driver that reports it), network speeds, disk and
// verification, from a second hash of the host, so they too are the same every round.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

func main() {
	rows := flag.Int("rows", 50_000, "CSV rows (each is an on-demand and a spot offer)")
	round := flag.Int("round", 0, "price round: every price differs between rounds")
	change := flag.Float64("change", 0, "percent of rows whose price moves against -round (0 = round's prices)")
	market := flag.Bool("market", false, "a marketplace: every row its own host (instance type)")
	hosts := flag.Bool("hosts", false, "with -market: host facts per host (reliability, max CUDA, driver, network, disk, verification)")
	flag.Parse()
	w := write
	if *market {
		w = func(rows, round int, change float64) error { return writeMarket(rows, round, change, *hosts) }
	} else if *hosts {
		fmt.Fprintln(os.Stderr, "benchgen: -hosts needs -market")
		os.Exit(2)
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

// writeMarket writes rows marketplace hosts, with host facts when hosts is set. A host's
// facts come from a hash of its index, so the same -rows give the same hosts in every
// round.
func writeMarket(rows, round int, change float64, hosts bool) error {
	w := bufio.NewWriter(os.Stdout)
	header := "provider,region,zone,instance_type,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,price_on_demand_usd_hr,price_spot_usd_hr,source_date"
	if hosts {
		header += "," + strings.Join(pricing.HostCSVColumns, ",")
	}
	fmt.Fprintln(w, header)
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
		fmt.Fprintf(w, "market,loc-%02d,,host%06d,%s,%d,%g,%d,%d,%.6f,%.6f,", (h>>40)%40, i, g.Model, c, g.MemGB, vcpus, ram, od, od*0.45)
		if hosts {
			w.WriteString("," + hostCells(splitmix(h)))
		}
		w.WriteByte('\n')
	}
	return w.Flush()
}

// drivers are the CUDA ceilings a marketplace's hosts report, each with a Linux driver
// release of the branch that reports it (NVIDIA CUDA Toolkit release notes, table 3 lists
// each toolkit's driver branch: 520 for 11.8, 535 for 12.2, 550 for 12.4, 560 for 12.6,
// 570 for 12.8, 580 for 13.0) and its share of hosts in per mille: an illustrative mix of
// driver generations, older ones rarer, not a measured one.
var drivers = []struct {
	cuda     string
	driver   string
	perMille uint64
}{{"11.8", "520.61.05", 50}, {"12.2", "535.183.01", 200}, {"12.4", "550.54.15", 250}, {"12.6", "560.35.03", 100}, {"12.8", "570.124.06", 300}, {"13.0", "580.65.06", 100}}

// hostCells are a host's facts from its hash h, as the HostCSVColumns cells.
func hostCells(h uint64) string {
	rel := 0.80 + 0.199*float64(h%1000)/999
	k := (h >> 10) % 1000
	d := drivers[len(drivers)-1]
	for _, x := range drivers {
		if k < x.perMille {
			d = x
			break
		}
		k -= x.perMille
	}
	down := 100 * (1 + (h>>20)%50) // 100 Mb/s to 5 Gb/s
	up := down * (1 + (h>>26)%4) / 4
	disk := 100 * (1 + (h>>30)%40)
	verified := pricing.HostUnverified
	if (h>>36)%3 > 0 {
		verified = pricing.HostVerified
	}
	return fmt.Sprintf("%.3f,%s,%s,%d,%d,%d,%s", rel, d.cuda, d.driver, up, down, disk, verified)
}

// splitmix is SplitMix64's output function (Steele, Lea, Flood 2014): a well-mixed hash
// of a host's index.
func splitmix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

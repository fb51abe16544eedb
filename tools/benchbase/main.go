// Command benchbase is the baseline of tools/bench-recommend.sh: the least a
// recommend could cost, a process that opens the database through the same driver
// (modernc.org/sqlite, the same DSN pragmas) and runs the equivalent top-10 SQL:
// the ten cheapest current on-demand offers with enough memory per GPU, walking the
// price index. It prints the rows so the work cannot be skipped.
//
//	benchbase -db picker.db -min-vram 8
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"os"

	_ "modernc.org/sqlite"
)

func main() {
	db := flag.String("db", "", "picker database")
	minVRAM := flag.Float64("min-vram", 8, "least GiB per GPU")
	flag.Parse()
	if err := run(*db, *minVRAM); err != nil {
		fmt.Fprintln(os.Stderr, "benchbase:", err)
		os.Exit(1)
	}
}

func run(path string, minVRAM float64) error {
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(ON)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT provider, region, zone, instance_type, purchase, gpu_model, gpu_count, gpu_mem_gib,
		vcpus, ram_gib, currency, source, price, last_seen
		FROM offers INDEXED BY offers_current_price
		WHERE price IS NOT NULL AND purchase = 'on-demand'
		AND (CASE WHEN gpu_count < 1 THEN gpu_count * gpu_mem_gib ELSE gpu_mem_gib END) >= ?
		ORDER BY price, provider, region, zone, instance_type, purchase LIMIT 10`, minVRAM)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var prov, region, zone, typ, pur, gpu, cur, src string
		var count, mem, vcpus, ram, price float64
		var seen int64
		if err := rows.Scan(&prov, &region, &zone, &typ, &pur, &gpu, &count, &mem, &vcpus, &ram, &cur, &src, &price, &seen); err != nil {
			return err
		}
		fmt.Println(prov, region, zone, typ, gpu, count, price)
	}
	return rows.Err()
}

// Package snapshot is picker's embedded price data: a dated snapshot of 2,482 GPU
// instance offers from 15 providers (shared/data/gpu_offers_snapshot.csv, dated per
// row; sources in shared/data/README.md). It is what lets every command work offline,
// with no config and no credentials: the first run seeds an empty database from it.
//
// The package is data only and imports nothing of picker's: pricing.ParseOffersCSV
// parses the bytes, and refresh.EnsureSeeded writes them through the same step that
// writes a refresh.
package snapshot

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"slices"
	"strings"
	"sync"
	"time"
)

//go:embed gpu_offers_snapshot.csv
var snapshotCSV []byte

// FileName is the embedded file's name, used in parse errors.
const FileName = "gpu_offers_snapshot.csv"

// UndatedObserved is the observation time given to rows with an empty source_date:
// the skypilot-catalog rows, whose commit hashes are known but not their dates. The
// data README says to treat them as "no later than 2026-08", so they are dated
// 2026-08-01 rather than today, which would make old prices look fresh.
var UndatedObserved = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)

// CSV returns the embedded file (the offers-CSV columns of pricing.OffersCSVColumns).
// The slice is the caller's to modify.
func CSV() []byte { return slices.Clone(snapshotCSV) }

// Date is the newest source_date in the snapshot (rows without a date are not
// counted: their date is an assumption, see UndatedObserved).
func Date() time.Time { return date() }

var date = sync.OnceValue(func() time.Time {
	recs, err := csv.NewReader(bytes.NewReader(snapshotCSV)).ReadAll()
	if err != nil || len(recs) == 0 {
		return time.Time{}
	}
	col := slices.Index(recs[0], "source_date")
	var newest time.Time
	for _, rec := range recs[1:] {
		if col < 0 || col >= len(rec) {
			continue
		}
		if t, err := time.Parse(time.DateOnly, strings.TrimSpace(rec[col])); err == nil && t.After(newest) {
			newest = t
		}
	}
	return newest
})

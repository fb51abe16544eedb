package store

import (
	"context"
	"strings"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// Host facts (0006_host_facts.sql): pricing.Host as plain columns of the offer's row,
// written with the other facts and read back by every offer read.

// hostColumns are the host columns, in hostArgs' and scanHost's order.
const hostColumns = "host_reliability, host_max_cuda, host_driver, host_net_up_mbps, host_net_down_mbps, host_disk_gb, host_verification"

// hostCols are hostColumns of table t (a name or alias of offers).
func hostCols(t string) string {
	return t + "." + strings.ReplaceAll(hostColumns, ", ", ", "+t+".")
}

// factsHostCopy are a fit-fact set's copy of its cheapest offer's host facts
// (0010_facts_host_copy.sql), in hostColumns' order.
const factsHostCopy = "c_host_reliability, c_host_max_cuda, c_host_driver, c_host_net_up_mbps, c_host_net_down_mbps, c_host_disk_gb, c_host_verification"

// cudaClassSQL is recommend.CUDAClass of the column col in SQL, its floors bound as
// arguments (exactly the float64s Go compares with).
func cudaClassSQL(col string) (string, []any) {
	floors := recommend.CUDAFloors()
	expr := "CASE WHEN NOT (" + col + " > 0) THEN 0"
	var args []any
	for _, f := range floors[:len(floors)-1] {
		expr += " WHEN " + col + " >= ? THEN ?"
		args = append(args, f, f)
	}
	return expr + " ELSE ? END", append(args, floors[len(floors)-1])
}

// noHost is hostColumns' values for an offer that states no host fact.
const noHost = "0, 0, '', 0, 0, 0, ''"

// hostFields counts hostColumns.
const hostFields = 7

// hostSet is the SET clause of an UPDATE that writes hostArgs.
const hostSet = "host_reliability = ?, host_max_cuda = ?, host_driver = ?, host_net_up_mbps = ?, host_net_down_mbps = ?, host_disk_gb = ?, host_verification = ?"

// hostArgs are h's values for hostColumns.
func hostArgs(h pricing.Host) []any {
	return []any{h.Reliability, h.MaxCUDA, h.Driver, h.NetUpMbps, h.NetDownMbps, h.DiskGB, h.Verification}
}

// hostDest are the scan destinations of hostColumns into h.
func hostDest(h *pricing.Host) []any {
	return []any{&h.Reliability, &h.MaxCUDA, &h.Driver, &h.NetUpMbps, &h.NetDownMbps, &h.DiskGB, &h.Verification}
}

// hasHostFacts reports whether any current offer states a host fact recommend judges by
// (reliability or max CUDA): one probe of offers_current_host, empty for a catalogue of
// clouds. ReadShapes groups by shape only where there are none: a shape's offers may
// differ in their hosts' CUDA, which a fit-fact set's may not.
func hasHostFacts(ctx context.Context, db queryer) (bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT 1 FROM offers INDEXED BY offers_current_host
		WHERE price IS NOT NULL AND (host_reliability > 0 OR host_max_cuda > 0) LIMIT 1`)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	has := rows.Next()
	return has, rows.Err()
}

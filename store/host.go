package store

import (
	"context"
	"strings"

	"github.com/pickergpu/picker/pricing"
)

// Host facts (0006_host_facts.sql): pricing.Host as plain columns of the offer's row,
// written with the other facts and read back by every offer read.

// hostColumns are the host columns, in hostArgs' and scanHost's order.
const hostColumns = "host_reliability, host_max_cuda, host_driver, host_net_up_mbps, host_net_down_mbps, host_disk_gb, host_verification"

// hostCols are hostColumns of table t (a name or alias of offers).
func hostCols(t string) string {
	return t + "." + strings.ReplaceAll(hostColumns, ", ", ", "+t+".")
}

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

// HasHostFacts reports whether any current offer states a host fact recommend judges by
// (reliability or max CUDA): one probe of offers_current_host, empty for a catalogue of
// clouds. A reader that cannot carry host facts (the shape read) takes the offers read
// when there are some.
func (s *Store) HasHostFacts(ctx context.Context) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM offers INDEXED BY offers_current_host
		WHERE price IS NOT NULL AND (host_reliability > 0 OR host_max_cuda > 0) LIMIT 1)`).Scan(&n)
	if err != nil {
		return false, s.dbError("read host facts", err)
	}
	return n > 0, nil
}

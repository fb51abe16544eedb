package pricing

import (
	"slices"
	"strings"
)

// HostCSVColumns are the optional host-fact columns of a price file (ParseOffersCSV; the
// static provider's TOML keys are the same): Host's JSON names, so a file states a
// marketplace host as `picker offers -o json` shows it. An empty cell or an absent
// column is "not stated".
var HostCSVColumns = []string{"reliability", "max_cuda", "driver", "net_up_mbps", "net_down_mbps", "disk_gb", "verification"}

// hostFactColumns names each fact Host.Clean drops by its column.
var hostFactColumns = map[string]string{"reliability": "reliability", "max CUDA": "max_cuda", "driver": "driver",
	"network up": "net_up_mbps", "network down": "net_down_mbps", "disk": "disk_gb", "verification": "verification"}

// CheckHost returns h with its verification lowercased and its driver trimmed, or, when
// a fact is one Host.Clean would drop (a reliability outside 0-1, a CUDA version outside
// 1-99, an absurd speed or disk, a driver that is not a version, an unknown verification
// state), the column of the first such fact and what it wants: a user's file is fixed,
// not silently read as "not stated".
func CheckHost(h Host) (Host, string, string) {
	h.Verification = strings.ToLower(strings.TrimSpace(h.Verification))
	clean, dropped := h.Clean()
	if len(dropped) == 0 {
		return clean, "", ""
	}
	col := hostFactColumns[dropped[0]]
	want := map[string]string{
		"reliability":   "want a score from 0 to 1 (0.98, not 98)",
		"max_cuda":      "want a CUDA version from 1 to 99 (12.4)",
		"driver":        "want a driver version (535.183.01)",
		"net_up_mbps":   "want Mb/s from 0 to 1000000",
		"net_down_mbps": "want Mb/s from 0 to 1000000",
		"disk_gb":       "want GB from 0 to 1000000",
		"verification":  "want verified, unverified or empty",
	}[col]
	return h, col, want
}

func isHostCSVColumn(h string) bool { return slices.Contains(HostCSVColumns, h) }

// host reads the row's host-fact cells (HostCSVColumns).
func (r csvRow) host() (Host, error) {
	var h Host
	for _, f := range []struct {
		col string
		dst *float64
	}{{"reliability", &h.Reliability}, {"max_cuda", &h.MaxCUDA}, {"net_up_mbps", &h.NetUpMbps}, {"net_down_mbps", &h.NetDownMbps}, {"disk_gb", &h.DiskGB}} {
		v, err := r.number(f.col, false)
		if err != nil {
			return Host{}, err
		}
		*f.dst = v
	}
	h.Driver, h.Verification = r.text("driver"), r.text("verification")
	h, col, want := CheckHost(h)
	if col != "" {
		return Host{}, r.errorf(col, "%q: %s", r.text(col), want)
	}
	return h, nil
}

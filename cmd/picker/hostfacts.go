package main

import (
	"github.com/pickergpu/picker/pricing"
)

// Host facts (pricing.Host, 0006_host_facts.sql): --min-reliability, and their cells
// in the tables.

// reliabilityFloor parses --min-reliability: a score from 0 to 1.
func reliabilityFloor(dst *float64) func(string) error {
	return func(v string) error {
		f, err := parseFloat("min-reliability")(v)
		if err != nil {
			return err
		}
		if !(f >= 0 && f <= 1) {
			return pricing.ParamErrorf(pricing.Invalid, "min-reliability", "--min-reliability %v: want a score from 0 to 1 (0.98, not 98)", f)
		}
		*dst = f
		return nil
	}
}

// hostNum is a host fact for a table cell, "-" when the provider states none.
func hostNum(v float64, prec int) string {
	if v == 0 {
		return "-"
	}
	return num(v, prec)
}

// hostNet is the host's internet speed, down/up in Mb/s, "-" when unstated.
func hostNet(h pricing.Host) string {
	if h.NetDownMbps == 0 && h.NetUpMbps == 0 {
		return "-"
	}
	return hostNum(h.NetDownMbps, 0) + "/" + hostNum(h.NetUpMbps, 0)
}

// hostHeaders are the host-fact columns `picker offers -v` adds when an offer states
// host facts; hostCells fills them.
var hostHeaders = []string{"RELIABILITY", "MAX CUDA", "DRIVER", "NET MB/S", "DISK GB", "VERIFIED"}

func hostCells(h pricing.Host) []string {
	driver, verified := h.Driver, h.Verification
	if driver == "" {
		driver = "-"
	}
	if verified == "" {
		verified = "-"
	}
	return []string{hostNum(h.Reliability, 3), hostNum(h.MaxCUDA, 1), driver, hostNet(h), hostNum(h.DiskGB, 0), verified}
}

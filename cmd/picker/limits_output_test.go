package main

import (
	"math"
	"strconv"
	"testing"
)

// Issue 18, case 6: CSV printed 1e308 as a negative number (int64 wrap in roundTo).
// Each expected string is the value's own shortest form, so it parses back to it.
func TestNumHugeAndNonFinite(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		prec int
		want string
	}{
		{1e308, 2, "1e+308"},
		{-1e308, 6, "-1e+308"},
		{9.3e18, 2, "9300000000000000000"}, // under 1e21: fixed notation, not wrapped
		{math.Inf(1), 2, "+Inf"},
		{12.3456789, 6, "12.345679"},
		{0.1 + 0.2, 6, "0.3"},
	} {
		got := num(tt.v, tt.prec)
		if got != tt.want {
			t.Errorf("num(%v, %d) = %q, want %q", tt.v, tt.prec, got, tt.want)
		}
		if f, err := strconv.ParseFloat(got, 64); err == nil && !math.IsInf(tt.v, 0) && tt.v != 0 && (f < 0) != (tt.v < 0) {
			t.Errorf("num(%v) = %q changed sign", tt.v, got)
		}
	}
}

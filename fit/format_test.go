package fit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestNumberFormatsMatchFmt: fixed, general and itoa print exactly what the fmt verbs
// they replace in the assumptions print, over edge values and 100,000 random ones
// (every magnitude, both signs, halfway cases of the rounding).
func TestNumberFormatsMatchFmt(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1.5, 2.5, 0.125, 0.005, 0.015, 0.045, 1.005, 2.675,
		0.05, 0.1, 0.123456, 1e-5, 1e-7, 1e21, 1e22, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.Inf(1), math.Inf(-1), math.NaN(), 4.5 * (1 << 20) / GiB, ncclCommBytes / GiB, 2 * ncclCommBytes / GiB}
	r := rand.New(rand.NewPCG(29, 3))
	for range 100_000 {
		switch r.IntN(3) {
		case 0: // any bit pattern: every exponent, subnormals, NaNs
			vals = append(vals, math.Float64frombits(r.Uint64()))
		case 1: // values like the notes' GiB and byte figures
			vals = append(vals, (r.Float64()-0.1)*math.Pow(10, float64(r.IntN(12)-4)))
		default: // decimal halfway points, where rounding could differ
			vals = append(vals, float64(r.IntN(2_000_000)-1_000_000)/1000+0.0005)
		}
	}
	for _, v := range vals {
		for prec := range 5 {
			if got, want := fixed(v, prec), fmt.Sprintf("%."+strconv.Itoa(prec)+"f", v); got != want {
				t.Fatalf("fixed(%v, %d) = %q; fmt %q", v, prec, got, want)
			}
			if got, want := general(v, prec), fmt.Sprintf("%."+strconv.Itoa(prec)+"g", v); got != want {
				t.Fatalf("general(%v, %d) = %q; fmt %q", v, prec, got, want)
			}
		}
	}
	for _, n := range []int{0, 1, -1, 7, 1 << 40, math.MaxInt, math.MinInt} {
		if got, want := itoa(n), fmt.Sprintf("%d", n); got != want {
			t.Errorf("itoa(%d) = %q; fmt %q", n, got, want)
		}
	}
}

package pricing

import (
	"math"
	"strconv"
)

// USDDecimals is how many decimals a dollar figure is shown with: cents from $1 up, four
// decimals below (a $0.1381/h V100, $0.0459 per million tokens), where cents would hide
// the differences that decide a ranking.
func USDDecimals(v float64) int {
	if math.Abs(v) < 1 {
		return 4
	}
	return 2
}

// RoundUSD is v as it is shown (USDDecimals, half away from zero). The recommender calls
// two offers' costs equal when they round alike, so a tie a reader sees is broken by
// speed, not by a difference too small to print.
func RoundUSD(v float64) float64 { return RoundTo(v, USDDecimals(v)) }

// USDBucketTop is the largest value that still shows as RoundUSD(v) (the top of its
// rounding bucket, exclusive): a bound for "costs no more than v as shown".
func USDBucketTop(v float64) float64 {
	r := RoundUSD(v)
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return r
	}
	return r + 0.5*math.Pow(10, -float64(USDDecimals(v)))
}

// FormatUSD is v as the tables print it: RoundUSD's digits.
func FormatUSD(v float64) string {
	return strconv.FormatFloat(RoundUSD(v), 'f', USDDecimals(v), 64)
}

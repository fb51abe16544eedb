package model

import (
	"math/bits"

	"github.com/pickergpu/picker/pricing"
)

// Parameter counts are products of config.json dimensions. A hand-edited file with huge
// sizes must be an error, never a wrapped (negative or nonsense) count, so every product
// and sum of parameter counts goes through mulCount/addCount, which saturate and set
// Model.overflow; ModelFromConfig then rejects the model.

// maxDim bounds a single structural dimension read from a config.json (hidden size,
// layers, heads, experts, vocabulary): 2^24 = 16,777,216, far above any real model
// (vocabularies reach 262,208, hidden sizes 16,384, context lengths 10,485,760), and
// small enough that the product of any two dimensions (2^48) cannot wrap int64 before
// mulCount checks the rest.
const maxDim = 1 << 24

// maxParams is the largest parameter count accepted: 10^15, a thousand times the
// largest published model.
const maxParams = 1_000_000_000_000_000

// mulCount multiplies non-negative counts, saturating at maxParams and flagging m.
func (m *Model) mulCount(fs ...int64) int64 {
	p := uint64(1)
	for _, f := range fs {
		if f < 0 {
			m.overflow = true
			return maxParams
		}
		hi, lo := bits.Mul64(p, uint64(f))
		if hi != 0 || lo > maxParams {
			m.overflow = true
			return maxParams
		}
		p = lo
	}
	return int64(p)
}

// addCount adds non-negative counts, saturating at maxParams and flagging m.
func (m *Model) addCount(xs ...int64) int64 {
	var s int64
	for _, x := range xs {
		if x < 0 || x > maxParams || s > maxParams-x {
			m.overflow = true
			return maxParams
		}
		s += x
	}
	return s
}

// checkCounts rejects a model whose dimensions overflowed or whose counts make no sense.
func (m *Model) checkCounts(src string) error {
	if m.overflow || m.ParamCount <= 0 || m.ParamCount >= maxParams || m.ActiveCount <= 0 || m.ActiveCount > m.ParamCount {
		return pricing.Errorf(pricing.Invalid, "%s: the dimensions give no sensible parameter count (total %d, active %d): a dimension is too large or inconsistent", src, m.ParamCount, m.ActiveCount)
	}
	return nil
}

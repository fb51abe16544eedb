package web

import (
	"container/heap"

	"github.com/pickergpu/picker/store"
)

// maxHistoryIntervals bounds the price intervals one History or instance page reads:
// the newest 10,000 (a few MB of rows and chart), whatever the store holds, so one
// request's memory and time stay bounded (issue 30: a GPU model's 1.6M intervals took
// 16 s and 1.1 GiB per request, and eight at once pushed the daemon past 8 GiB). The
// page says when older ones were left out; `picker history` reads them all.
const maxHistoryIntervals = 10_000

// boundedHistory is q limited to maxHistoryIntervals (one more is asked for, to know
// whether older intervals were left out).
func boundedHistory(q store.HistoryQuery) store.HistoryQuery {
	q.Limit = maxHistoryIntervals + 1
	return q
}

// trimHistory drops the oldest interval of an answer to boundedHistory that was
// over the bound and reports whether it was.
func trimHistory(pts []store.PricePoint) ([]store.PricePoint, bool) {
	if len(pts) > maxHistoryIntervals {
		return pts[len(pts)-maxHistoryIntervals:], true
	}
	return pts, false
}

// cheapestOver returns, for each time of times (ascending), the index in sp of the
// cheapest interval per GPU current at that time (-1 for none): current means
// ValidFrom <= t < ValidTo (nil ValidTo: still current); ties go to the earlier index.
// sp is in ValidFrom order, as the store returns it. It sweeps the times once with a
// heap of the intervals begun so far, dropping those ended, so it costs O(n log n)
// where the scan of every interval at every time it replaces cost O(n²).
func cheapestOver(sp []store.PricePoint, times []int64) []int {
	out := make([]int, len(times))
	h := &perGPUHeap{sp: sp}
	j := 0
	for k, t := range times {
		for ; j < len(sp) && sp[j].ValidFrom.Unix() <= t; j++ {
			heap.Push(h, j)
		}
		for h.Len() > 0 {
			top := sp[h.idx[0]]
			if top.ValidTo == nil || top.ValidTo.Unix() > t {
				break
			}
			heap.Pop(h)
		}
		out[k] = -1
		if h.Len() > 0 {
			out[k] = h.idx[0]
		}
	}
	return out
}

// perGPUHeap orders indexes of sp by price per GPU, then index.
type perGPUHeap struct {
	sp  []store.PricePoint
	idx []int
}

func (h *perGPUHeap) Len() int { return len(h.idx) }
func (h *perGPUHeap) Less(a, b int) bool {
	pa, pb := h.sp[h.idx[a]], h.sp[h.idx[b]]
	va, vb := pa.PriceUSDHr/pa.GPUCount, pb.PriceUSDHr/pb.GPUCount
	if va != vb {
		return va < vb
	}
	return h.idx[a] < h.idx[b]
}
func (h *perGPUHeap) Swap(a, b int) { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *perGPUHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *perGPUHeap) Pop() any {
	n := len(h.idx) - 1
	x := h.idx[n]
	h.idx = h.idx[:n]
	return x
}

package model

// TPDegrees are the tensor-parallel degrees the model allows up to limit: divisors of its
// attention heads (vLLM and TGI shard the query heads evenly; KV heads are replicated when
// the degree exceeds them). Image pipelines and models without attention shape allow
// any degree.
func (m *Model) TPDegrees(limit int) []int {
	var out []int
	for d := 1; d <= limit; d++ {
		if m.TPValid(d) {
			out = append(out, d)
		}
	}
	return out
}

// TPValid says whether d GPUs can split the attention heads evenly.
func (m *Model) TPValid(d int) bool {
	h := m.Dec.Heads
	return h <= 0 || d <= 1 || h%int64(d) == 0
}

// LargestTP is the largest valid tensor-parallel degree not above n.
func (m *Model) LargestTP(n int) int {
	for d := n; d > 1; d-- {
		if m.TPValid(d) {
			return d
		}
	}
	return 1
}

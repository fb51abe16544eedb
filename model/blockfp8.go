package model

// BlockFP8 reports whether the checkpoint stores fp8 weights with one scale per
// weight_block_size block (DeepSeek-V3/R1, Qwen3-FP8: 128×128): engines run those layers
// through block-scaled fp8 GEMMs (DeepGEMM, vLLM's and SGLang's w8a8_block_fp8_matmul),
// whose time at decode batch sizes the time model bounds below (jobtime/serve.go).
func (q *CheckpointQuant) BlockFP8() bool {
	return q != nil && q.method == "fp8" && q.block[0] > 0 && q.block[1] > 0
}

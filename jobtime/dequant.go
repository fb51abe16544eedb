package jobtime

// QLoRA's dequantization (issue 23). Every forward and backward pass of a bitsandbytes
// 4-bit linear layer dequantizes its weight to 16 bits before the matmul (bitsandbytes
// MatMul4Bit: dequantize_4bit in forward and again for the input's gradient; QLoRA,
// Dettmers et al. 2023 arXiv:2305.14314 section 3), and checkpointing's recomputed
// forward does it a third time. The kernel reads the packed weight (0.5 B per parameter)
// and its blockwise absmax (one fp32 per 64-weight block, bitsandbytes' default
// blocksize for 4-bit: 4/64 B; double quantization shrinks it, ignored here, which errs
// slow by under 2 %) and writes the 16-bit weight (2 B); the matmul then reads that copy
// (2 B). The time is per micro-batch and proportional to the parameters, so it
// dominates short steps and vanishes at long ones.
const (
	dequantKernelBytesPerParam = 0.5 + 4.0/64 + 2
	dequantGEMMBytesPerParam   = 2.0
	// dequantKernelSlowdown: bitsandbytes' kDequantizeBlockwise for NF4/FP4 decodes each
	// nibble through branches; replacing them with a warp-shuffled lookup table made the
	// kernel 1.36x-2.07x faster on P100, A100 and H100 at every problem size
	// (bitsandbytes PR #1747, Sep 2025, CUDA 12.8; the branchless kernel landed as PR
	// #1746). The branching kernel is what QLoRA runs published before then used, so the
	// dequantization runs at the streaming share (bwEfficiency) over the middle of that
	// range, sqrt(1.36*2.07) = 1.68; a bitsandbytes with the lookup-table kernel is up to
	// that much faster.
	dequantKernelSlowdown = 1.68
)

// dequantBytesPerParam is the bytes one pass of a 4-bit layer moves per parameter,
// kernel and matmul read together (the figure the step's memory-bound share sees).
const dequantBytesPerParam = dequantKernelBytesPerParam + dequantGEMMBytesPerParam

// dequantSeconds is one micro-batch's dequantization over passes passes of every 4-bit
// weight, on bandwidth bw (bytes/s, sustained) split over tp tensor-parallel GPUs.
func (m *TimeModel) dequantSeconds(bw, tp, passes float64) float64 {
	perPass := m.QuantParams * (dequantKernelBytesPerParam*dequantKernelSlowdown + dequantGEMMBytesPerParam) / bw
	return perPass * passes / tp
}

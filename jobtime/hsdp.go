package jobtime

import "math"

// hybridComm is one micro-batch's data-parallel traffic under hybrid sharding (--shard
// hsdp: FSDP ShardingStrategy.HYBRID_SHARD, or FSDP2 fully_shard on a 2-D mesh): the
// parameters are all-gathered (forward and backward) and the gradients reduce-scattered
// among a node's GPUs over its GPU-GPU link, as FSDP does inside one node; then each GPU
// all-reduces its gradient shard (1/k of the gradients) with the GPUs holding the same
// shard on the other nodes, a ring over the network (2(r-1)/r of the shard per GPU, once
// per optimizer step). The two run over different links, and FSDP issues the replicas'
// all-reduce on a stream of its own (FSDP1's _all_reduce_stream), so they pipeline unit by
// unit and the slower sets the pace (hybrid sharding: Zhao et al. 2023, arXiv:2304.11277
// section 3.2).
func (m *TimeModel) hybridComm(g *TimeGPU, n, weightBytes, accum float64) float64 {
	k := g.NodeGPUs
	if k <= 0 {
		k = math.Min(n, gpusPerNode)
	}
	k = math.Min(k, n)
	intra := g.NodeLinkGBs
	if intra <= 0 {
		intra = g.LinkGBs
	}
	if intra <= 0 {
		intra = math.Max(g.HostLinkGBs, 16) // PCIe
	}
	intra *= linkEfficiency * 1e9
	replicas := n / k
	comm := (k - 1) / k * (2*weightBytes + m.TrainableParams*m.ComputeBytes/accum) / intra
	if replicas > 1 {
		net := linkGBs(&TimeGPU{Arch: g.Arch, LinkGBs: g.LinkGBs, HostLinkGBs: g.HostLinkGBs, Count: gpusPerNode + 1}) * 1e9
		comm = math.Max(comm, 2*(replicas-1)/replicas*m.TrainableParams*m.ComputeBytes/k/accum/net)
	}
	return comm
}

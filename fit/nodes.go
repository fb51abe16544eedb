package fit

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/pickergpu/picker/model"
	"github.com/pickergpu/picker/pricing"
)

// maxNodes bounds --nodes; maxAutoNodes bounds what --nodes auto tries per offer.
const (
	maxNodes     = 64
	MaxAutoNodes = 16
)

// nodesFlag parses --nodes: auto, or a whole number 1..maxNodes.
func nodesFlag(v string) (int, bool, error) {
	if v == "" {
		return 0, false, nil
	}
	if strings.EqualFold(v, "auto") {
		return 0, true, nil
	}
	n, err := intFlag("nodes", v, 1)
	if err != nil {
		return 0, false, pricing.ParamErrorf(pricing.Invalid, "nodes", "--nodes %q: want auto or a whole number from 1 to %d", v, maxNodes)
	}
	if n > maxNodes {
		return 0, false, pricing.ParamErrorf(pricing.Invalid, "nodes", "--nodes %d: at most %d", n, maxNodes)
	}
	return n, false, nil
}

// world is the number of GPUs the job spans: GPUs per node × nodes.
func (r *resolved) world() int { return r.GPUs * max(r.Nodes, 1) }

// resolveNodes checks a multi-node job and fills the sharding it implies (a resolve
// step: runs after the GPU count is defaulted and before the sharding is).
func resolveNodes(m *model.Model, r *resolved) error {
	if r.NodesAuto {
		return invalid("nodes", "--nodes auto asks recommend for the fewest instances that fit; an estimate needs a number (--nodes 2)")
	}
	if r.Nodes <= 1 {
		r.Nodes = 1
		return nil
	}
	switch {
	case m.Kind == model.KindDiffusion:
		return invalid("nodes", "--nodes %d: image pipelines run on one GPU each; multi-node is modelled for language models", r.Nodes)
	case r.IsTraining() && !r.Shard.Sharded():
		r.Shard = "zero3"
		r.addNote("--nodes " + itoa(r.Nodes) + ": training shards parameters, gradients and optimizer states with ZeRO-3 across all nodes")
	case r.IsTraining() && r.Shard == "tp":
		return invalid("shard", "--nodes %d --shard tp: tensor parallelism is modelled for inference; multi-node training uses zero3 or fsdp", r.Nodes)
	case !r.IsTraining() && r.Shard == "none":
		return invalid("shard", "--nodes %d --shard none: separate replicas need no cluster; use one node per replica, or --shard tp for one model across nodes", r.Nodes)
	case !r.IsTraining():
		r.Shard = "tp"
	}
	if r.Offload.Enabled() {
		return invalid("offload", "--nodes %d with --offload %s: offload is modelled on one instance; drop one of them", r.Nodes, r.Offload)
	}
	return nil
}

// layout says how a multi-node job is laid out.
func (r *resolved) layout() string {
	if r.Nodes <= 1 {
		return ""
	}
	if r.IsTraining() {
		name := map[Shard]string{"zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3", "fsdp": "FSDP", "hsdp": "HSDP"}[r.Shard]
		what := map[Shard]string{"zero1": "optimizer states", "zero2": "gradients and optimizer states"}[r.Shard]
		if what == "" {
			what = "parameters, gradients and optimizer states"
		}
		if r.Shard == "hsdp" {
			return fmt.Sprintf("HSDP across %d nodes × %d GPUs = %d GPUs; %s sharded over the %d GPUs of each node, replicated across the %d nodes",
				r.Nodes, r.GPUs, r.world(), what, r.GPUs, r.Nodes)
		}
		return fmt.Sprintf("%s data parallel across %d nodes × %d GPUs = %d GPUs; %s sharded over all %d",
			name, r.Nodes, r.GPUs, r.world(), what, r.world())
	}
	return fmt.Sprintf("tensor parallel %d within each node × pipeline parallel %d across nodes = %d GPUs; each node holds 1/%d of the layers",
		r.GPUs, r.Nodes, r.world(), r.Nodes)
}

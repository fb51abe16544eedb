package recommend

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// Jobs bigger than one instance. --nodes N runs the job on N identical instances of one
// offer (same provider, region and type), priced N times, and only on instance types
// sold with a cluster interconnect (interconnect.csv: EFA, InfiniBand, GPUDirect-TCPX/
// TCPXO, RDMA cluster networks; a source per row). The layout follows the usual recipe
// (Megatron-LM, Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on
// GPU Clusters", section 3.3: tensor parallelism within a node's NVLink domain, pipeline
// and data parallelism across nodes):
//
//   - training: ZeRO-3 / FSDP over all N × GPUs (Rajbhandari et al. 2020): parameters,
//     gradients and optimizer states divided by the world size; activations per GPU are
//     those of its own micro-batch (data parallel);
//   - inference: tensor parallel over the GPUs of a node, pipeline parallel across nodes
//     (vLLM's --tensor-parallel-size G --pipeline-parallel-size N): each node holds 1/N of
//     the layers, so weights and KV cache divide by G × N (KV heads by at most G).
//
// Inter-node bandwidth is not modelled in memory; it is what the interconnect table is for.

//go:embed interconnect.csv
var interconnectCSV []byte

// Interconnect is one instance type's cluster network.
type Interconnect struct {
	Provider     string  `json:"provider"`
	InstanceType string  `json:"instance_type"`
	Name         string  `json:"interconnect"`
	GbpsPerNode  float64 `json:"gbps_per_node"`
	Source       string  `json:"source"`
}

var (
	icOnce sync.Once
	icBy   map[string]Interconnect
	icErr  error
)

func icKey(provider, instanceType string) string {
	return strings.ToLower(provider) + "\x00" + strings.ToLower(instanceType)
}

// parseInterconnects reads interconnect.csv's format.
func parseInterconnects(data []byte) (map[string]Interconnect, error) {
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("interconnect.csv: %w", err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "provider,instance_type,interconnect,gbps_per_node,source" {
		return nil, fmt.Errorf("interconnect.csv: unexpected header")
	}
	out := map[string]Interconnect{}
	for i, r := range rows[1:] {
		gbps, err := strconv.ParseFloat(r[3], 64)
		if err != nil || gbps <= 0 || r[0] == "" || r[1] == "" || r[2] == "" || r[4] == "" {
			return nil, fmt.Errorf("interconnect.csv:%d: want provider, instance type, interconnect, a positive gbps and a source", i+2)
		}
		k := icKey(r[0], r[1])
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("interconnect.csv:%d: %s %s listed twice", i+2, r[0], r[1])
		}
		out[k] = Interconnect{Provider: r[0], InstanceType: r[1], Name: r[2], GbpsPerNode: gbps, Source: r[4]}
	}
	return out, nil
}

// LookupInterconnect returns the cluster interconnect of an instance type, if it has one.
func LookupInterconnect(provider, instanceType string) (Interconnect, bool) {
	icOnce.Do(func() { icBy, icErr = parseInterconnects(interconnectCSV) })
	if icErr != nil {
		panic("fit: embedded " + icErr.Error()) // a build defect, caught by tests
	}
	ic, ok := icBy[icKey(provider, instanceType)]
	return ic, ok
}

// multiVariant estimates the job on k.nodes instances of k.gpus GPUs each.
func (e *evaluator) multiVariant(k variantKey) *variant {
	if v, ok := e.multiCache[k]; ok {
		return v
	}
	j := e.job
	j.GPUs, j.Nodes, j.NodesAuto = k.gpus, k.nodes, false
	v := e.estimate(j, k.fp16)
	e.multiCache[k] = v
	return v
}

// evaluateNodes judges offer i for a multi-node job: --nodes N on types with a cluster
// interconnect; --nodes auto on one instance of any type, else the fewest instances of a
// type with an interconnect that fit.
func (e *evaluator) evaluateNodes(i int) (cand, bool) {
	o := &e.in.Offers[i]
	_, cluster := LookupInterconnect(o.Provider, o.InstanceType)
	cluster = cluster && !o.Fractional()
	if !e.autoNodes {
		if !cluster {
			return cand{}, false
		}
		return e.evaluateAt(i, e.nodes)
	}
	if e.clustersOnly && !cluster {
		return cand{}, false
	}
	if !e.clustersOnly {
		if cd, ok := e.evaluateAt(i, 1); ok || !cluster {
			return cd, ok
		}
	}
	for n := 2; n <= fit.MaxAutoNodes; n++ {
		if cd, ok := e.evaluateAt(i, n); ok {
			return cd, true
		}
	}
	return cand{}, false
}

// describeNodes fills a multi-node fit's plan.
func (e *evaluator) describeNodes(f *Fit, cd cand) {
	f.Nodes = cd.vk.nodes
	f.ClusterPriceUSDHr = fit.Round3(f.PriceUSDHr * float64(cd.vk.nodes))
	if v := e.variant(cd.vk); v.res != nil {
		f.Layout = v.res.Layout
	}
	if ic, ok := LookupInterconnect(f.Provider, f.InstanceType); ok {
		f.Interconnect = fmt.Sprintf("%s, %g Gb/s per node", ic.Name, ic.GbpsPerNode)
	}
}

// checkNodeOffers: --nodes N (N > 1) needs at least one offered instance type with a
// cluster interconnect; otherwise the request is an input error naming the types.
func checkNodeOffers(in *RecommendInput) error {
	if in.Job.Nodes <= 1 || len(in.Offers) == 0 {
		return nil
	}
	var types []string
	for i := range in.Offers {
		o := &in.Offers[i]
		if _, ok := LookupInterconnect(o.Provider, o.InstanceType); ok {
			return nil
		}
		if t := o.Provider + " " + o.InstanceType; len(types) < 5 && !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return pricing.ParamErrorf(pricing.Invalid, "nodes", "--nodes %d: no offered instance type has a cluster interconnect (offered: %s…); multi-node jobs need EFA, InfiniBand, GPUDirect-TCPX or RDMA cluster networking (recommend/interconnect.csv lists the types)",
		in.Job.Nodes, strings.Join(types, ", "))
}

// nodesMiss names, for a job that fits no single instance, the fewest instances of a
// clustered type that would run it and what they cost; a training job that does not fit
// even so is tried once more with gradient checkpointing (ZeRO-3 divides the states, not
// the activations).
func nodesMiss(in *RecommendInput, caps []*gpuCaps) string {
	if in.Job.Nodes > 1 || in.Job.NodesAuto {
		return ""
	}
	try := func(j fit.Job, flags string) string {
		sub := *in
		sub.Job = j
		sub.Job.NodesAuto = true
		best := rankFits(newEvaluator(&sub, sub.Job, caps), 1)
		if len(best) == 0 || best[0].Nodes < 2 {
			return ""
		}
		b := best[0]
		return fmt.Sprintf("; `--nodes %d%s` would fit: %d × %s %s %s (%d GPUs, %s) at $%s/h (%s)",
			b.Nodes, flags, b.Nodes, b.Provider, b.Region, b.InstanceType, b.GPUsUsed*b.Nodes, b.Interconnect, num2(b.ClusterPriceUSDHr), b.Layout)
	}
	job, flags := in.Job, ""
	if g := clusterNodeGPUs(in); g > 0 {
		// --gpus asks for more GPUs than any clustered instance has: --gpus is per node
		// once --nodes is given, so the plan to name is nodes of the largest such instance.
		job.GPUs, flags = g, fmt.Sprintf(" --gpus %d", g)
	}
	if s := try(job, flags); s != "" {
		return s
	}
	if job.IsTraining() && !job.GradCkpt {
		j := job
		j.GradCkpt = true
		if s := try(j, flags+" --grad-ckpt"); s != "" {
			return s
		}
	}
	return fmt.Sprintf("; no cluster of up to %d instances fits either", fit.MaxAutoNodes)
}

// clusterNodeGPUs is, when --gpus pins more GPUs than every offered instance with a
// cluster interconnect has, the largest GPU count of those instances; 0 otherwise.
func clusterNodeGPUs(in *RecommendInput) int {
	if !in.PinGPUs {
		return 0
	}
	most := 0
	for i := range in.Offers {
		o := &in.Offers[i]
		n := int(math.Floor(o.GPUCount + 1e-9))
		if _, ok := LookupInterconnect(o.Provider, o.InstanceType); ok {
			if n >= in.Job.GPUs {
				return 0
			}
			most = max(most, n)
		}
	}
	return most
}

// cheapestCluster is, for --nodes auto when every listed offer is a single instance, the
// cheapest plan of two or more instances: a cluster can still be what the user wants
// (more throughput, or GPUs that are available).
func cheapestCluster(in *RecommendInput, caps []*gpuCaps, fits []Fit) *Fit {
	if !in.Job.NodesAuto {
		return nil
	}
	for _, f := range fits {
		if f.Nodes > 1 {
			return nil
		}
	}
	ev := newEvaluator(in, in.Job, caps)
	ev.clustersOnly = true
	best := rankFits(ev, 1)
	if len(best) == 0 {
		return nil
	}
	return &best[0]
}

// spanPinnedGPUs plans a pinned --gpus G that no offered instance holds as G/c
// instances of c GPUs, c the largest per-instance count among instance types with a
// cluster interconnect that divides G: --gpus is the GPUs the job runs on (CONTRACT),
// so "--gpus 64" asks for a 64-GPU job, which only a cluster can run. It rewrites
// in.Job (GPUs per node, Nodes) and returns the note that says so; "" when it leaves
// the job as asked (some instance has G GPUs, --nodes given, or no cluster divides G).
func spanPinnedGPUs(in *RecommendInput) string {
	g := in.Job.GPUs
	if !in.PinGPUs || g <= 1 || in.Job.Nodes > 1 || in.Job.NodesAuto {
		return ""
	}
	per := 0
	for i := range in.Offers {
		o := &in.Offers[i]
		if o.Fractional() {
			continue
		}
		n := int(math.Floor(o.GPUCount + 1e-9))
		if n >= g {
			return "" // an instance holds the whole job
		}
		if n > per && g%n == 0 {
			if _, ok := LookupInterconnect(o.Provider, o.InstanceType); ok {
				per = n
			}
		}
	}
	if per == 0 {
		return ""
	}
	in.Job.GPUs, in.Job.Nodes = per, g/per
	return fmt.Sprintf("no instance has %d GPUs: planned as %d instances × %d GPUs over a cluster interconnect (--nodes %d --gpus %d)", g, g/per, per, g/per, per)
}

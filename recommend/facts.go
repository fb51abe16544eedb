package recommend

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/pricing"
)

// FactsKey names an offer shape's fit facts: everything the recommender reads of an
// offer to judge it, but its price and its key. Two offers with one key fit a job or
// don't alike, need the same memory, run it at the same speed and are billed alike, so
// only their prices (then keys) tell them apart: the same property as pricing.Shape's,
// over fewer facts. A marketplace lists every host as its own instance type, so 100k
// offers are 100k shapes but a few thousand fact sets; the store indexes current offers
// by fact set (store.ReadShapes reads each set's cheapest), and ShapePlan plans over
// the sets just as over shapes.
//
// The instance type and vCPUs are left out: the evaluation reads the instance type only
// through the GPU link (jobtime.InstanceGPULink) and the cluster interconnect
// (LookupInterconnect), which are in the key instead, and vCPUs not at all
// (TestEvaluationDependsOnlyOnFacts). Provider (billing, store order) and purchase
// (filters, store order) stay in. The key is opaque; the store compares it for equality.
func FactsKey(sh pricing.Shape) string {
	var b strings.Builder
	f := func(v float64) { b.WriteString(strconv.FormatFloat(v, 'g', -1, 64)); b.WriteByte('|') }
	b.WriteString(sh.Provider + "|" + string(sh.Purchase) + "|" + sh.GPUModel + "|")
	f(sh.GPUCount)
	f(sh.GPUMemGiB)
	f(sh.RAMGiB)
	if jobtime.InstanceGPULink(sh.Provider, sh.InstanceType) == 0 {
		b.WriteString("pcie|")
	}
	if ic, ok := LookupInterconnect(sh.Provider, sh.InstanceType); ok {
		b.WriteString("ic ")
		f(ic.GbpsPerNode)
	}
	return b.String()
}

// factsRules is bumped whenever FactsKey's rules change without the embedded tables
// changing (a new fact, jobtime.InstanceGPULink's name rules): a store classified
// under other rules reclassifies its shapes (FactsVersion). 2: a set is per CUDAClass,
// not per host CUDA ceiling.
const factsRules = 2

// FactsVersion identifies the rules FactsKey classifies by: factsRules and the
// interconnect table it reads. The store records it beside the fact sets and uses them
// only while it matches, so a picker with other rules never reads sets it did not make.
func FactsVersion() string {
	h := fnv.New64a()
	h.Write(interconnectCSV)
	h.Write([]byte(fmt.Sprint(cudaFloors)))
	return strconv.Itoa(factsRules) + "-" + strconv.FormatUint(h.Sum64(), 16)
}

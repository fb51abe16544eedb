package main

import (
	"fmt"
	"io"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/recommend"
)

// writeServeLines prints, under -v, the command that starts each serving pick's engine
// as it was sized (recommend.Fit.Serving.Launch, the JSON's serving.launch): the same
// tensor-parallel size, max_model_len and memory fraction the estimate used.
func writeServeLines(w io.Writer, offers []recommend.Fit) {
	first := true
	for _, f := range offers {
		if f.Serving == nil || f.Serving.Launch == "" {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nlaunch (each offer's engine command, from the numbers above):")
			first = false
		}
		fmt.Fprintf(w, "  %s %s: %s\n", f.Provider, f.InstanceType, f.Serving.Launch)
	}
}

// reserveName names what device_total holds beyond the tensors: the CUDA context and the
// caching allocator's slack, or, for an engine with a memory fraction, the context and
// the share of the GPU the engine leaves outside its budget.
func reserveName(r *fit.Result) string {
	if s := r.Serving; s != nil && s.MemoryFraction > 0 {
		return fmt.Sprintf("cuda context+%s's %.0f %% outside its budget", s.Engine, 100*(1-s.MemoryFraction))
	}
	return "cuda context+allocator"
}

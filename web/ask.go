package web

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/jobtime"
	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// field is one form control, named as the CLI flag it sets.
type field struct {
	Name    string
	Label   string
	Kind    string   // text, number, select, checkbox, tristate
	Options []string // select: allowed values; "" is the default entry
	Default string   // what an empty value means, shown as placeholder or the empty option
	Help    string
	List    string // datalist id for suggestions
	Step    string // number: "any" for decimals
	Wide    bool

	// Per request.
	Value   string
	Checked bool
	Error   string
}

// fieldGroup is a fieldset of the form.
type fieldGroup struct {
	Legend string
	Fields []field
	Open   bool // advanced groups start closed (a <details>) unless they hold a value
}

// askGroups is the Ask form, in the CONTRACT's flag order. Every name is a flag of
// `picker recommend`, so the query string of a result page is the command line.
var askGroups = []fieldGroup{
	{Legend: "Model and job", Open: true, Fields: []field{
		{Name: "model", Label: "Model", Kind: "text", List: "models", Help: "catalog name or Hugging Face id", Default: "llama-2-7b", Wide: true},
		{Name: "task", Label: "Task", Kind: "select", Options: names(fit.Tasks), Default: "inference"},
		{Name: "precision", Label: "Precision", Kind: "select", Options: names(fit.Precisions), Default: "bf16 / bf16-mixed"},
		{Name: "quant", Label: "Quantization", Kind: "select", Options: names(fit.Quants), Default: "none"},
		{Name: "batch", Label: "Micro-batch per GPU", Kind: "number", Default: "1"},
		{Name: "grad-accum", Label: "Gradient accumulation", Kind: "number", Default: "framework's", Help: "micro-batches per step"},
		{Name: "seq-len", Label: "Sequence length", Kind: "number", Default: "2048"},
		{Name: "target-tokens", Label: "Target tokens", Kind: "number", Default: "sequence length", Help: "encoder–decoder (T5, BART): the decoder's length"},
		{Name: "gpus", Label: "GPUs", Kind: "number", Default: "each offer's", Help: "pin the GPU count"},
		{Name: "nodes", Label: "Instances", Kind: "text", Default: "1", Help: "a number, or auto (needs a cluster interconnect)"},
		{Name: "grad-ckpt", Label: "Gradient checkpointing", Kind: "tristate", Default: "framework's", Help: "hf: on for QLoRA; torchtune: on for training"},
	}},
	{Legend: "Training details", Fields: []field{
		{Name: "framework", Label: "Framework", Kind: "select", Options: names(fit.Frameworks), Default: "hf", Help: "whose defaults fill unset fields"},
		{Name: "optimizer", Label: "Optimizer", Kind: "select", Options: names(fit.Optimizers), Default: "adamw"},
		{Name: "optimizer-step", Label: "Optimizer step", Kind: "select", Options: names(fit.OptimizerSteps), Default: "framework's"},
		{Name: "loss", Label: "Loss", Kind: "select", Options: names(fit.Losses), Default: "framework's"},
		{Name: "norm", Label: "Norm kernel", Kind: "select", Options: names(fit.Norms), Default: "standard"},
		{Name: "allocator", Label: "CUDA allocator", Kind: "select", Options: names(fit.Allocators), Default: "default", Help: "expandable: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"},
		{Name: "lora-r", Label: "LoRA rank", Kind: "number", Default: "8"},
		{Name: "lora-targets", Label: "LoRA targets", Kind: "text", Default: "q_proj,v_proj", Help: "comma list or all-linear"},
		{Name: "lora-dropout", Label: "LoRA dropout", Kind: "number", Step: "any", Default: "framework's"},
		{Name: "shard", Label: "Sharding", Kind: "select", Options: names(fit.Shards), Default: "none / tp"},
		{Name: "offload", Label: "Offload", Kind: "select", Options: names(fit.Offloads), Default: "none"},
		{Name: "attention", Label: "Attention", Kind: "select", Options: names(fit.Attentions), Default: "sdpa"},
		{Name: "double-quant", Label: "Double quantization", Kind: "tristate", Default: "framework's", Help: "torchtune: on for QLoRA"},
		{Name: "params", Label: "Parameter count", Kind: "text", Help: "when no architecture is known (7b)"},
		{Name: "resolution", Label: "Image resolution", Kind: "text", Help: "image-gen: WxH"},
		{Name: "images", Label: "Images per batch", Kind: "number", Default: "1"},
		{Name: "image-count", Label: "Images in the job", Kind: "number", Step: "any", Help: "for the job's dollars"},
		{Name: "steps", Label: "Denoising steps", Kind: "number", Default: "pipeline's"},
		{Name: "vae-tiling", Label: "VAE tiling", Kind: "checkbox"},
	}},
	{Legend: "Inference and time", Fields: []field{
		{Name: "engine", Label: "Inference engine", Kind: "select", Options: jobtime.Engines, Default: jobtime.DefaultEngine},
		{Name: "split", Label: "Multi-GPU split", Kind: "select", Options: names(fit.Splits), Default: "tensor", Help: "layer: llama.cpp's default"},
		{Name: "kv-cache-dtype", Label: "KV cache dtype", Kind: "select", Options: names(fit.KVCacheDtypes), Default: "auto"},
		{Name: "prompt-tokens", Label: "Prompt tokens", Kind: "number", Step: "any", Help: "per request"},
		{Name: "output-tokens", Label: "Output tokens", Kind: "number", Step: "any", Help: "per request"},
		{Name: "gpu-memory-utilization", Label: "Engine memory fraction", Kind: "number", Step: "any", Help: "vllm/sglang/trt-llm, 0-1"},
		{Name: "max-model-len", Label: "Max model length", Kind: "number", Help: "context per sequence (default the model's)"},
		{Name: "requests", Label: "Requests", Kind: "number", Step: "any", Help: "in the whole job"},
		{Name: "setup", Label: "Setup", Kind: "text", Help: "billed start-up (10m)"},
		{Name: "deadline", Label: "Deadline", Kind: "text", Help: "finish within (6h)"},
		{Name: "mfu", Label: "GEMM efficiency", Kind: "number", Step: "any", Help: "0-1; default per GPU generation"},
	}},
	{Legend: "Spot risk and the all-in bill", Fields: []field{
		{Name: "dataset-gb", Label: "Dataset GB", Kind: "number", Step: "any", Help: "on the job's disk"},
		{Name: "upload-gb", Label: "Upload GB", Kind: "number", Step: "any", Default: "trained weights", Help: "egress out"},
		{Name: "checkpoint-every", Label: "Checkpoint every", Kind: "text", Default: "Young/Daly", Help: "spot (30m)"},
		{Name: "spot-mtbi", Label: "Spot MTBI", Kind: "text", Default: "the band's", Help: "mean time between interruptions (20h)"},
	}},
	{Legend: "Which offers", Fields: []field{
		{Name: "provider", Label: "Providers", Kind: "text", List: "providers", Help: "comma list"},
		{Name: "region", Label: "Regions", Kind: "text", Help: "comma list"},
		{Name: "gpu-model", Label: "GPU models", Kind: "text", List: "gpu-models", Help: "comma list"},
		{Name: "purchase", Label: "Purchase", Kind: "select", Options: []string{"on-demand", "spot", "any"}, Default: "on-demand"},
		{Name: "max-price", Label: "Max $/h", Kind: "number", Step: "any"},
		{Name: "min-reliability", Label: "Min host reliability", Kind: "number", Step: "any", Help: "0-1; marketplace hosts"},
		{Name: "max-gpus", Label: "Max GPUs", Kind: "number"},
		{Name: "vendor", Label: "GPU vendor", Kind: "select", Options: []string{recommend.VendorNVIDIA, recommend.VendorAMD}, Default: recommend.VendorAny},
		{Name: "rank", Label: "Rank by", Kind: "select", Options: []string{"job", "hourly"}, Default: "job", Help: "job: the cost of the work"},
		{Name: "tokens", Label: "Job tokens", Kind: "text", Help: "for the job's dollars (2e9)"},
		{Name: "top", Label: "Offers shown", Kind: "number", Default: "10"},
		{Name: "headroom", Label: "Headroom %", Kind: "number", Step: "any", Default: "5"},
		{Name: "by-region", Label: "One row per region", Kind: "checkbox"},
		{Name: "ignore-quota", Label: "Ignore quotas", Kind: "checkbox", Help: "rank what the account's quotas do not allow"},
	}},
}

// AskFieldNames are the Ask form's fields, named as `picker recommend`'s flags (so
// cmd/picker can test that every flag has a field).
func AskFieldNames() []string {
	var out []string
	for _, g := range askGroups {
		for _, f := range g.Fields {
			out = append(out, f.Name)
		}
	}
	return out
}

// names are typed enum values as the strings a form offers.
func names[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// askParams keeps the form's parameters that are set, one value each, in form order
// (names). A checkbox is "true" when ticked (a bare ?name too). A tristate is a switch
// whose default depends on the task or framework (hf QLoRA checkpoints by default), so
// "off" must reach the binder as "false" rather than be dropped as an unticked box
// would be; its select sends "default" for the framework's choice (an empty value is
// a bare switch, true, as the CLI and the API read it), and any other value goes to
// the binder as typed, for it to refuse naming the flag.
func askParams(q url.Values) (url.Values, []string) {
	out := url.Values{}
	var order []string
	for _, g := range askGroups {
		for _, f := range g.Fields {
			v := strings.TrimSpace(q.Get(f.Name))
			switch f.Kind {
			case "checkbox":
				if _, ok := q[f.Name]; !ok {
					continue
				}
				switch strings.ToLower(v) {
				case "", "on", "true", "1", "yes":
					v = "true"
				default:
					continue
				}
			case "tristate":
				if _, ok := q[f.Name]; !ok {
					continue
				}
				switch strings.ToLower(v) {
				case tristateDefault:
					continue
				case "", "on", "true", "1", "yes":
					v = "true"
				case "off", "false", "0", "no":
					v = "false"
				}
			}
			if v == "" {
				continue
			}
			out.Set(f.Name, v)
			order = append(order, f.Name)
		}
	}
	return out, order
}

// hasEmpty reports whether q holds an empty value.
func hasEmpty(q url.Values) bool {
	for _, vs := range q {
		if slices.Contains(vs, "") {
			return true
		}
	}
	return false
}

// tristateDefault is the value a tristate's select sends for "the framework's default".
const tristateDefault = "default"

// submitted reports whether q came from the form (every field sent, empty ones and a
// tristate left at its default too) rather than from a link: such a query is
// answered at the short URL of what was asked.
func submitted(q url.Values) bool {
	if hasEmpty(q) {
		return true
	}
	for name, vs := range q {
		if isKind(name, "tristate") && slices.Contains(vs, tristateDefault) {
			return true
		}
	}
	return false
}

// commandLine is the `picker recommend` invocation that asks what the form asked.
func commandLine(params url.Values, order []string) string {
	var b strings.Builder
	b.WriteString("picker recommend")
	for _, name := range order {
		v := params.Get(name)
		b.WriteString(" --" + name)
		if switchField(name) {
			// A switch is bare when on; off is --name=false (a value after a space would
			// be a stray argument to the CLI).
			if v != "true" {
				b.WriteString("=" + shellQuote(v))
			}
			continue
		}
		b.WriteString(" " + shellQuote(v))
	}
	return b.String()
}

// switchField reports whether the form field name is a switch (checkbox or tristate).
func switchField(name string) bool { return isKind(name, "checkbox") || isKind(name, "tristate") }

func isKind(name, kind string) bool {
	for _, g := range askGroups {
		for _, f := range g.Fields {
			if f.Name == name {
				return f.Kind == kind
			}
		}
	}
	return false
}

// shellQuote leaves plain words alone and single-quotes anything a POSIX shell would
// split or expand.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,/:+=@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// barSegment is one part of the memory breakdown's stacked bar, in SVG user units
// (the bar is 1000 wide) so no inline style is needed.
type barSegment struct {
	Name  string
	Class string
	GiB   float64
	X, W  float64
}

// breakdownBar splits device_total_gib into its parts: the estimator's breakdown of the
// peak, then CUDA context and allocator overhead.
func breakdownBar(r *fit.Result) []barSegment {
	b := r.Breakdown
	parts := []barSegment{
		{Name: "weights", Class: "weights", GiB: b.Weights},
		{Name: "gradients", Class: "gradients", GiB: b.Gradients},
		{Name: "optimizer states", Class: "optimizer", GiB: b.Optimizer},
		{Name: "activations", Class: "activations", GiB: b.Activations},
		{Name: "KV cache", Class: "kv", GiB: b.KVCache},
		{Name: "workspace", Class: "workspace", GiB: b.Workspace},
		{Name: "CUDA context", Class: "context", GiB: r.CUDAContextGiB},
		{Name: "allocator overhead", Class: "allocator", GiB: r.AllocatorOverheadGiB},
	}
	total := 0.0
	for _, p := range parts {
		total += p.GiB
	}
	var out []barSegment
	x := 0.0
	for _, p := range parts {
		if p.GiB <= 0 || total <= 0 {
			continue
		}
		p.X, p.W = x, 1000*p.GiB/total
		x += p.W
		out = append(out, p)
	}
	return out
}

// ladderRow is a savings-ladder step with a link that asks again with the change.
type ladderRow struct {
	recommend.LadderStep
	AskURL string
	// RankedBy and RankLabel: the ranking's figure, whose column the row fills ("" label
	// per hour).
	RankedBy, RankLabel string
}

// applyFlags returns params with a ladder step's flags ("--batch 1 --grad-ckpt",
// "--grad-ckpt=false") applied.
func applyFlags(params url.Values, flags string) url.Values {
	out := url.Values{}
	for k, v := range params {
		out[k] = append([]string(nil), v...)
	}
	words := strings.Fields(flags)
	for i := 0; i < len(words); i++ {
		name, ok := strings.CutPrefix(words[i], "--")
		if !ok {
			continue
		}
		if n, v, ok := strings.Cut(name, "="); ok {
			out.Set(n, v)
			continue
		}
		if i+1 < len(words) && !strings.HasPrefix(words[i+1], "--") {
			out.Set(name, words[i+1])
			i++
			continue
		}
		out.Set(name, "true")
	}
	return out
}

// warningsBox is the collapsible box of warnings under the offers: what the answer
// should be read with, after the answer itself. It opens by itself only when the
// estimator warns about the job as asked (a --seq-len past the model's positions,
// ZeRO on one GPU): those say the question is probably not the one meant. Notes about
// the offers (a fallback an offer runs with, price age, untimed GPUs, offers left
// out) are informational and wait behind the summary.
type warningsBox struct {
	Job    []string // the estimator's warnings about the job as asked
	Offers []string // the rest: notes about the offers and their prices
	// Excluded is one line for every offer left out whatever its memory (68 offers on
	// 5 GPU models left out: no bitsandbytes (62), …); Models the per-model list.
	Excluded       string
	ExcludedOffers int
	Models         []recommend.Exclusion
}

// Count is the number of warnings; the exclusions are counted apart (ExcludedOffers).
func (w *warningsBox) Count() int { return len(w.Job) + len(w.Offers) }

// Title heads the box: "Warnings" when there are any, else "Left out".
func (w *warningsBox) Title() string {
	if w.Count() > 0 {
		return "Warnings"
	}
	return "Left out"
}

// Summary says how many of each the box holds: "3 warnings, 68 offers left out".
func (w *warningsBox) Summary() string {
	var parts []string
	if n := w.Count(); n > 0 {
		parts = append(parts, plural(n, "warning"))
	}
	if w.ExcludedOffers > 0 {
		parts = append(parts, plural(w.ExcludedOffers, "offer")+" left out")
	}
	return strings.Join(parts, ", ")
}

// Open reports whether the box starts open: only for warnings about the job.
func (w *warningsBox) Open() bool { return len(w.Job) > 0 }

// newWarningsBox sorts rec's warnings into the box; nil when there is nothing to say.
// The exclusions are recommend.TallyExclusions' line, as the CLI prints it.
func newWarningsBox(rec *recommend.Recommendation) *warningsBox {
	w := &warningsBox{Models: rec.Excluded}
	var job []string
	if rec.Estimate != nil {
		job = rec.Estimate.Warnings
	}
	for _, msg := range rec.Warnings {
		if slices.Contains(job, msg) {
			w.Job = append(w.Job, msg)
		} else {
			w.Offers = append(w.Offers, msg)
		}
	}
	if len(rec.Excluded) > 0 {
		tally := recommend.TallyExclusions(rec.Excluded)
		w.Excluded, w.ExcludedOffers = tally.String(), tally.Offers
	}
	if w.Count() == 0 && w.ExcludedOffers == 0 {
		return nil
	}
	return w
}

// plural is "1 offer", "2 offers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

type askPage struct {
	Groups    []fieldGroup
	Models    []string
	GPUModels []string
	Providers []string

	Asked    bool
	Error    string
	Rec      *recommend.Recommendation
	Command  string
	APIURL   string
	Headroom string
	Bar      []barSegment
	Ladder   []ladderRow
	Warnings *warningsBox
	Plan     *ladderRow // the combined plan, asked again with all its flags
	Total    float64    // device_total_gib
	// Optional columns of the offers table, shown when some offer has the figure (as
	// the CLI's table does).
	Multi, WithRate, WithImg, WithServe, WithOut, WithCost, WithFront bool
	Span                                                              int // columns of a note row
	// RankLabel heads the ranked figure's column (recommend.RankedLabel), first among the
	// prices; "" when ranked per hour. RankedBy is the figure's field.
	RankLabel, RankedBy string
}

func (s *server) ask(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 45*time.Second)
	defer cancel()
	params, order := askParams(r.URL.Query())
	// A submitted form sends every field, empty ones too; answer at the short URL
	// that holds only what was asked, so the link to share is that one.
	if clean := pageURL("/", params); submitted(r.URL.Query()) && clean != r.URL.RequestURI() {
		http.Redirect(w, r, clean, http.StatusSeeOther)
		return
	}
	p := askPage{GPUModels: gpuModelNames()}
	if models, err := s.b.Models(ctx); err == nil {
		p.Models = models
	}
	if provs, err := s.b.Providers(ctx); err == nil {
		for _, pr := range provs {
			p.Providers = append(p.Providers, pr.Name)
		}
	}
	status := http.StatusOK
	var errParam string
	if params.Get("model") != "" || params.Get("params") != "" {
		p.Asked = true
		p.Command = commandLine(params, order)
		if s.o.APIBase != "" {
			p.APIURL = pageURL(s.o.APIBase+"/recommend", params)
		}
		p.Headroom = params.Get("headroom")
		if p.Headroom == "" {
			p.Headroom = pricing.FormatNum(recommend.DefaultHeadroomPct, 1)
		}
		rec, err := s.b.Recommend(ctx, params)
		if err != nil {
			status = statusOf(err)
			if status == http.StatusNotFound {
				status = http.StatusBadRequest // an unknown model is the asker's input
			}
			s.logFailure(r, status, err)
			p.Error = err.Error()
			errParam = paramOf(err)
		} else {
			p.Rec = rec
			if rec.Estimate != nil {
				p.Bar = breakdownBar(rec.Estimate)
				p.Total = rec.Estimate.DeviceTotalGiB
			}
			p.setColumns(rec)
			p.Warnings = newWarningsBox(rec)
			for _, st := range rec.Ladder {
				p.Ladder = append(p.Ladder, ladderRow{st, answerURL(applyFlags(params, st.Flags)), p.RankedBy, p.RankLabel})
			}
			if pl := rec.Plan; pl != nil {
				p.Plan = &ladderRow{pl.LadderStep, answerURL(applyFlags(params, pl.Flags)), p.RankedBy, p.RankLabel}
				p.Plan.Change = "all of: " + strings.Join(pl.Changes, ", ")
			}
		}
	}
	p.Groups = fillGroups(askGroups, params, errParam)
	s.render(w, r, status, "ask", "Ask", p)
}

// answerURL is the Ask page answering params, scrolled to the answer. The form's
// action carries the same #result, which the browser keeps through the redirect to
// the short URL: on a phone the form fills the first screens, and the answer is what
// the person asked for.
func answerURL(params url.Values) string { return pageURL("/", params) + "#result" }

// setColumns picks the offers table's optional columns.
func (p *askPage) setColumns(rec *recommend.Recommendation) {
	has := func(f func(recommend.Fit) bool) bool { return slices.ContainsFunc(rec.Offers, f) }
	p.Multi = has(func(f recommend.Fit) bool { return f.Nodes > 1 })
	p.WithRate = has(func(f recommend.Fit) bool { return f.TokensPerSec != nil })
	p.WithImg = has(func(f recommend.Fit) bool { return f.ImagesPerSec != nil })
	p.WithServe = has(func(f recommend.Fit) bool { return f.TTFTSec != nil })
	p.WithOut = p.WithServe && rec.RankedBy != recommend.RankedByMOutTokens
	withHours := has(func(f recommend.Fit) bool { return f.EstHours != nil })
	p.WithCost = withHours && rec.RankedBy != recommend.RankedByJobCost
	p.WithFront = len(rec.Frontier) > 0
	p.RankedBy, p.RankLabel = rec.RankedBy, recommend.RankedLabel(rec.RankedBy)
	p.Span = 12
	for _, on := range []bool{p.RankLabel != "", p.Multi, p.Multi, p.WithRate, p.WithImg, p.WithServe, p.WithOut, withHours, p.WithCost, p.WithFront} {
		if on {
			p.Span++
		}
	}
}

// fillGroups copies the form definition with this request's values; the field named
// by errParam is marked.
func fillGroups(groups []fieldGroup, params url.Values, errParam string) []fieldGroup {
	out := make([]fieldGroup, len(groups))
	for i, g := range groups {
		g.Fields = append([]field(nil), g.Fields...)
		for j := range g.Fields {
			f := &g.Fields[j]
			f.Value = params.Get(f.Name)
			f.Checked = f.Kind == "checkbox" && f.Value == "true"
			if f.Value != "" {
				g.Open = true
			}
			if f.Name == errParam {
				f.Error = "check this value"
				g.Open = true
			}
		}
		out[i] = g
	}
	return out
}

// gpuModelNames are the catalog's GPU models, for suggestions.
func gpuModelNames() []string {
	var names []string
	for _, g := range pricing.GPUs() {
		names = append(names, g.Model)
	}
	return names
}

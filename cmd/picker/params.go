package main

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// The one binder. A command declares its inputs once, as params; the CLI registers them
// as flags (for --help and pflag's syntax checks) and binds the flags the user set, the
// HTTP API binds the query parameters, and a web page binds its form fields, all through
// BindParams over a Lookup. So a parameter means the same everywhere, and its errors name
// it as data (pricing.Error.Param).

// Lookup returns the value of a named request parameter and whether the request gave
// it. A list parameter given several times is one comma-joined value.
type Lookup func(name string) (value string, given bool)

// FlagLookup reads the flags of a parsed pflag.FlagSet: only flags the user set count as
// given.
func FlagLookup(fs *pflag.FlagSet) Lookup {
	return func(name string) (string, bool) {
		f := fs.Lookup(name)
		if f == nil {
			return "", false
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			return strings.Join(sv.GetSlice(), ","), f.Changed
		}
		return f.Value.String(), f.Changed
	}
}

// QueryLookup reads URL query parameters or form fields (url.Values). Check them with
// CheckValues first: it rejects unknown names and repeated scalars.
func QueryLookup(q url.Values) Lookup {
	return func(name string) (string, bool) {
		vs, ok := q[name]
		return strings.Join(vs, ","), ok
	}
}

type paramKind int

const (
	kindString paramKind = iota
	kindBool             // a switch: bare means true
	kindInt
	kindFloat
	kindList // comma list; may be given several times
)

// param is one named input of a command: a CLI flag, a query parameter, a form field.
type param struct {
	name, usage string
	kind        paramKind
	// def is bound when the request does not give the parameter ("" binds nothing);
	// shown is the default --help shows when def is "" (a job flag's default is applied
	// by fit.Estimate, since it can depend on the task and the model).
	def, shown string
	// typ, for a kindString param whose value is not a name (a job flag's "int"), is the
	// type --help shows: the flag stays text, parsed by set alone, as a query parameter is.
	typ string
	set func(v string) error
}

// registerParams adds ps to a command's flags, typed as pflag shows them in --help.
func registerParams(fs *pflag.FlagSet, ps []param) {
	for _, p := range ps {
		def := p.def
		if def == "" {
			def = p.shown
		}
		if p.kind == kindString && p.typ != "" {
			fs.Var(&textValue{v: def, typ: p.typ}, p.name, p.usage)
			continue
		}
		switch p.kind {
		case kindBool:
			fs.Bool(p.name, def == "true", p.usage)
		case kindInt:
			n, _ := strconv.Atoi(def)
			fs.Int(p.name, n, p.usage)
		case kindFloat:
			f, _ := strconv.ParseFloat(def, 64)
			fs.Float64(p.name, f, p.usage)
		case kindList:
			fs.StringSlice(p.name, nil, p.usage)
		default:
			fs.String(p.name, def, p.usage)
		}
	}
}

// textValue is a flag held as the text given, for the param's set to parse, whose
// --help names the type of value it takes (Type) instead of "string".
type textValue struct{ v, typ string }

func (t *textValue) String() string     { return t.v }
func (t *textValue) Set(v string) error { t.v = v; return nil }
func (t *textValue) Type() string       { return t.typ }

// BindParams sets every param from l, in declaration order, and the defaults of those
// not given. The first bad value is returned as a *pricing.Error naming the parameter.
func BindParams(ps []param, l Lookup) error {
	for _, p := range ps {
		v, given := l(p.name)
		if !given {
			if p.def == "" {
				continue
			}
			v = p.def
		}
		if err := checkFinite(p, v); err != nil { // bindbounds.go
			return err
		}
		if err := p.set(v); err != nil {
			return pricing.WithParam(err, p.name)
		}
	}
	return nil
}

// CheckValues rejects request parameters that ps does not declare and scalars given
// more than once, in name order.
func CheckValues(q url.Values, ps []param) error {
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		i := slices.IndexFunc(ps, func(p param) bool { return p.name == name })
		if i < 0 {
			known := make([]string, len(ps))
			for j, p := range ps {
				known[j] = p.name
			}
			slices.Sort(known)
			return pricing.ParamErrorf(pricing.Invalid, name, "unknown parameter %q; this endpoint takes: %s", name, strings.Join(known, ", "))
		}
		if n := len(q[name]); n > 1 && ps[i].kind != kindList {
			return pricing.ParamErrorf(pricing.Invalid, name, "parameter %q given %d times; it takes one value", name, n)
		}
	}
	return nil
}

// JobRequest is what a request says about the job: the model and the job flags.
type JobRequest struct {
	Model  string // --model: catalog name, Hub id or path to a config.json
	Params string // --params: raw parameter count when no architecture is known
	Job    fit.Job
	// PinGPUs: --gpus was given, so recommend evaluates every offer at Job.GPUs.
	PinGPUs bool
}

// params declares --model, --params and every job flag of fit.JobParams.
func (r *JobRequest) params() []param {
	ps := []param{
		{name: "model", usage: "catalog name (llama-2-7b), Hugging Face id (meta-llama/Llama-2-7b-hf) or path to a config.json",
			set: func(v string) error { r.Model = v; return nil }},
		{name: "params", usage: "raw parameter count (7b, 6.74e9) when no architecture is known",
			set: func(v string) error { r.Params = v; return nil }},
	}
	for _, jp := range fit.JobParams {
		kind := kindString
		if jp.Bool {
			kind = kindBool
		}
		ps = append(ps, param{name: jp.Name, usage: jp.Usage, kind: kind, shown: jp.Shown, typ: jp.Type, set: func(v string) error {
			if err := jp.Set(&r.Job, strings.TrimSpace(v)); err != nil {
				return err
			}
			r.PinGPUs = r.Job.GPUs > 0
			return checkJobGPUs(r.Job.GPUs)
		}})
	}
	return ps
}

// Parsers for the non-job parameters; each error names the flag and the value.

func parseInt(name string, lo int) func(string) (int, error) {
	return func(v string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, pricing.Errorf(pricing.Invalid, "--%s %q: want a whole number", name, v)
		}
		if n < lo {
			return 0, pricing.Errorf(pricing.Invalid, "--%s %d: want at least %d", name, n, lo)
		}
		return n, nil
	}
}

func parseFloat(name string) func(string) (float64, error) {
	return func(v string) (float64, error) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, pricing.Errorf(pricing.Invalid, "--%s %q: want a number", name, v)
		}
		return f, nil
	}
}

// nonNegative parses a float flag that must not be negative.
func nonNegative(name string, dst *float64) func(string) error {
	return func(v string) error {
		f, err := parseFloat(name)(v)
		if err != nil {
			return err
		}
		if f < 0 {
			return pricing.Errorf(pricing.Invalid, "--%s %v: must not be negative", name, f)
		}
		*dst = f
		return nil
	}
}

// parseBool parses a switch's value ("" is true, as a bare switch).
func parseBool(name string, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	}
	return false, pricing.Errorf(pricing.Invalid, "--%s %q: want true or false", name, v)
}

package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/pricing"
)

// `picker mcp` serves the Model Context Protocol over stdin/stdout: one tool per read
// command (estimate, recommend, offers, history, providers). A tool's input schema is
// built from the params the command registers as flags, and its arguments are bound by
// BindParams over a Lookup, as flags and query parameters are, so a tool takes exactly
// what the flags take. Its answer is the command's `-o json`, byte for byte, as the
// first text content, then a line saying how old the prices are; the structured content
// holds both (result, price_age).

// mcpTool is one tool: its name, what it does, the params of its flags, and its run:
// bind the arguments, run the command, write its JSON and say the price age.
type mcpTool struct {
	name, desc string
	params     func() []param
	run        func(ctx context.Context, l Lookup, json io.Writer) (priceAge, error)
}

// priceAge says how old the prices of an answer are.
type priceAge struct {
	// NewestObservedAt and OldestObservedAt bound when the answer's prices were seen;
	// nil when the answer has none.
	NewestObservedAt *time.Time `json:"newest_observed_at"`
	OldestObservedAt *time.Time `json:"oldest_observed_at"`
	// Newest and Oldest are their ages ("3 d"), as the tables' AGE column says.
	Newest string `json:"newest_age,omitempty"`
	Oldest string `json:"oldest_age,omitempty"`
	// Note is the rest of the answer's side channel: the hint of an empty offers list,
	// the cursor of the next page, or why the answer has no prices.
	Note string `json:"note,omitempty"`
}

// observed adds a price seen at t.
func (p *priceAge) observed(t time.Time) {
	t = t.UTC()
	if p.NewestObservedAt == nil || t.After(*p.NewestObservedAt) {
		p.NewestObservedAt = &t
	}
	if p.OldestObservedAt == nil || t.Before(*p.OldestObservedAt) {
		p.OldestObservedAt = &t
	}
}

// finish fills the ages against now.
func (p *priceAge) finish(now time.Time) {
	if p.NewestObservedAt != nil {
		p.Newest = formatAge(now.Sub(*p.NewestObservedAt))
		p.Oldest = formatAge(now.Sub(*p.OldestObservedAt))
	}
}

// line is the price age as the answer's second text content.
func (p priceAge) line() string {
	var s string
	switch {
	case p.NewestObservedAt == nil:
		s = "price age: no prices in this answer"
	case p.Newest == p.Oldest:
		s = fmt.Sprintf("price age: %s (observed %s)", p.Newest, p.NewestObservedAt.Format(time.RFC3339))
	default:
		s = fmt.Sprintf("price age: newest %s (observed %s), oldest %s (observed %s)", p.Newest, p.NewestObservedAt.Format(time.RFC3339),
			p.Oldest, p.OldestObservedAt.Format(time.RFC3339))
	}
	if p.Note != "" {
		s += "; " + p.Note
	}
	return s
}

// mcpTools are picker's tools, over a's config and store.
func (a *app) mcpTools() []mcpTool {
	jsonOut := func(w io.Writer) *IOStreams {
		return &IOStreams{Out: w, ErrOut: io.Discard, Format: "json", Now: a.now}
	}
	return []mcpTool{
		{name: "estimate", desc: "Estimate the GPU memory a job needs, per GPU (`picker estimate -o json`). Reads no prices.",
			params: func() []param { return (&EstimateOptions{}).params() },
			run: func(ctx context.Context, l Lookup, w io.Writer) (priceAge, error) {
				o := a.newEstimateOptions()
				if err := o.Bind(l); err != nil {
					return priceAge{}, err
				}
				res, err := RunEstimate(ctx, o)
				if err != nil {
					return priceAge{}, err
				}
				return priceAge{Note: "an estimate reads no prices"}, writeEstimate(jsonOut(w), res, o.HeadroomPct)
			}},
		{name: "recommend", desc: "Recommend the GPU instances that fit the job, cheapest for the work first (`picker recommend -o json`); " +
			"an empty offers list with nearest_miss when nothing fits.",
			params: func() []param { return (&RecommendOptions{}).params() },
			run: func(ctx context.Context, l Lookup, w io.Writer) (priceAge, error) {
				o := a.newRecommendOptions()
				if err := o.Bind(l); err != nil {
					return priceAge{}, err
				}
				res, err := RunRecommend(ctx, o)
				if err != nil {
					return priceAge{}, err
				}
				var age priceAge
				for _, f := range res.Offers {
					age.observed(f.ObservedAt)
				}
				return age, writeRecommendation(jsonOut(w), res)
			}},
		{name: "offers", desc: "List current GPU instance offers, cheapest first (`picker offers -o json`).",
			params: func() []param { return (&OffersOptions{}).params() },
			run: func(ctx context.Context, l Lookup, w io.Writer) (priceAge, error) {
				o := a.newOffersOptions()
				if err := o.Bind(l); err != nil {
					return priceAge{}, err
				}
				p, err := RunOffersPage(ctx, o)
				if err != nil {
					return priceAge{}, err
				}
				var age priceAge
				for _, of := range p.Offers {
					age.observed(of.ObservedAt)
				}
				var notes []string
				if o.Hint != "" {
					notes = append(notes, o.Hint)
				}
				if p.Next != "" {
					notes = append(notes, fmt.Sprintf("%d of %d offers; the next page: after=%s", len(p.Offers), p.Total, p.Next))
				}
				age.Note = strings.Join(notes, "; ")
				return age, writeOffers(jsonOut(w), p.Offers)
			}},
		{name: "history", desc: "An offer's price over time, one row per change (`picker history -o json`): provider and instance-type, or gpu-model.",
			params: func() []param { return (&historyOptions{}).params() },
			run: func(ctx context.Context, l Lookup, w io.Writer) (priceAge, error) {
				hq, err := a.historyQuery(ctx, &historyOptions{}, l)
				if err != nil {
					return priceAge{}, err
				}
				points, err := a.RunHistory(ctx, hq)
				if err != nil {
					return priceAge{}, err
				}
				var age priceAge
				for _, p := range points {
					age.observed(p.ValidFrom)
				}
				age.Note = "observed is when each price took effect (valid_from)"
				return age, writeJSON(w, historyRows(points))
			}},
		{name: "providers", desc: "Each price provider: enabled, last successful refresh, price age, offers, last error (`picker providers -o json`).",
			params: func() []param { return nil },
			run: func(ctx context.Context, l Lookup, w io.Writer) (priceAge, error) {
				rows, err := a.providerRows(ctx)
				if err != nil {
					return priceAge{}, err
				}
				var age priceAge
				for _, r := range rows {
					if !r.newestObserved.IsZero() {
						age.observed(r.newestObserved)
					}
				}
				age.Note = "each provider's own age is its age field"
				return age, writeProviders(jsonOut(w), rows)
			}},
	}
}

// mcpSchema is a tool's input schema: an object whose properties are the params, typed
// as JSON gives them (a list is a comma string or an array of strings), described by the
// flag's usage and default.
func mcpSchema(ps []param) map[string]any {
	props := map[string]any{}
	for _, p := range ps {
		desc := p.usage
		if def := cmp.Or(p.def, p.shown); def != "" {
			desc += " (default " + def + ")"
		}
		prop := map[string]any{"description": desc}
		switch {
		case p.kind == kindBool:
			prop["type"] = "boolean"
		case p.kind == kindInt:
			prop["type"] = "integer"
		case p.kind == kindFloat:
			prop["type"] = "number"
		case p.kind == kindList:
			prop["type"] = []string{"string", "array"}
			prop["items"] = map[string]any{"type": "string"}
		case p.typ == "int":
			prop["type"] = []string{"integer", "string"}
		case p.typ == "float":
			prop["type"] = []string{"number", "string"}
		default:
			prop["type"] = "string"
		}
		props[p.name] = prop
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

// mcpLookup checks a tool's arguments against ps (unknown names are errors naming them)
// and returns them as a Lookup of the flags' text: a string as given, a number as its
// JSON text, a bool as true/false, an array of strings comma-joined.
func mcpLookup(args json.RawMessage, ps []param) (Lookup, error) {
	var raw map[string]json.RawMessage
	if len(bytes.TrimSpace(args)) > 0 && string(bytes.TrimSpace(args)) != "null" {
		if err := json.Unmarshal(args, &raw); err != nil {
			return nil, pricing.Errorf(pricing.Invalid, "arguments: want a JSON object: %v", err)
		}
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	slices.Sort(names)
	vals := map[string]string{}
	for _, name := range names {
		if !slices.ContainsFunc(ps, func(p param) bool { return p.name == name }) {
			known := make([]string, len(ps))
			for i, p := range ps {
				known[i] = p.name
			}
			slices.Sort(known)
			takes := "no parameters"
			if len(known) > 0 {
				takes = strings.Join(known, ", ")
			}
			return nil, pricing.ParamErrorf(pricing.Invalid, name, "unknown parameter %q; this tool takes: %s", name, takes)
		}
		v, err := mcpText(raw[name])
		if err != nil {
			return nil, pricing.ParamErrorf(pricing.Invalid, name, "parameter %q: %v", name, err)
		}
		vals[name] = v
	}
	return func(name string) (string, bool) {
		v, ok := vals[name]
		return v, ok
	}, nil
}

// mcpText is one argument value as a flag's text.
func mcpText(v json.RawMessage) (string, error) {
	var x any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&x); err != nil {
		return "", err
	}
	switch x := x.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := mcpText(mustJSON(e))
			if err != nil {
				return "", err
			}
			if _, nested := e.([]any); nested {
				return "", errors.New("want a string, a number, a boolean or a list of them")
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	return "", errors.New("want a string, a number, a boolean or a list of them")
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// mcpServer is picker's MCP server over a's config and store.
func (a *app) mcpServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "picker", Version: versionInfo().Version}, nil)
	var one sync.Mutex // the app opens its store lazily, for one command at a time
	for _, t := range a.mcpTools() {
		ps := t.params()
		s.AddTool(&mcp.Tool{Name: t.name, Description: t.desc, InputSchema: mcpSchema(ps)}, a.mcpHandler(t, &one))
	}
	return s
}

// mcpHandler runs t for a call. Every failure, a bad argument above all, is a tool
// error (isError) naming the parameter, never a protocol error.
func (a *app) mcpHandler(t mcpTool, one *sync.Mutex) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		one.Lock()
		defer one.Unlock()
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		var out bytes.Buffer
		age, err := func() (priceAge, error) {
			l, err := mcpLookup(args, t.params())
			if err != nil {
				return priceAge{}, err
			}
			return t.run(ctx, l, &out)
		}()
		if err != nil {
			msg := a.redactor().String(err.Error())
			if p := pricing.ErrorParam(err); p != "" && !strings.Contains(msg, p) {
				msg = fmt.Sprintf("parameter %q: %s", p, msg)
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}},
				StructuredContent: map[string]string{"error": msg, "param": pricing.ErrorParam(err)}}, nil
		}
		age.finish(a.now())
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: out.String()}, &mcp.TextContent{Text: age.line()}},
			StructuredContent: map[string]any{"result": json.RawMessage(out.Bytes()), "price_age": age},
		}, nil
	}
}

func (a *app) mcpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve picker's tools to AI agents over the Model Context Protocol (stdio)",
		Long: `mcp serves the Model Context Protocol on stdin and stdout, for an agent's MCP client to
start as a subprocess. Its tools are estimate, recommend, offers, history and providers:
each takes the flags of that command as its arguments (by flag name, without the dashes)
and answers with the command's -o json, then a line saying how old the prices are.`,
		Example: `  picker mcp
  picker --db ~/picker.db mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in := a.m.Stdin
			if in == nil {
				in = strings.NewReader("")
			}
			return a.mcpServer().Run(cmd.Context(), &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{a.stdout}})
		},
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

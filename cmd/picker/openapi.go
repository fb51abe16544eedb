package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pickergpu/picker/fit"
	"github.com/pickergpu/picker/pricing"
)

// The API's description: an OpenAPI 3 document of every /v1 endpoint, served at
// /v1/openapi.json. Nothing in it is written by hand that the code already says: the
// parameters are the params the binder binds (the guard's list per route, which is the
// CLI's flags), and the body schemas are read from the Go types the handlers encode, so
// the document cannot drift from the handlers. TestOpenAPIResponsesValidate checks real
// responses against it.

const openAPIPath = "/v1/openapi.json"

// apiBodies are the 200 body of each route: the Go value the handler writes as JSON.
var apiBodies = map[string]struct {
	schema  string // components/schemas name
	typ     reflect.Type
	array   bool
	summary string
}{
	"/v1/offers":    {"Offer", reflect.TypeFor[pricing.Offer](), true, "Current offers matching the filters, one page (`picker offers -o json`)"},
	"/v1/estimate":  {"Estimate", reflect.TypeFor[fit.Result](), false, "The memory and GPU estimate of a job (`picker estimate -o json`)"},
	"/v1/recommend": {"Recommendation", reflect.TypeFor[RecommendResult](), false, "The cheapest offers that fit a job (`picker recommend -o json`)"},
	"/v1/providers": {"Provider", reflect.TypeFor[providerRow](), true, "Each price provider's state (`picker providers -o json`)"},
	"/v1/watches":   {"Watch", reflect.TypeFor[WatchView](), true, "The [[watch]] price alerts: each one's last value, offer, state and last crossing"},
}

// openAPIDocument builds the document from each route's params.
func openAPIDocument(params map[string][]param) []byte {
	errResp := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": jsonContent(ref("Error"))}
	}
	schemas := map[string]any{"Error": jsonSchema(reflect.TypeFor[apiError]())}
	// The 404 of a job nothing fits: the command's JSON with the nearest miss as "error".
	schemas["NoFit"] = map[string]any{"allOf": []any{ref("Recommendation"), map[string]any{"type": "object", "required": []string{"error"},
		"properties": map[string]any{"error": map[string]any{"type": "string"}}}}}
	paths := map[string]any{}
	routes := make([]string, 0, len(apiRoutes))
	for _, r := range apiRoutes {
		routes = append(routes, r.path)
	}
	for r := range params {
		if !slices.Contains(routes, r) {
			routes = append(routes, r)
		}
	}
	slices.Sort(routes)
	for _, route := range routes {
		b := apiBodies[route]
		body := map[string]any{"nullable": true} // a route apiBodies does not know yet: any JSON
		if b.typ != nil {
			schemas[b.schema] = jsonSchema(b.typ)
			body = ref(b.schema)
		}
		if b.array {
			body = map[string]any{"type": "array", "items": body}
		}
		ok := map[string]any{"description": "the CLI's -o json", "content": jsonContent(body)}
		responses := map[string]any{
			"200": ok,
			"400": errResp("a bad parameter (named in \"parameter\") or a malformed query"),
			"401": errResp("missing or wrong bearer token ([daemon] token_env)"),
			"403": errResp("a cross-origin request"),
			"421": errResp("a Host this API does not answer to"),
			"500": errResp("an internal error"),
			"503": errResp("busy ([daemon] max_concurrent), the request timed out, or the store is unavailable; see Retry-After"),
		}
		switch route {
		case "/v1/offers":
			ok["headers"] = map[string]any{
				"X-Total-Count": map[string]any{"description": "offers the filters match on every page", "required": true, "schema": map[string]any{"type": "integer"}},
				"Link":          map[string]any{"description": "the next page: </v1/offers?...&after=CURSOR>; rel=\"next\"; absent on the last page", "schema": map[string]any{"type": "string"}},
				"X-Picker-Hint": map[string]any{"description": "why an empty answer is empty (the CLI's hint line)", "schema": map[string]any{"type": "string"}},
			}
		case "/v1/recommend":
			responses["404"] = map[string]any{"description": "nothing fits: the recommendation (ladder, nearest_miss) with the nearest miss as error",
				"content": jsonContent(ref("NoFit"))}
		}
		op := map[string]any{
			"operationId": strings.TrimPrefix(route, "/v1/"),
			"summary":     b.summary,
			"responses":   responses,
		}
		if ps := openAPIParams(params[route]); len(ps) > 0 {
			op["parameters"] = ps
		}
		paths[route] = map[string]any{"get": op}
	}
	paths[openAPIPath] = map[string]any{"get": map[string]any{
		"operationId": "openapi",
		"summary":     "This document",
		"responses": map[string]any{
			"200": map[string]any{"description": "the OpenAPI document", "content": jsonContent(map[string]any{"type": "object"})},
		},
	}}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       "picker",
			"version":     "1",
			"description": "picker's daemon API (`picker daemon`). Each endpoint takes the flags of the CLI command of the same name as query parameters (a list parameter as a comma list or repeated) and answers that command's -o json. Errors are {\"error\": ..., \"parameter\": ...}.",
		},
		"paths":      paths,
		"components": map[string]any{"schemas": schemas},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		panic(err) // maps of strings: cannot fail
	}
	return buf.Bytes()
}

// openAPIParams describes ps as query parameters, typed as the binder parses them.
func openAPIParams(ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		desc := p.usage
		s := map[string]any{}
		q := map[string]any{"name": p.name, "in": "query"}
		switch p.kind {
		case kindBool:
			s["type"] = "boolean"
			q["allowEmptyValue"] = true
			desc += " (a switch: given bare it is true)"
			if b, err := strconv.ParseBool(p.def); err == nil {
				s["default"] = b
			}
		case kindInt:
			s["type"] = "integer"
			if n, err := strconv.Atoi(p.def); err == nil {
				s["default"] = n
			}
			if hi, ok := intCaps[p.name]; ok {
				s["maximum"] = hi
			}
		case kindFloat:
			s["type"] = "number"
			if f, err := strconv.ParseFloat(p.def, 64); err == nil {
				s["default"] = f
			}
		case kindList:
			s["type"] = "array"
			s["items"] = map[string]any{"type": "string", "maxLength": maxValueBytes}
			s["maxItems"] = maxListItems
			q["style"], q["explode"] = "form", true
			desc += " (a comma list, or the parameter repeated)"
		default:
			s["type"] = "string"
			s["maxLength"] = maxValueBytes
			if p.def != "" {
				s["default"] = p.def
			}
			if p.typ != "" {
				desc += " (" + p.typ + ")"
			}
			if p.def == "" && p.shown != "" {
				desc += "; default " + p.shown
			}
		}
		q["description"], q["schema"] = desc, s
		out = append(out, q)
	}
	return out
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// jsonSchema is the schema of t's encoding/json encoding: a field tagged omitempty is
// optional, a pointer, slice or map may be null, a type that encodes itself as text is
// a string and one with its own MarshalJSON is any value.
func jsonSchema(t reflect.Type) map[string]any { return schemaDepth(t, 0) }

func schemaDepth(t reflect.Type, depth int) map[string]any {
	if depth > 16 {
		return map[string]any{"nullable": true} // a recursive type: any value
	}
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		pt := reflect.PointerTo(t)
		if t.Implements(jsonMarshalerType) || pt.Implements(jsonMarshalerType) {
			return map[string]any{"nullable": true}
		}
		if t.Implements(textMarshalerType) || pt.Implements(textMarshalerType) {
			return map[string]any{"type": "string"}
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := schemaDepth(t.Elem(), depth+1)
		s["nullable"] = true
		return s
	case reflect.Interface:
		return map[string]any{"nullable": true}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": schemaDepth(t.Elem(), depth+1), "nullable": t.Kind() == reflect.Slice}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaDepth(t.Elem(), depth+1), "nullable": true}
	case reflect.Struct:
		props, required := map[string]any{}, []string{}
		structFields(t, depth, props, &required)
		s := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			slices.Sort(required)
			s["required"] = required
		}
		return s
	}
	return map[string]any{"nullable": true}
}

// structFields adds t's encoded fields, an embedded struct's promoted ones included.
func structFields(t reflect.Type, depth int, props map[string]any, required *[]string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && !et.Implements(jsonMarshalerType) && !reflect.PointerTo(et).Implements(jsonMarshalerType) {
				structFields(et, depth, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := props[name]; dup {
			continue // the shallower field wins, as encoding/json's does
		}
		s := schemaDepth(ft, depth+1)
		if slices.Contains(strings.Split(opts, ","), "string") {
			s = map[string]any{"type": "string"}
		}
		props[name] = s
		if !slices.Contains(strings.Split(opts, ","), "omitempty") && !slices.Contains(strings.Split(opts, ","), "omitzero") {
			*required = append(*required, name)
		}
	}
}

// openAPIHandler serves the document of params (built once).
func openAPIHandler(params map[string][]param) http.HandlerFunc {
	doc := openAPIDocument(params)
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSONBody(w, http.StatusOK, doc)
	}
}

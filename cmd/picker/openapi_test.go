package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// loadOpenAPI fetches /v1/openapi.json from srv and checks it is a valid OpenAPI 3
// document.
func loadOpenAPI(t *testing.T, url string) *openapi3.T {
	t.Helper()
	code, body := get(t, url+openAPIPath)
	if code != http.StatusOK {
		t.Fatalf("%s: %d %.300s", openAPIPath, code, body)
	}
	doc, err := openapi3.NewLoader().LoadFromData(body)
	if err != nil {
		t.Fatalf("%s does not load: %v", openAPIPath, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s is not a valid OpenAPI document: %v", openAPIPath, err)
	}
	return doc
}

// Issue 25, item 3: every endpoint's real answers, errors included, are what the
// document says, and each representative request is one it describes.
func TestOpenAPIResponsesValidate(t *testing.T) {
	_, srv := newTestAPI(t)
	doc := loadOpenAPI(t, srv.URL)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path     string
		want     int
		validReq int // the request itself keeps to the document (1), breaks it (-1), or the document cannot say (0)
	}{
		{"/v1/offers?provider=lambda&provider=runpod&limit=2", 200, 1},
		{"/v1/offers?gpu-model=H100,A100-80GB&purchase=spot&limit=5&sort=price-per-gpu", 200, 1},
		{"/v1/offers?gpu-model=NoSuchGPU", 400, 1},
		{"/v1/offers?limit=abc", 400, -1},
		{"/v1/offers?no-such-flag=1", 400, 0},
		{"/v1/estimate?model=llama-2-7b&task=lora&batch=4&seq-len=2048&grad-ckpt=true", 200, 1},
		{"/v1/estimate?model=no-such-model-anywhere", 400, 1},
		{"/v1/recommend?model=llama-2-7b&task=qlora&batch=4&top=3", 200, 1},
		{"/v1/recommend?model=mistral-7b&task=lora&rank=job&tokens=5e7&purchase=any&grad-ckpt=false", 200, 1},
		{"/v1/recommend?model=llama-2-70b&task=full-ft&max-gpus=1", 404, 1},
		{"/v1/recommend?top=1000&model=llama-2-7b", 400, -1},
		{"/v1/providers", 200, 1},
		{"/v1/providers?verbose=1", 400, 0},
		{openAPIPath, 200, 1},
	} {
		t.Run(tt.path, func(t *testing.T) {
			req := mustReq(t, srv.URL+tt.path)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d; want %d: %.300s", resp.StatusCode, tt.want, body)
			}
			route, pathParams, err := router.FindRoute(req)
			if err != nil {
				t.Fatalf("the document has no route for %s: %v", tt.path, err)
			}
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route,
				Options: &openapi3filter.Options{MultiError: true}}
			err = openapi3filter.ValidateRequest(context.Background(), in)
			if tt.validReq > 0 && err != nil {
				t.Errorf("request does not keep to the document: %v", err)
			} else if tt.validReq < 0 && err == nil {
				t.Errorf("the document allows a request the API refuses")
			}
			rin := &openapi3filter.ResponseValidationInput{
				RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
				Body:    io.NopCloser(bytes.NewReader(body)),
				Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
			}
			if err := openapi3filter.ValidateResponse(context.Background(), rin); err != nil {
				t.Errorf("response does not keep to the document: %v\n%.400s", err, body)
			}
		})
	}
}

// The schemas are not empty: a body of the wrong shape fails.
func TestOpenAPIRejectsWrongBodies(t *testing.T) {
	_, srv := newTestAPI(t)
	doc := loadOpenAPI(t, srv.URL)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string]string{
		"/v1/providers":                  `[{"name": 5}]`,
		"/v1/offers":                     `[{"provider": "x"}]`,
		"/v1/recommend?model=llama-2-7b": `{"offers": "none"}`,
		"/v1/estimate?model=llama-2-7b":  `[]`,
	} {
		req := mustReq(t, srv.URL+path)
		route, pp, err := router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{"Content-Type": {"application/json"}, "X-Total-Count": {"1"}}
		err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: pp, Route: route},
			Status:                 200, Header: h, Body: io.NopCloser(strings.NewReader(body)),
		})
		if err == nil {
			t.Errorf("%s: the document accepts the 200 body %s", path, body)
		}
	}
}

// The document's parameters are the binder's: the params each route binds (the CLI
// command's flags), in their order, typed by their kind.
func TestOpenAPIParametersAreTheBinders(t *testing.T) {
	a, srv := newTestAPI(t)
	doc := loadOpenAPI(t, srv.URL)
	bound := map[string][]param{
		"/v1/offers":    a.newOffersOptions().params(),
		"/v1/estimate":  a.newEstimateOptions().params(),
		"/v1/recommend": a.newRecommendOptions().params(),
		"/v1/providers": nil,
	}
	for _, r := range apiRoutes {
		if doc.Paths.Find(r.path) == nil {
			t.Errorf("route %s is not in the document", r.path)
		}
	}
	for route, ps := range bound {
		item := doc.Paths.Find(route)
		if item == nil || item.Get == nil {
			t.Errorf("no GET %s in the document", route)
			continue
		}
		var names []string
		for _, p := range item.Get.Parameters {
			names = append(names, p.Value.Name)
			i := slices.IndexFunc(ps, func(q param) bool { return q.name == p.Value.Name })
			if i < 0 || p.Value.In != "query" {
				continue
			}
			want := map[paramKind]string{kindBool: "boolean", kindInt: "integer", kindFloat: "number", kindList: "array", kindString: "string"}[ps[i].kind]
			if !p.Value.Schema.Value.Type.Is(want) {
				t.Errorf("%s %s: type %v; want %s", route, p.Value.Name, p.Value.Schema.Value.Type, want)
			}
			if !strings.HasPrefix(p.Value.Description, ps[i].usage) {
				t.Errorf("%s %s: description %q; want the flag's usage %q", route, p.Value.Name, p.Value.Description, ps[i].usage)
			}
		}
		var want []string
		for _, p := range ps {
			want = append(want, p.name)
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s parameters\n %v\nwant the bound params\n %v", route, names, want)
		}
	}
	// The job flags reach the API: every fit.JobParams flag is a parameter of estimate
	// and recommend.
	for _, route := range []string{"/v1/estimate", "/v1/recommend"} {
		for _, jp := range (&JobRequest{}).params() {
			if doc.Paths.Find(route).Get.Parameters.GetByInAndName("query", jp.name) == nil {
				t.Errorf("%s lacks the job parameter %s", route, jp.name)
			}
		}
	}
	// The paging headers of /v1/offers are described.
	h := doc.Paths.Find("/v1/offers").Get.Responses.Status(200).Value.Headers
	for _, name := range []string{"X-Total-Count", "Link"} {
		if h[name] == nil {
			t.Errorf("/v1/offers 200 does not describe %s", name)
		}
	}
}

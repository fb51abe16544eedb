package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestBinderRefusesNonFinite: NaN and ±Inf in any numeric parameter, and a --gpus past
// the plan's cap, are 400s naming the parameter, on the API and the CLI alike (issue 30:
// headroom=NaN and lora-dropout=NaN were 500s, "json: unsupported value: NaN";
// gpus=2^30 planned 134M nodes).
func TestBinderRefusesNonFinite(t *testing.T) {
	a, srv := newTestAPI(t)
	for _, tt := range []struct{ path, param string }{
		{"/v1/recommend?model=llama-2-7b&headroom=NaN", "headroom"},
		{"/v1/recommend?model=llama-2-7b&headroom=-Inf", "headroom"},
		{"/v1/estimate?model=llama-2-7b&task=lora&lora-dropout=NaN", "lora-dropout"},
		{"/v1/estimate?model=llama-2-7b&task=inference&gpu-memory-utilization=nan", "gpu-memory-utilization"},
		{"/v1/offers?max-price=NaN", "max-price"},
		{"/v1/recommend?model=llama-2-7b&batch=1e999", "batch"},
		{"/v1/recommend?model=llama-2-7b&gpus=1073741824", "gpus"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			code, body := get(t, srv.URL+tt.path)
			if code != http.StatusBadRequest || !strings.Contains(string(body), tt.param) {
				t.Errorf("status %d: %s; want a 400 naming %s", code, body, tt.param)
			}
		})
	}
	r := runCLI(t, a.st.Path(), false, "recommend", "--model", "llama-2-7b", "--headroom", "NaN")
	if r.code != exitUsage || !strings.Contains(r.stderr, "headroom") || !strings.Contains(r.stderr, "finite") {
		t.Errorf("CLI --headroom NaN: exit %d, %s", r.code, r.stderr)
	}
	if code, body := get(t, srv.URL+"/v1/recommend?model=llama-2-7b&gpus=8"); code != http.StatusOK {
		t.Errorf("gpus=8: %d %s", code, body)
	}
}

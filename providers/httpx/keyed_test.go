package httpx

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

func TestGetJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("Accept") != "application/json" || r.Header.Get("X-Key") != "k" {
				http.Error(w, "headers", http.StatusBadRequest)
				return
			}
			w.Write([]byte(`{"price": "1.25"}`))
		case "/refused":
			http.Error(w, `{"message": "Unauthorized"}`, http.StatusUnauthorized)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	k, err := NewKeyed("demo", srv.URL+"/", "https://example.invalid", "", "DEMO_KEY", WithHTTPClient(srv.Client()))
	if err != nil || k.KeyEnv != "DEMO_KEY" || k.URL("/ok", "a=1") != srv.URL+"/ok?a=1" {
		t.Fatalf("NewKeyed = %+v, %v", k, err)
	}
	var v struct{ Price Number }
	if err := k.Client.GetJSON(context.Background(), "demo", "prices", k.URL("/ok", ""), http.Header{"X-Key": {"k"}}, "DEMO_KEY", &v); err != nil || v.Price != 1.25 {
		t.Errorf("GetJSON = %v, %v; want 1.25 from the string", v.Price, err)
	}
	for _, tt := range []struct{ env, want string }{
		{"DEMO_KEY", "demo: prices: the API refused the key read from DEMO_KEY: GET " + srv.URL + "/refused: HTTP 401"},
		{"", "demo: prices: the API wants a key (set [providers.demo] api_key_env)"},
	} {
		err := k.Client.GetJSON(context.Background(), "demo", "prices", k.URL("/refused", ""), nil, tt.env, &v)
		if err == nil || !strings.Contains(err.Error(), tt.want) || pricing.ErrorCode(err) != pricing.Invalid {
			t.Errorf("refused with env %q: %v; want %q, coded invalid", tt.env, err, tt.want)
		}
	}
	if err := k.Client.GetJSON(context.Background(), "demo", "prices", k.URL("/missing", ""), nil, "", &v); err == nil || !strings.HasPrefix(err.Error(), "demo: prices: GET ") || pricing.ErrorCode(err) == pricing.Invalid {
		t.Errorf("404: %v; want a non-setup error naming the call", err)
	}
}

func TestRebase(t *testing.T) {
	for _, tt := range []struct{ base, link, want string }{
		{"http://127.0.0.1:9", "https://api.digitalocean.com/v2/sizes?page=2&per_page=1", "http://127.0.0.1:9/v2/sizes?page=2&per_page=1"},
		{"https://proxy.example/do", "https://u:p@api.digitalocean.com/v2/sizes?page=2", "https://proxy.example/do/v2/sizes?page=2"},
		{"https://proxy.example/do", "https://api.digitalocean.com/do/v2/sizes", "https://proxy.example/do/v2/sizes"},
	} {
		b, _ := url.Parse(tt.base)
		if got, err := Rebase(b, tt.link); err != nil || got != tt.want {
			t.Errorf("Rebase(%s, %s) = %q, %v; want %q", tt.base, tt.link, got, err, tt.want)
		}
	}
}

func TestNumber(t *testing.T) {
	for in, want := range map[string]float64{`2.89`: 2.89, `"2.89"`: 2.89, `" 0.52 "`: 0.52, `75`: 75} {
		var n Number
		if err := json.Unmarshal([]byte(in), &n); err != nil || float64(n) != want {
			t.Errorf("Number(%s) = %v, %v; want %v", in, n, err, want)
		}
	}
	for _, in := range []string{`"call us"`, `"NaN"`, `true`, `"Inf"`} {
		var n Number
		if err := json.Unmarshal([]byte(in), &n); err == nil {
			t.Errorf("Number(%s) = %v; want an error", in, n)
		}
	}
}

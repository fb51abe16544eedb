package cudo

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/httpx"
	"github.com/pickergpu/picker/providers/providertest"
)

const keyEnv = "PICKER_TEST_CUDO_KEY"

var clock = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// cudoServer answers GET /v1/vms/machine-types and /v1/vms/gpu-models from testdata
// (the reference's files); types and models override the bodies, modelsStatus makes
// gpu-models fail. It records the Authorization header it was sent.
type cudoServer struct {
	types, models string
	modelsStatus  int
	requests      atomic.Int32
	mu            sync.Mutex
	auth          []string
}

func (s *cudoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	body, file := "", ""
	switch r.URL.Path {
	case "/v1/vms/machine-types":
		body, file = s.types, "testdata/vms_machine_types.json"
	case "/v1/vms/gpu-models":
		if s.modelsStatus != 0 {
			w.WriteHeader(s.modelsStatus)
			w.Write([]byte(`{"code": 16, "message": "unauthenticated"}`))
			return
		}
		body, file = s.models, "testdata/vms_gpu_models.json"
	default:
		http.NotFound(w, r)
		return
	}
	if body == "" {
		b, _ := os.ReadFile(file)
		body = string(b)
	}
	w.Write([]byte(body))
}

func setup(t *testing.T, s *cudoServer, cfg Config) *Provider {
	t.Helper()
	srv := providertest.Serve(t, s)
	cfg.Endpoint = srv.URL
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = keyEnv
	}
	p, err := New(cfg, append(providertest.HTTPOptions(srv, clock, nil), httpx.WithBackoff(providertest.DoublingBackoff))...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func offer(dc, typ, model string, count, mem, vcpus, ram, price float64) pricing.Offer {
	return pricing.Offer{Provider: Name, Region: dc, InstanceType: typ, GPUModel: model, GPUCount: count,
		GPUMemGiB: mem, VCPUs: vcpus, RAMGiB: ram, Purchase: pricing.OnDemand, PriceUSDHr: price, Currency: "USD",
		ObservedAt: clock, Source: pricing.SourceAPI, Available: pricing.AvailableNow}
}

// Worked out by hand from testdata/vms_machine_types.json: 4 vCPU and 8 GiB per GPU
// (vCPU/GiB 0.5, inside both types' ratio bounds), for 1, 2, 4 GPUs (maxGpuFree 5 and
// 4: no 8); price = k*gpu + vcpus*vcpu + GiB*memory.
//
//	cascade-lake (RTX 3080, br-saopaulo-1): 0.05 + 4*0.0025 + 8*0.0038 = 0.0904 per GPU
//	epyc-rome-rtx-a5000 (no-luster-1):      0.52 + 4*0.0021 + 8*0.0034 = 0.5556 per GPU
//
// The RTX 3080 is not in the GPU catalog: kept under Cudo's name with gpu-models' 10 GiB.
var want = []pricing.Offer{
	offer("br-saopaulo-1", "cascade-lake_1x4v8gb", "RTX 3080", 1, 10, 4, 8, 0.0904),
	offer("br-saopaulo-1", "cascade-lake_2x8v16gb", "RTX 3080", 2, 10, 8, 16, 0.1808),
	offer("br-saopaulo-1", "cascade-lake_4x16v32gb", "RTX 3080", 4, 10, 16, 32, 0.3616),
	offer("no-luster-1", "epyc-rome-rtx-a5000_1x4v8gb", "RTXA5000", 1, 24, 4, 8, 0.5556),
	offer("no-luster-1", "epyc-rome-rtx-a5000_2x8v16gb", "RTXA5000", 2, 24, 8, 16, 1.1112),
	offer("no-luster-1", "epyc-rome-rtx-a5000_4x16v32gb", "RTXA5000", 4, 24, 16, 32, 2.2224),
}

func TestFetch(t *testing.T) {
	os.Unsetenv(keyEnv)
	s := &cudoServer{}
	snap, err := setup(t, s, Config{}).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !reflect.DeepEqual(snap.Offers, want) {
		t.Errorf("offers:\n got  %+v\n want %+v", snap.Offers, want)
	}
	if w := []string{`cudo: unknown GPU "RTX 3080" kept as is`}; !reflect.DeepEqual(snap.Warnings, w) {
		t.Errorf("Warnings = %q, want %q", snap.Warnings, w)
	}
	if !reflect.DeepEqual(s.auth, []string{"", ""}) {
		t.Errorf("Authorization sent without a key: %q", s.auth)
	}
	t.Logf("fixture: %s", providertest.Tally(snap.Offers))
}

// catalogOnly is the machine-types fixture without the types whose GPU the catalog
// lacks (the RTX 3080): the conformance suite wants canonical GPU models throughout.
func catalogOnly(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/vms_machine_types.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string][]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var kept []map[string]any
	for _, mt := range doc["machineTypes"] {
		if _, _, ok := providers.GPUFromName(mt["gpuModel"].(string), 0); ok {
			kept = append(kept, mt)
		}
	}
	out, _ := json.Marshal(map[string]any{"machineTypes": kept})
	return string(out)
}

func TestConformance(t *testing.T) {
	os.Unsetenv(keyEnv)
	body := catalogOnly(t)
	providertest.Run(t, func(t *testing.T) providers.Provider { return setup(t, &cudoServer{types: body}, Config{}) })
}

func TestKeySentWhenSet(t *testing.T) {
	t.Setenv(keyEnv, "cudo-secret-key")
	s := &cudoServer{}
	if _, err := setup(t, s, Config{}).Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w := []string{"Bearer cudo-secret-key", "Bearer cudo-secret-key"}; !reflect.DeepEqual(s.auth, w) {
		t.Errorf("Authorization = %q, want %q", s.auth, w)
	}
}

// Without gpu-models the catalog still knows the RTX A5000's memory; the RTX 3080 has
// none and is skipped; the failure is a warning, not the fetch's.
func TestGPUModelsFailing(t *testing.T) {
	os.Unsetenv(keyEnv)
	snap, err := setup(t, &cudoServer{modelsStatus: http.StatusUnauthorized}, Config{}).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !reflect.DeepEqual(snap.Offers, want[3:]) {
		t.Errorf("offers:\n got  %+v\n want %+v", snap.Offers, want[3:])
	}
	if len(snap.Warnings) != 3 || !strings.Contains(snap.Warnings[0], "cudo: gpu models: the API wants a key") ||
		!strings.Contains(snap.Warnings[2], `cudo: machineTypes[0] (cascade-lake in br-saopaulo-1) skipped: no memory for GPU "RTX 3080"`) {
		t.Errorf("Warnings = %q", snap.Warnings)
	}
}

func TestShapes(t *testing.T) {
	a5000 := machineType{DataCenterID: "no-luster-1", MachineType: "epyc-rome-rtx-a5000", GPUModel: "RTX A5000", GPUModelID: "nvidia-rtx-a5000",
		MinVcpuPerMemoryGib: 0.259109, MaxVcpuPerMemoryGib: 1.036437, MinVcpuPerGPU: 1, MaxVcpuPerGPU: 16, MaxVcpuFree: 116, MaxMemoryGibFree: 219, MaxGPUFree: 4, MinVcpu: 1, MinMemoryGib: 1}
	for _, tt := range []struct {
		name      string
		change    func(*machineType)
		k         int
		vcpu, ram float64
		ok        bool
	}{
		{"the default shape", func(*machineType) {}, 2, 8, 16, true},
		{"at most 2 vCPU per GPU", func(m *machineType) { m.MaxVcpuPerGPU = 2 }, 2, 4, 8, true},
		{"at least 6 vCPU per GPU, RAM follows the ratio bound", func(m *machineType) { m.MinVcpuPerGPU = 6; m.MaxVcpuPerMemoryGib = 0.5 }, 1, 6, 12, true},
		{"at least 1 vCPU per GiB", func(m *machineType) { m.MinVcpuPerMemoryGib = 1 }, 1, 4, 4, true},
		{"the host has 6 vCPUs free", func(m *machineType) { m.MaxVcpuFree = 6 }, 2, 0, 0, false},
		{"the host has 12 GiB free", func(m *machineType) { m.MaxMemoryGibFree = 12 }, 2, 0, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mt := a5000
			tt.change(&mt)
			v, m, ok := shape(mt, tt.k, true)
			if v != tt.vcpu || m != tt.ram || ok != tt.ok {
				t.Errorf("shape(%d) = %v vCPU, %v GiB, %v; want %v, %v, %v", tt.k, v, m, ok, tt.vcpu, tt.ram, tt.ok)
			}
		})
	}
}

func TestSoldOut(t *testing.T) {
	os.Unsetenv(keyEnv)
	body := strings.Replace(catalogOnly(t), `"maxGpuFree":4`, `"maxGpuFree":0`, 1)
	snap, err := setup(t, &cudoServer{types: body}, Config{}).Fetch(context.Background())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	w := want[3]
	w.Available = pricing.SoldOut
	if !reflect.DeepEqual(snap.Offers, []pricing.Offer{w}) {
		t.Errorf("offers = %+v; want the one-GPU shape marked sold out", snap.Offers)
	}
}

func TestErrors(t *testing.T) {
	fixture, err := os.ReadFile("testdata/vms_machine_types.json")
	if err != nil {
		t.Fatal(err)
	}
	body := string(fixture)
	for _, tt := range []struct {
		name, types, want string
		regions           []string
	}{
		{name: "truncated", types: body[:strings.Index(body, `"0.520000"`)], want: "cudo: machine types: truncated JSON body: ends inside machineTypes[1].gpuPriceHr.value"},
		{name: "price not a number", types: strings.Replace(body, `"0.520000"`, `"free"`, 1), want: "cudo: machine types: malformed JSON at machineTypes.gpuPriceHr.value"},
		{name: "price missing", types: strings.Replace(body, `"gpuPriceHr": {
        "value": "0.05"
      },`, ``, 1), want: "cudo: machineTypes[0] (cascade-lake in br-saopaulo-1): gpuPriceHr.value is missing"},
		{name: "machineTypes missing", types: `{}`, want: "cudo: machine types: machineTypes is missing"},
		{name: "none listed", types: `{"machineTypes": []}`, want: "cudo: the API listed no GPU offers"},
		{name: "none in the regions", types: body, regions: []string{"se-smedjebacken-1"}, want: "cudo: no valid offers among 2 listed (none in the configured regions)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Unsetenv(keyEnv)
			_, err := setup(t, &cudoServer{types: tt.types}, Config{Common: providers.Common{Regions: tt.regions}}).Fetch(context.Background())
			providertest.WantError(t, err, tt.want, pricing.Unavailable)
		})
	}
}

func TestDescriptor(t *testing.T) {
	providertest.CheckDescriptor(t, Descriptor, Name, providers.Needs{Kind: providers.NeedsOptionalKey, KeyEnv: DefaultAPIKeyEnv, Where: "Cudo Compute console, API keys"},
		Config{}, Config{Common: providers.Common{Endpoint: "ftp://x"}})
}

// BenchmarkFetch is one refresh's fetch of the fixtures (gpu-models and machine-types)
// from a local fake API (issue 29's refresh time per adapter).
func BenchmarkFetch(b *testing.B) {
	os.Unsetenv(keyEnv)
	srv := providertest.Serve(b, &cudoServer{})
	p, err := New(Config{Common: providers.Common{Endpoint: srv.URL}, APIKeyEnv: keyEnv}, httpx.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchFetch(b, p)
}

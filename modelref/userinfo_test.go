package modelref

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHubUserinfoNotShown: with HF_ENDPOINT=http://user:password@host, neither an
// unreachable Hub's error nor a fetched model's note holds the user name or the
// password (issue 30: the password reached the /v1/estimate error body).
func TestHubUserinfoNotShown(t *testing.T) {
	_, err := Resolve(context.Background(), "acme/secret-model", "", Options{Endpoint: "http://mirroruser:hunter2pass@127.0.0.1:1"})
	if err == nil {
		t.Fatal("an unreachable Hub resolved")
	}
	for _, bad := range []string{"hunter2pass", "mirroruser"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("error %q shows %q", err, bad)
		}
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error %q lost the host", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4096,"intermediate_size":11008,"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":32,"vocab_size":32000,"max_position_embeddings":4096,"torch_dtype":"float16"}`))
	}))
	defer srv.Close()
	ep := strings.Replace(srv.URL, "http://", "http://mirroruser:hunter2pass@", 1)
	m, err := Resolve(context.Background(), "acme/llama-like", "", Options{Endpoint: ep})
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(m.Notes, " "); strings.Contains(notes, "hunter2pass") || strings.Contains(notes, "mirroruser") || !strings.Contains(notes, srv.URL) {
		t.Errorf("notes %q", notes)
	}
}

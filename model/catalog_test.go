package model

import (
	"strings"
	"testing"
)

func TestCatalogSizeAndLookup(t *testing.T) {
	entries := Catalog()
	if len(entries) < 60 {
		t.Fatalf("catalog has %d models, want >= 60", len(entries))
	}
	for _, e := range entries {
		for _, key := range append([]string{e.Name, e.HFID, strings.ToUpper(e.Name)}, e.Aliases...) {
			m, ok, err := CatalogModel(key)
			if !ok || err != nil {
				t.Errorf("CatalogModel(%q): ok %v err %v", key, ok, err)
				continue
			}
			if m.Name != e.Name || m.HFID != e.HFID {
				t.Errorf("CatalogModel(%q) = %s/%s, want %s/%s", key, m.Name, m.HFID, e.Name, e.HFID)
			}
			if m.Params() <= 0 {
				t.Errorf("%s: params %d", key, m.Params())
			}
		}
	}
}

func TestImagePipelines(t *testing.T) {
	tests := []struct {
		name       string
		components []string
		minParams  float64
	}{
		{"sd-1.5", []string{"unet", "text_encoder", "vae"}, 1.0e9},
		{"sdxl-base", []string{"unet", "text_encoder", "text_encoder_2", "vae"}, 3.4e9},
		{"flux.1-dev", []string{"transformer", "text_encoder", "text_encoder_2", "vae"}, 16.8e9},
	}
	for _, tt := range tests {
		m, ok, err := CatalogModel(tt.name)
		if !ok || err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !m.IsImageModel() {
			t.Errorf("%s: not an image model", tt.name)
		}
		have := map[string]int64{}
		for _, c := range m.Pipe.Components {
			have[c.Name] = c.Params
		}
		for _, c := range tt.components {
			if have[c] <= 0 {
				t.Errorf("%s: component %s missing", tt.name, c)
			}
		}
		if float64(m.Params()) < tt.minParams {
			t.Errorf("%s: params %d < %g", tt.name, m.Params(), tt.minParams)
		}
	}
}

func TestClosestNames(t *testing.T) {
	got := ClosestCatalogNames("llama-2-7", 3)
	if len(got) == 0 || !strings.HasPrefix(got[0], "llama-2-7b") {
		t.Errorf("ClosestCatalogNames(llama-2-7) = %v, want llama-2-7b first", got)
	}
	got = ClosestCatalogNames("mistrl-7b", 3)
	if len(got) == 0 || got[0] != "mistral-7b" {
		t.Errorf("ClosestCatalogNames(mistrl-7b) = %v", got)
	}
}

package model

import (
	"testing"
)

// TestArchitecturesFallback: a config without model_type is read by its architectures
// entry, the longest known prefix winning (Llama4… is llama4, not llama).
func TestArchitecturesFallback(t *testing.T) {
	for arch, want := range map[string]string{
		"Llama4ForConditionalGeneration": "llama4", "LlamaForCausalLM": "llama", "Phi3ForCausalLM": "phi3",
		"PhiForCausalLM": "phi", "Qwen3MoeForCausalLM": "qwen3_moe", "Qwen3ForCausalLM": "qwen3",
		"DeepseekV3ForCausalLM": "deepseek_v3", "GptOssForCausalLM": "gpt_oss", "Gemma2ForCausalLM": "gemma2",
	} {
		for i := 0; i < 20; i++ { // map order varies between runs of the loop
			c := &hfConfig{src: "x", m: map[string]any{"architectures": []any{arch}}}
			if got, err := c.modelType(); err != nil || got != want {
				t.Fatalf("%s: %q %v, want %q", arch, got, err, want)
			}
		}
	}
}

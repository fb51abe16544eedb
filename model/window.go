package model

import (
	"fmt"
	"math"
)

// Sliding-window and chunked attention. A windowed layer attends only to the last W
// tokens (Gemma 3's local layers: W = 1024; gpt-oss's banded layers: W = 128) or to the
// tokens of its own chunk (Llama 4's RoPE layers: attention_chunk_size 8192), so an
// engine that knows it (vLLM's hybrid KV-cache manager, HF's HybridCache) keeps at most
// W tokens of keys and values for those layers, while the global layers keep the whole
// sequence. Gemma 3 technical report (arXiv:2503.19786, section 2 "Architecture"): five
// local layers (window 1024) per global layer, chosen to shrink the KV cache.

// setWindows records which layers are windowed. kvPerLayer is the KV elements one layer
// keeps per token. Only architectures whose reference implementation caps the cache are
// treated so (Gemma 2 and Mistral's sliding_window are left as full caches, which is what
// HF's default DynamicCache and the measured cases in testdata keep).
func (m *Model) setWindows(c *hfConfig, L, kvPerLayer int64) error {
	switch m.Architecture {
	case "gemma3_text", "gpt_oss":
	default:
		return nil
	}
	rd := &cfgReader{c: c}
	W := rd.optInt(0, "sliding_window")
	P := rd.optInt(0, "sliding_window_pattern", "_sliding_window_pattern")
	if rd.err != nil {
		return rd.err
	}
	if W == 0 {
		return nil
	}
	var windowed int64
	if types, ok := c.m["layer_types"].([]any); ok {
		if int64(len(types)) != L {
			return fieldErr(c.src, "layer_types", "has %d entries for %d layers", len(types), L)
		}
		for i, t := range types {
			switch t {
			case "sliding_attention", "chunked_attention":
				windowed++
			case "full_attention":
			default:
				return fieldErr(c.src, "layer_types", "entry %d is %v; want sliding_attention or full_attention", i, t)
			}
		}
	} else if P > 0 {
		// transformers Gemma3TextConfig: layer i is global when (i+1) % pattern == 0.
		windowed = L - L/P
	}
	m.setWindowed(W, windowed, kvPerLayer)
	if windowed > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d of %d layers attend within a %d-token sliding window: their KV cache is capped at the window (vLLM's hybrid KV-cache manager, HF's HybridCache)", windowed, L, W))
	}
	return nil
}

// setWindowed moves n layers of kvPerLayer elements per token from the full cache to a
// cache capped at w tokens.
func (m *Model) setWindowed(w, n, kvPerLayer int64) {
	if w <= 0 || n <= 0 {
		return
	}
	m.kvWindow = w
	m.kvWindowed = n * kvPerLayer
	m.KVPerToken -= m.kvWindowed
}

// kvElems is the KV cache of batch sequences of seq tokens, in elements: full-attention
// layers keep every token, windowed layers at most the window.
func (m *Model) KVElems(batch, seq float64) float64 {
	e := seq * float64(m.KVPerToken+m.kvPerTokenCross)
	if m.kvWindowed > 0 {
		e += math.Min(seq, float64(m.kvWindow)) * float64(m.kvWindowed)
	}
	return batch * e
}

// KVBytesPerToken is the KV cache one sequence of seq tokens needs per token, in bytes at
// bytesPerElem (2 for a 16-bit cache, 1 for fp8), averaged over the sequence.
func (m *Model) KVBytesPerToken(seq int, bytesPerElem float64) float64 {
	if seq <= 0 {
		return 0
	}
	return m.KVElems(1, float64(seq)) / float64(seq) * bytesPerElem
}

package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// servingFit is the part of a recommended offer the launch line must agree with.
type servingFit struct {
	Provider     string  `json:"provider"`
	InstanceType string  `json:"instance_type"`
	GPUsUsed     int     `json:"gpus_used"`
	USDPerMIn    float64 `json:"usd_per_m_input_tokens"`
	Notes        []string
	Serving      *struct {
		Engine             string  `json:"engine"`
		Parallel           int     `json:"parallel"`
		MemoryFraction     float64 `json:"memory_fraction"`
		MaxModelLen        int     `json:"max_model_len"`
		MaxModelLenDefault bool    `json:"max_model_len_default"`
		KVTokens           int     `json:"kv_tokens"`
		Launch             string  `json:"launch"`
	} `json:"serving"`
}

func flagsOf(line string) map[string]string {
	f := strings.Fields(line)
	out := map[string]string{}
	for i := 0; i+1 < len(f); i++ {
		if strings.HasPrefix(f[i], "--") {
			out[f[i]] = f[i+1]
		}
	}
	return out
}

// TestServingLaunchAgrees: every serving pick's launch line (JSON serving.launch, and the
// -v text) carries the numbers its estimate used: the GPUs it runs on, the context and
// the memory fraction; where the default max_model_len does not fit, the pick names the
// shorter one it was sized with.
func TestServingLaunchAgrees(t *testing.T) {
	db := tempDB(t)
	for _, args := range [][]string{
		{"--model", "llama-3.1-8b-instruct", "--prompt-tokens", "1000", "--output-tokens", "200", "--batch", "32", "--gpu-model", "H100"},
		{"--model", "qwen3-32b", "--gpu-model", "H100,A100-80GB"},                     // 40,960 tokens do not fit one card
		{"--model", "llama-3.1-70b-instruct", "--quant", "fp8", "--gpu-model", "A40"}, // W8A16 on Ampere
	} {
		r := runCLI(t, db, false, append(append([]string{"recommend"}, args...), "--top", "5", "-o", "json")...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		var out struct {
			Offers []servingFit `json:"offers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Offers) == 0 {
			t.Fatalf("%v: no offer", args)
		}
		shortened := false
		for _, o := range out.Offers {
			s := o.Serving
			if s == nil || s.Engine != "vllm" || !strings.HasPrefix(s.Launch, "vllm serve ") {
				t.Fatalf("%v: %s %s: serving %+v", args, o.Provider, o.InstanceType, s)
			}
			fl := flagsOf(s.Launch)
			tp := 1
			if v, ok := fl["--tensor-parallel-size"]; ok {
				tp, _ = strconv.Atoi(v)
			}
			if tp != o.GPUsUsed || s.Parallel != o.GPUsUsed {
				t.Errorf("%s: launch %q runs %d GPUs, the pick %d (serving.parallel %d)", o.InstanceType, s.Launch, tp, o.GPUsUsed, s.Parallel)
			}
			if fl["--max-model-len"] != strconv.Itoa(s.MaxModelLen) {
				t.Errorf("%s: launch %q, max_model_len %d", o.InstanceType, s.Launch, s.MaxModelLen)
			}
			if u, _ := strconv.ParseFloat(fl["--gpu-memory-utilization"], 64); u != s.MemoryFraction {
				t.Errorf("%s: launch %q, memory_fraction %v", o.InstanceType, s.Launch, s.MemoryFraction)
			}
			if !s.MaxModelLenDefault {
				shortened = true
				if !strings.Contains(strings.Join(o.Notes, "\n"), "--max-model-len "+strconv.Itoa(s.MaxModelLen)+" does") {
					t.Errorf("%s: shortened to %d without saying so: %q", o.InstanceType, s.MaxModelLen, o.Notes)
				}
			}
		}
		if args[1] == "qwen3-32b" && !shortened {
			t.Errorf("qwen3-32b bf16 at 40,960 tokens fit every card: %+v", out.Offers)
		}
		// -v prints the same lines.
		v := runCLI(t, db, false, append(append([]string{"recommend"}, args...), "--top", "5", "-v")...)
		for _, o := range out.Offers {
			if !strings.Contains(v.stdout, o.Serving.Launch) {
				t.Errorf("-v output lacks %q:\n%s", o.Serving.Launch, v.stdout)
			}
		}
	}
}

// TestEstimateJobVocabulary: estimate takes every job flag recommend does, and a workload
// longer than --seq-len is an input error naming both.
func TestEstimateJobVocabulary(t *testing.T) {
	db := tempDB(t)
	r := runCLI(t, db, false, "estimate", "--model", "llama-3.1-8b-instruct", "--prompt-tokens", "2000", "--output-tokens", "500",
		"--engine", "vllm", "--headroom", "5", "--split", "tensor", "--gpus", "2", "--gpu-memory-utilization", "0.85", "--max-model-len", "8192")
	if r.code != 0 || !strings.Contains(r.stdout, "launch: vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 --max-model-len 8192 --gpu-memory-utilization 0.85") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, cmd := range []string{"estimate", "recommend"} {
		r := runCLI(t, db, false, cmd, "--model", "llama-3.1-8b-instruct", "--seq-len", "1250", "--prompt-tokens", "2000", "--output-tokens", "500")
		if r.code != 2 || !strings.Contains(r.stderr, "--seq-len 1250") || !strings.Contains(r.stderr, "--prompt-tokens 2000") || !strings.Contains(r.stderr, "--output-tokens 500") {
			t.Errorf("%s: exit %d: %s", cmd, r.code, r.stderr)
		}
	}
}

package config

import (
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// Issue 18, case 9: durations and schedules are range-checked, and an overflowing day
// count is an error naming its key instead of a wrapped (tiny) duration.
func TestRangesAndOverflowNameTheKey(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		// 213504 days * 24 h overflows int64 nanoseconds; it used to become ~25 minutes.
		{"keep_history overflow", "[store]\nkeep_history = \"213504d\"\n", []string{"keep_history", ":2:", "too large"}},
		{"keep_history too short", "[store]\nkeep_history = \"5m\"\n", []string{"[store] keep_history", ":2:", "between 1h"}},
		{"every one second", "[refresh]\nschedule = \"@every 1s\"\n", []string{"[refresh] schedule", ":2:", "minimum interval"}},
		{"every negative", "[refresh]\nschedule = \"@every -5m\"\n", []string{"[refresh] schedule", "minimum interval"}},
		{"provider every 30s", "[providers.lambda]\nschedule = \"@every 30s\"\n", []string{"providers.lambda", "minimum interval"}},
		{"timeout too long", "[refresh]\ntimeout = \"48h\"\n", []string{"[refresh] timeout", ":2:", "between 1s and 1d"}},
		{"provider timeout too short", "[providers.runpod]\ntimeout = \"10ms\"\n", []string{"[providers.runpod] timeout", ":2:"}},
		{"stale_after tiny", "[recommend]\nstale_after = \"1s\"\n", []string{"[recommend] stale_after", ":2:"}},
		{"parallel huge", "[refresh]\nparallel = 100000\n", []string{"[refresh] parallel", ":2:", "between 1 and 64"}},
		{"answer cap huge", "[refresh]\nmax_answer_mib = 100000\n", []string{"[refresh] max_answer_mib", ":2:"}},
		// Issue 26: a negative count used to become the default silently.
		{"parallel negative", "[refresh]\nparallel = -3\n", []string{"[refresh] parallel -3", "picker.toml:2:1", "between 1 and 64"}},
		{"parallel zero", "[refresh]\nparallel = 0\n", []string{"[refresh] parallel 0", ":2:"}},
		{"max_concurrent zero", "[daemon]\nmax_concurrent = 0\n", []string{"[daemon] max_concurrent 0", ":2:"}},
		{"timeout zero", "[refresh]\ntimeout = \"0s\"\n", []string{"[refresh] timeout 0s", ":2:", "between 1s"}},
		// Issue 26: a bad listen port used to fail only when the daemon listened (exit 1,
		// no file or line).
		{"listen port too big", "[daemon]\nlisten = \"127.0.0.1:99999\"\n", []string{"[daemon] listen", "picker.toml:2:1", `port "99999"`, "0 to 65535"}},
		{"listen without port", "[store]\n[daemon]\nlisten = \"localhost\"\n", []string{"[daemon] listen", ":3:", "HOST:PORT"}},
		{"listen port not a number", "[daemon]\nlisten = \":http-alt\"\n", []string{"[daemon] listen", ":2:", `port "http-alt"`}},
		{"token in token_env", "[daemon]\ntoken_env = \"s3cr3t-t0ken!\"\n", []string{"[daemon] token_env", ":2:", "NAME of an environment variable"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "picker.toml")
			if err == nil {
				t.Fatalf("accepted %q", tt.src)
			}
			if pricing.ErrorCode(err) != pricing.Invalid {
				t.Errorf("code %v, want Invalid", pricing.ErrorCode(err))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error echoes the token: %q", err)
			}
		})
	}
}

func TestRangesAcceptTheirBounds(t *testing.T) {
	src := "[store]\nkeep_history = \"36500d\"\n[refresh]\nschedule = \"@every 1m\"\ntimeout = \"24h\"\nmax_answer_mib = 1\nparallel = 64\n[daemon]\nlisten = \"[::1]:0\"\ntoken_env = \"PICKER_TOKEN\"\nhosts = [\"picker.internal\"]\nallow_hub = true\nmax_concurrent = 8\n"
	c, err := Parse([]byte(src), "picker.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Daemon.TokenEnv != "PICKER_TOKEN" || !c.Daemon.AllowHub || c.Daemon.MaxConcurrent != 8 || c.Refresh.MaxAnswerMiB != 1 || len(c.Daemon.Hosts) != 1 ||
		c.Refresh.Parallel != 64 || c.Daemon.Listen != "[::1]:0" {
		t.Errorf("daemon %+v refresh %+v", c.Daemon, c.Refresh)
	}
	d := Default()
	if d.Refresh.MaxAnswerMiB != DefaultMaxAnswerMiB || d.Daemon.MaxConcurrent != DefaultMaxConcurrent() || d.Daemon.MaxConcurrent < 8 || d.Daemon.MaxConcurrent > 64 {
		t.Errorf("defaults %+v %+v", d.Refresh, d.Daemon)
	}
}

func TestSecretsNamesEveryEnvKey(t *testing.T) {
	src := "[daemon]\ntoken_env = \"PICKER_TOKEN\"\n[providers.lambda]\napi_key_env = \"MY_LAMBDA\"\n[providers.runpod]\napi_key_env = \"rp-pasted-key-123456\"\n"
	c, err := Parse([]byte(src), "picker.toml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PICKER_TOKEN": "daemon-token-1", "MY_LAMBDA": "lambda-key-2", "HF_TOKEN": "hf_token_3", "UNRELATED": "x"}
	got := strings.Join(c.Secrets(func(k string) string { return env[k] }), " ")
	for _, w := range []string{"daemon-token-1", "lambda-key-2", "hf_token_3", "rp-pasted-key-123456"} {
		if !strings.Contains(got, w) {
			t.Errorf("Secrets = %q, missing %q", got, w)
		}
	}
}

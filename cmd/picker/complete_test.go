package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// runComplete runs `picker __complete ARGS...` (what the shell scripts of `picker
// completion SHELL` call) through Main.Run and returns the candidates.
func runComplete(t *testing.T, args ...string) []string {
	t.Helper()
	var out, errb bytes.Buffer
	tty := false
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir()}
	m := Main{Stdout: &out, Stderr: &errb, Args: append([]string{"__complete"}, args...), TTY: &tty,
		Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return fixedNow }}
	if code := m.Run(context.Background()); code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", args, code, errb.String())
	}
	var cands []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" && !strings.HasPrefix(l, ":") {
			cands = append(cands, strings.SplitN(l, "\t", 2)[0])
		}
	}
	return cands
}

func TestCompletionOfFlagValues(t *testing.T) {
	has := func(t *testing.T, args []string, want ...string) []string {
		t.Helper()
		got := runComplete(t, args...)
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("__complete %q = %q; want %q among them", args, got, w)
			}
		}
		return got
	}
	if got := has(t, []string{"recommend", "--task", "q"}, "qlora"); len(got) != 1 {
		t.Errorf("--task q completes to %q; want only qlora", got)
	}
	has(t, []string{"estimate", "--precision", ""}, "bf16-mixed", "fp8-mixed")
	has(t, []string{"recommend", "--quant", "n"}, "nf4", "none")
	has(t, []string{"recommend", "--shard", ""}, "zero3", "fsdp")
	has(t, []string{"recommend", "--model", "llama-2"}, "llama-2-7b")
	has(t, []string{"offers", "--gpu-model", "H1"}, "H100")
	has(t, []string{"offers", "--gpu-model", "A100-80GB,H1"}, "A100-80GB,H100")
	has(t, []string{"recommend", "--provider", ""}, "aws", "gcp", "static")
	has(t, []string{"offers", "--purchase", ""}, "spot", "on-demand")
	has(t, []string{"offers", "-o", ""}, "json", "csv", "table")

	// --region: the stored offers' regions; a database that does not exist is not made.
	db := filepath.Join(t.TempDir(), "picker.db")
	if got := runComplete(t, "offers", "--db", db, "--region", "us-"); len(got) != 0 {
		t.Errorf("--region without a database: %q", got)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("completing --region created the database")
	}
	if r := runCLI(t, db, false, "offers", "-o", "json", "--limit", "1"); r.code != 0 {
		t.Fatalf("offers: %d %s", r.code, r.stderr)
	}
	got := has(t, []string{"offers", "--db", db, "--region", "us-east-"}, "us-east-1")
	if len(got) > maxRegionCandidates {
		t.Errorf("%d region candidates; want at most %d", len(got), maxRegionCandidates)
	}
	for _, g := range got {
		if !strings.HasPrefix(g, "us-east-") {
			t.Errorf("region candidate %q does not start with us-east-", g)
		}
	}
	if got := runComplete(t, "offers", "--db", db, "--provider", "gcp", "--region", "us-east-"); slices.Contains(got, "us-east-1") {
		t.Errorf("--provider gcp --region us-east- offers AWS's us-east-1: %q", got)
	}
}

func TestSuggestMistypedCommand(t *testing.T) {
	r := runCLI(t, tempDB(t), false, "recomend")
	if r.code != exitUsage || !strings.Contains(r.stderr, "Did you mean this?") || !strings.Contains(r.stderr, "\trecommend") {
		t.Errorf("picker recomend: exit %d: %s", r.code, r.stderr)
	}
	r = runCLI(t, tempDB(t), false, "zzzzzz")
	if r.code != exitUsage || strings.Contains(r.stderr, "Did you mean") || !strings.Contains(r.stderr, `unknown command "zzzzzz"`) {
		t.Errorf("picker zzzzzz: exit %d: %s", r.code, r.stderr)
	}
}

func TestHelpCommand(t *testing.T) {
	r := runCLI(t, tempDB(t), false, "help", "recommend")
	if r.code != 0 || !strings.Contains(r.stdout, "picker recommend [flags]") || !strings.Contains(r.stdout, "--tokens") {
		t.Errorf("picker help recommend: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

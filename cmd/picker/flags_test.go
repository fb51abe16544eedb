package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pickergpu/picker/fit"
)

// Issue 26: the job flags are bound as text (so a flag, a query parameter and a form
// field parse alike) and showed as "string" in --help; they show their value's type.
func TestFlagHelpShowsTypes(t *testing.T) {
	for _, cmd := range []string{"estimate", "recommend"} {
		r := runCLI(t, tempDB(t), false, cmd, "--help")
		if r.code != 0 {
			t.Fatalf("%s --help: exit %d %s", cmd, r.code, r.stderr)
		}
		for _, want := range []string{"--batch int", "--grad-accum int", "--seq-len int", "--lora-r int", "--gpus int", "--images int",
			"--lora-dropout float", "--resolution WxH", "--nodes int|auto", "--task string", "--grad-ckpt  "} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s --help lacks %q", cmd, want)
			}
		}
		if cmd == "recommend" {
			for _, want := range []string{"--tokens float", "--setup duration", "--deadline duration"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("recommend --help lacks %q", want)
				}
			}
		}
		if m := regexp.MustCompile(`--(batch|grad-accum|seq-len|lora-r|gpus|images|lora-dropout|nodes|resolution|tokens|setup|deadline) string`).FindString(r.stdout); m != "" {
			t.Errorf("%s --help shows %q", cmd, m)
		}
		if !strings.Contains(r.stdout, "(default 1)") || strings.Contains(r.stdout, `(default "1")`) {
			t.Errorf("%s --help: a numeric default is quoted as a string", cmd)
		}
	}
}

// The Type each job flag declares is the one its parser holds to: a flag that takes
// whole numbers says int, one that takes numbers says float, and a flag said to be a
// string is no number in disguise. A new job flag that forgets its Type fails here.
func TestFlagJobParamTypesAreHonest(t *testing.T) {
	ok := func(jp fit.JobParam, v string) bool { var j fit.Job; return jp.Set(&j, v) == nil }
	for _, jp := range fit.JobParams {
		switch {
		case jp.Bool:
			if jp.Type != "" {
				t.Errorf("--%s is a switch with Type %q", jp.Name, jp.Type)
			}
		case jp.Type == "int" || jp.Type == "int|auto":
			if !ok(jp, "2") || ok(jp, "2.5") || ok(jp, "two") {
				t.Errorf("--%s says %s: accepts 2 %v, 2.5 %v, two %v", jp.Name, jp.Type, ok(jp, "2"), ok(jp, "2.5"), ok(jp, "two"))
			}
		case jp.Type == "float":
			if !ok(jp, "0.25") || ok(jp, "x") {
				t.Errorf("--%s says float: accepts 0.25 %v, x %v", jp.Name, ok(jp, "0.25"), ok(jp, "x"))
			}
		case jp.Type == "":
			if ok(jp, "0.25") && !ok(jp, "abc") {
				t.Errorf("--%s takes numbers only but shows as a string: give it a Type", jp.Name)
			}
		}
	}
}

// Issue 26: --provider and --purchase are one definition (flags.go) in every command
// that takes them: the same type and help, the same default text, the same checks.
func TestFlagProviderAndPurchaseShared(t *testing.T) {
	a := &app{m: Main{Getenv: func(string) string { return "" }}}
	root := a.rootCmd()
	const suffix = " (names as 'picker providers' lists them, e.g. aws,lambda)"
	for _, name := range []string{"offers", "export", "recommend", "history", "refresh"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		p := cmd.Flags().Lookup("provider")
		if p == nil || p.Value.Type() != "stringSlice" || !strings.HasSuffix(p.Usage, suffix) {
			t.Errorf("%s --provider: %+v; want a comma list whose help ends %q", name, p, suffix)
		}
		if name == "refresh" {
			continue
		}
		u := cmd.Flags().Lookup("purchase")
		def := map[bool]string{true: "on-demand", false: "any"}[name == "recommend"]
		if u == nil || u.Value.Type() != "string" || u.Usage != "on-demand, spot or any" || u.DefValue != def {
			t.Errorf("%s --purchase: %+v; want a string, help %q, default %q", name, u, "on-demand, spot or any", def)
		}
	}
	db := tempDB(t)
	for _, args := range [][]string{
		{"offers"}, {"export"}, {"recommend", "--model", "llama-2-7b"}, {"history", "--gpu-model", "H100"},
	} {
		r := runCLI(t, db, false, append(args, "--purchase", "cheap")...)
		if r.code != 2 || !strings.Contains(r.stderr, `--purchase "cheap": want on-demand, spot or any`) {
			t.Errorf("%s --purchase cheap: exit %d %q", args[0], r.code, r.stderr)
		}
	}
	for _, args := range [][]string{
		{"offers"}, {"export"}, {"recommend", "--model", "llama-2-7b"}, {"history", "--instance-type", "x"}, {"refresh"},
	} {
		r := runCLI(t, db, false, append(args, "--provider", "awz")...)
		if r.code != 2 || !strings.Contains(r.stderr, `--provider "awz": `) || !strings.Contains(r.stderr, "closest: aws") {
			t.Errorf("%s --provider awz: exit %d %q; want 2 naming the value and the closest names", args[0], r.code, r.stderr)
		}
	}
	if r := runCLI(t, db, false, "history", "--provider", "aws,gcp", "--instance-type", "x"); r.code != 2 || !strings.Contains(r.stderr, "give one") {
		t.Errorf("history with two providers: exit %d %q", r.code, r.stderr)
	}
}

// Issue 26: shell completion (cobra's) works and README says how to turn it on.
func TestHelpCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "bash completion", "zsh": "compdef _picker picker", "fish": "fish completion for picker"} {
		r := runCLI(t, tempDB(t), false, "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s: exit %d, %d bytes (stderr %q)", shell, r.code, len(r.stdout), r.stderr)
		}
	}
	for _, doc := range []string{"README.md", "docs/CONTRACT.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "picker completion bash|zsh|fish") {
			t.Errorf("%s does not document `picker completion bash|zsh|fish`", doc)
		}
	}
}

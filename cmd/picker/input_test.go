package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Input that never surprises (issue 14): every case asserts the exit code and the words
// of the message, and that no Go type or strconv detail leaks.
func TestUsageMistakesExit2WithHelp(t *testing.T) {
	db := tempDB(t)
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("[providers.aws]\nenabled = \"yes\"\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown provider", []string{"recommend", "--model", "llama-2-7b", "--provider", "awz"}, []string{`--provider "awz"`, "closest: aws", "picker recommend --help"}},
		{"unknown region", []string{"offers", "--region", "us-eats-1"}, []string{`--region "us-eats-1"`, "closest: ", "us-east-1"}},
		{"unknown purchase", []string{"recommend", "--model", "llama-2-7b", "--purchase", "spto"}, []string{`--purchase "spto"`, "on-demand, spot or any"}},
		{"switch with a separate value", []string{"recommend", "--model", "llama-2-7b", "--task", "lora", "--grad-ckpt", "false"}, []string{`unexpected argument "false"`, "--grad-ckpt=false", "picker recommend --help"}},
		{"other switch with a separate value", []string{"estimate", "--model", "sdxl-base", "--vae-tiling", "true"}, []string{"--vae-tiling=true"}},
		{"stray argument", []string{"estimate", "--model", "llama-2-7b", "extra"}, []string{`unexpected argument "extra"`, "picker estimate --help"}},
		{"int flag", []string{"recommend", "--model", "llama-2-7b", "--top", "abc"}, []string{`--top "abc": want a whole number`}},
		{"unknown flag", []string{"offers", "--top", "3"}, []string{"unknown flag: --top", "picker offers --help"}},
		{"config type", []string{"--config", bad, "offers"}, []string{`key "providers.aws.enabled"`, "want true or false", bad + ":2"}},
		{"lora-r on inference", []string{"estimate", "--model", "llama-2-7b", "--lora-r", "16"}, []string{"--lora-r does not apply to --task inference"}},
		{"batch on image generation", []string{"estimate", "--model", "sdxl-base", "--batch", "2"}, []string{"--batch does not apply to --task image-gen", "--images"}},
		{"params disagreeing with model", []string{"estimate", "--model", "llama-2-7b", "--params", "70b"}, []string{"--params 70b"}},
		{"lora rank beyond the layer", []string{"estimate", "--model", "llama-2-7b", "--task", "lora", "--lora-r", "5000"}, []string{"--lora-r 5000", "(4096)"}},
		{"export -o and --format disagree", []string{"export", "-o", "json", "--format", "csv"}, []string{"--format csv and -o json disagree"}},
		{"export --out a directory", []string{"export", "--out", t.TempDir()}, []string{"is a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, db, false, tt.args...)
			if r.code != 2 {
				t.Errorf("exit %d; want 2 (stderr %q)", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			for _, leak := range []string{"strconv.", "of type ", "picker: picker", "toml: "} {
				if strings.Contains(r.stderr, leak) {
					t.Errorf("stderr %q leaks %q", r.stderr, leak)
				}
			}
		})
	}
}

func TestWarningsNameTheLimit(t *testing.T) {
	db := tempDB(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"estimate", "--model", "llama-2-7b", "--seq-len", "100000"}, "beyond llama-2-7b's 4096 positions"},
		{[]string{"estimate", "--model", "llama-2-7b", "--task", "full-ft", "--shard", "zero3", "--gpus", "1"}, "--shard zero3 on 1 GPU shards nothing"},
	} {
		r := runCLI(t, db, false, tt.args...)
		if r.code != 0 || !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 0 and a warning %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

func TestTopIsClampedAndRegionsGrouped(t *testing.T) {
	db := tempDB(t)
	r := runCLI(t, db, false, "recommend", "--model", "llama-3-8b", "--task", "full-ft", "--top", "1000000000", "-o", "json")
	if r.code != 0 {
		t.Fatalf("--top 1e9: exit %d %s", r.code, r.stderr)
	}
	type recJSON struct {
		Offers []struct {
			Provider     string   `json:"provider"`
			Region       string   `json:"region"`
			InstanceType string   `json:"instance_type"`
			Regions      []string `json:"regions"`
		} `json:"offers"`
	}
	var rec recJSON
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	grouped := false
	for _, o := range rec.Offers {
		if len(o.Regions) > 1 {
			grouped = true
			if !strings.HasPrefix(o.Regions[0], o.Region) {
				t.Errorf("%s: regions %v do not start with its own %s", o.InstanceType, o.Regions, o.Region)
			}
		}
	}
	if !grouped {
		t.Error("no offer lists several regions: the snapshot sells lambda's B200 in many")
	}
	r = runCLI(t, db, false, "recommend", "--model", "llama-3-8b", "--task", "full-ft", "--by-region", "--top", "40", "-o", "json")
	rec = recJSON{}
	json.Unmarshal([]byte(r.stdout), &rec)
	dups := 0
	for _, o := range rec.Offers {
		k := o.Provider + " " + o.InstanceType
		if seen[k] {
			dups++
		}
		seen[k] = true
		if len(o.Regions) > 0 {
			t.Errorf("--by-region row %s lists regions %v", k, o.Regions)
		}
	}
	if dups == 0 {
		t.Error("--by-region shows each instance once; want one row per region")
	}
}

func TestExportHonoursOutputAndMode(t *testing.T) {
	db := tempDB(t)
	r := runCLI(t, db, false, "export", "-o", "json", "--gpu-model", "H100")
	if r.code != 0 || !strings.HasPrefix(strings.TrimSpace(r.stdout), "[") {
		t.Fatalf("export -o json: exit %d, stdout starts %.40q", r.code, r.stdout)
	}
	dir := t.TempDir()
	um := syscall.Umask(0o027)
	defer syscall.Umask(um)
	fresh := filepath.Join(dir, "new.csv")
	if r := runCLI(t, db, false, "export", "--out", fresh); r.code != 0 {
		t.Fatalf("export --out: %d %s", r.code, r.stderr)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o640 {
		t.Errorf("new file mode %v; want 0640 (0666 less umask 027)", fi.Mode().Perm())
	}
	old := filepath.Join(dir, "old.csv")
	os.WriteFile(old, []byte("x"), 0o604)
	os.Chmod(old, 0o604)
	if r := runCLI(t, db, false, "export", "--out", old); r.code != 0 {
		t.Fatalf("export --out existing: %d %s", r.code, r.stderr)
	}
	if fi, _ := os.Stat(old); fi.Mode().Perm() != 0o604 {
		t.Errorf("existing file mode %v; want its own 0604 kept", fi.Mode().Perm())
	}
}

func TestStaticPriceFiles(t *testing.T) {
	for _, tt := range []struct {
		name, offers string
		code         int
		want         string
	}{
		{"native TOML date", "observed = 2026-11-29\n", 0, ""},
		{"future date", "observed = 2030-01-01\n", 1, "is in the future"},
		{"unknown GPU", "", 1, `mine.toml:8 (box-2): unknown GPU "Z9000"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pf := filepath.Join(dir, "mine.toml")
			src := "[[offers]]\nregion = \"lab\"\ninstance_type = \"box-1\"\ngpu_model = \"H100\"\nprice_usd_hr = 2.0\n" + tt.offers
			if tt.name == "unknown GPU" {
				src += "\n\n[[offers]]\nregion = \"lab\"\ninstance_type = \"box-2\"\ngpu_model = \"Z9000\"\nprice_usd_hr = 0.1\n"
			}
			os.WriteFile(pf, []byte(src), 0o644)
			cfg := filepath.Join(dir, "c.toml")
			os.WriteFile(cfg, []byte("[providers.static]\nfiles = [\""+pf+"\"]\n"), 0o644)
			r := runCLI(t, filepath.Join(dir, "p.db"), false, "--config", cfg, "refresh")
			if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Errorf("exit %d, output %q %q; want %d with %q", r.code, r.stdout, r.stderr, tt.code, tt.want)
			}
		})
	}
}

func TestDBOfAnotherProgramIsRefusedUntouched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec("CREATE TABLE notes (x); INSERT INTO notes VALUES (1)")
	db.Close()
	before, _ := os.ReadFile(path)
	r := runCLI(t, path, false, "offers")
	after, _ := os.ReadFile(path)
	if r.code != 2 || !strings.Contains(r.stderr, "is not a picker database") || !bytes.Equal(before, after) {
		t.Errorf("exit %d, stderr %q, changed %v; want 2, 'not a picker database', untouched", r.code, r.stderr, !bytes.Equal(before, after))
	}
}

func TestConfigExampleAsIs(t *testing.T) {
	r := runCLI(t, tempDB(t), false, "--config", filepath.Join("..", "..", "config.example.toml"), "providers")
	if r.code != 0 {
		t.Errorf("providers with config.example.toml: exit %d %s", r.code, r.stderr)
	}
}

func TestOneLineErrors(t *testing.T) {
	got := oneLine("13/13 regions failed:\n us-east-1: 403\n us-west-2: 403\n")
	if strings.Contains(got, "\n") || !strings.HasPrefix(got, "13/13 regions failed:") || !strings.Contains(got, "2 more line") {
		t.Errorf("oneLine = %q", got)
	}
	if oneLine("plain") != "plain" {
		t.Error("a one-line message changed")
	}
}

func TestVersionAndVerbose(t *testing.T) {
	db := tempDB(t)
	r := runCLI(t, db, false, "version", "-o", "json")
	var v VersionInfo
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || v.SnapshotDate == "" || v.SchemaVersion < 1 || v.Version == "" {
		t.Errorf("version: exit %d %q", r.code, r.stdout)
	}
	r = runCLI(t, db, false, "recommend", "--model", "llama-2-7b", "-v")
	for _, w := range []string{"opened price database", "msg=recommend", "offers_read="} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("-v stderr lacks %q: %s", w, r.stderr)
		}
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/pickergpu/picker/recommend"
)

// answerJSON is the part of recommend's JSON the output tests compare the table
// output with.
type answerJSON struct {
	Offers   []struct{} `json:"offers"`
	Warnings []string   `json:"warnings"`
	Excluded []struct {
		GPUModel string `json:"gpu_model"`
		Offers   int    `json:"offers"`
		Reason   string `json:"reason"`
		Code     string `json:"code"`
	} `json:"excluded"`
	Rejected []struct {
		Change string `json:"change"`
		Flags  string `json:"flags"`
	} `json:"rejected"`
	Estimate struct {
		Assumptions []string `json:"assumptions"`
	} `json:"estimate"`
	NearestMiss string `json:"nearest_miss"`
}

func recommendAnswer(t *testing.T, db string, job ...string) answerJSON {
	t.Helper()
	r := runCLI(t, db, false, append(append([]string{"recommend"}, job...), "-o", "json")...)
	var out answerJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("recommend %v -o json: exit %d, %v: %s", job, r.code, err, r.stderr)
	}
	return out
}

// linesWith is how many lines of s contain sub.
func linesWith(s, sub string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// The exclusions are in the JSON's "excluded" only; its warnings do not repeat them.
func TestRecommendJSONExclusionsNotWarnings(t *testing.T) {
	ans := recommendAnswer(t, tempDB(t), "--model", "llama-2-7b", "--task", "qlora")
	if len(ans.Excluded) == 0 {
		t.Fatal("QLoRA on the embedded snapshot excluded nothing; the test needs GPUs without bitsandbytes")
	}
	for _, w := range ans.Warnings {
		for _, x := range ans.Excluded {
			if strings.Contains(w, x.GPUModel+" excluded") || strings.Contains(w, x.Reason) {
				t.Errorf("warning %q repeats the exclusion of %s", w, x.GPUModel)
			}
		}
	}
}

// The default answer is the headline and the table, then one line of exclusions (their
// totals per reason, as "excluded" counts them), and the other warnings on stderr;
// -q is the table alone; -v lists every exclusion and every rejected rung exactly once.
func TestRecommendOutputByVerbosity(t *testing.T) {
	db := tempDB(t)
	job := []string{"--model", "llama-2-7b", "--task", "qlora"}
	ans := recommendAnswer(t, db, job...)
	total, byCode, models := 0, map[string]int{}, map[string]bool{}
	for _, x := range ans.Excluded {
		total += x.Offers
		byCode[recommend.ExclusionLabel(x.Code)] += x.Offers
		models[x.GPUModel] = true
	}
	if len(ans.Rejected) == 0 || len(ans.Offers) == 0 {
		t.Fatalf("the job has %d offers and %d rejected rungs; the test needs both", len(ans.Offers), len(ans.Rejected))
	}
	summaryRe := regexp.MustCompile(`(?m)^(\d+) offers on (\d+) GPU models left out: (.*); -v for the list$`)
	isWarning := regexp.MustCompile(`(?m)^warning: `)

	for _, tt := range []struct {
		name  string
		flags []string
		check func(t *testing.T, r result)
	}{
		{"default", nil, func(t *testing.T, r result) {
			lines := strings.Split(r.stdout, "\n")
			if !strings.HasPrefix(lines[0], "llama-2-7b, qlora") || !strings.HasPrefix(lines[3], "PROVIDER\t") {
				t.Errorf("stdout does not start with the headline and the table:\n%s", r.stdout)
			}
			m := summaryRe.FindAllStringSubmatch(r.stdout, -1)
			if len(m) != 1 {
				t.Fatalf("want one exclusion summary line, got %d:\n%s", len(m), r.stdout)
			}
			if m[0][1] != fmt.Sprint(total) || m[0][2] != fmt.Sprint(len(models)) {
				t.Errorf("summary %q; want %d offers on %d GPU models (the JSON's excluded)", m[0][0], total, len(models))
			}
			for label, n := range byCode {
				if !strings.Contains(m[0][3], fmt.Sprintf("%s (%d)", label, n)) {
					t.Errorf("summary %q lacks %s (%d)", m[0][0], label, n)
				}
			}
			if strings.Index(r.stdout, m[0][0]) < strings.LastIndex(r.stdout, "\ton-demand\t") {
				t.Errorf("the summary comes before the end of the table:\n%s", r.stdout)
			}
			if got := len(isWarning.FindAllString(r.stderr, -1)); got != len(ans.Warnings) {
				t.Errorf("stderr has %d warnings; want the JSON's %d:\n%s", got, len(ans.Warnings), r.stderr)
			}
			for _, w := range ans.Warnings {
				if linesWith(r.stderr, "warning: "+w) != 1 {
					t.Errorf("warning %q not on stderr once:\n%s", w, r.stderr)
				}
			}
			for g := range models {
				if strings.Contains(r.stderr, " "+g+" ") {
					t.Errorf("stderr names excluded GPU %s:\n%s", g, r.stderr)
				}
			}
			if strings.Contains(r.stdout, "left out of the ladder") {
				t.Errorf("the rejected rungs are -v's:\n%s", r.stdout)
			}
		}},
		{"quiet", []string{"-q"}, func(t *testing.T, r result) {
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if len(lines) != 1+len(ans.Offers) || !strings.HasPrefix(lines[0], "PROVIDER\t") {
				t.Errorf("stdout is not the table alone (header + %d rows):\n%s", len(ans.Offers), r.stdout)
			}
			for _, l := range lines {
				if strings.Count(l, "\t") != strings.Count(lines[0], "\t") {
					t.Errorf("line %q is not a table row", l)
				}
			}
			if r.stderr != "" {
				t.Errorf("stderr under -q: %q", r.stderr)
			}
		}},
		{"verbose", []string{"-v"}, func(t *testing.T, r result) {
			all := r.stdout + r.stderr
			for _, x := range ans.Excluded {
				if n := linesWith(all, x.GPUModel+"\t") + linesWith(all, " "+x.GPUModel+" excluded"); n != 1 {
					t.Errorf("exclusion of %s (%q) printed %d times:\n%s", x.GPUModel, x.Reason, n, all)
				}
				if !strings.Contains(r.stdout, fmt.Sprintf("%s\t%d\t%s\t%s\n", x.GPUModel, x.Offers, x.Code, x.Reason)) {
					t.Errorf("stdout lacks the row of %s:\n%s", x.GPUModel, r.stdout)
				}
			}
			if summaryRe.MatchString(r.stdout) {
				t.Errorf("-v prints the list, not the summary line:\n%s", r.stdout)
			}
			for _, x := range ans.Rejected {
				if n := linesWith(all, x.Change+"\t"+x.Flags) + linesWith(all, `"`+x.Change+`"`); n != 1 {
					t.Errorf("rejected rung %q printed %d times:\n%s", x.Change, n, all)
				}
			}
			for _, a := range ans.Estimate.Assumptions {
				if n := strings.Count(all, strings.TrimPrefix(a, "hf default: ")); n != 1 {
					t.Errorf("assumption %q printed %d times", a, n)
				}
			}
			for _, w := range ans.Warnings {
				if n := linesWith(r.stderr, w); n != 1 {
					t.Errorf("warning %q printed %d times (a note repeating it?):\n%s", w, n, r.stderr)
				}
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, db, false, append(append([]string{"recommend"}, job...), tt.flags...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			tt.check(t, r)
		})
	}
}

// When nothing fits, -q prints no table and the error (exit 3) alone carries the
// nearest miss.
func TestRecommendQuietNothingFits(t *testing.T) {
	db := tempDB(t)
	job := []string{"--model", "llama-2-70b", "--task", "full-ft", "--max-gpus", "1"}
	ans := recommendAnswer(t, db, job...)
	if len(ans.Offers) != 0 || ans.NearestMiss == "" {
		t.Fatalf("want a job nothing fits; got %d offers, nearest miss %q", len(ans.Offers), ans.NearestMiss)
	}
	r := runCLI(t, db, false, append(append([]string{"recommend"}, job...), "-q")...)
	if r.code != exitNoFit || r.stdout != "" || r.stderr != "picker: no offer fits: "+ans.NearestMiss+"\n" {
		t.Errorf("-q: exit %d, stdout %q, stderr %q; want exit 3, nothing on stdout, the nearest miss once on stderr", r.code, r.stdout, r.stderr)
	}
}

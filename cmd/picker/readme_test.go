package main

// TestREADMESamples keeps the sample output in README.md true by construction: it runs
// each sample's command and fails when the block differs from what the command prints.
//
//	go test ./cmd/picker -run TestREADMESamples -update
//
// rewrites the blocks that differ with what the commands print now (only the lines between
// a sample's fences; nothing else in README.md is touched).
//
// The rule: a fenced block in README.md is either a list of commands to type, fenced
// ```sh, or a sample of output (any other fence: ``` or ```text), and every sample has a
// marker on the line right above its opening fence naming the command that prints it:
//
//	<!-- sample: picker ARGS... -->
//	<!-- sample OPTION=VALUE OPTION=VALUE: picker ARGS... -->
//
// (an HTML comment: GitHub does not show it). A sample without a marker, a marker that
// is not right above an opening fence, or one above a ```sh block fails the test, so a new
// sample cannot go in untested. ARGS are split at spaces; there is no quoting.
//
// How a sample is made: ARGS run in process (Main.Run) on a fresh database, which the
// embedded snapshot seeds, with no config file, the clock pinned to fixedNow and TTY on
// (tables aligned with spaces, as on a terminal); the command must exit 0. The block is
// its stdout followed by the lines of its stderr that start with "warning: " (the
// warnings a reader is meant to see; log records such as "created price database …" and
// progress bars are left out), with trailing spaces cut from every line.
//
// Options (only what the samples need):
//
//	drop-columns=A,B  columns A and B are left out of every table that has them (a table
//	                  is a line of column headers and the lines below it up to a blank
//	                  line or the warnings), and the other columns are re-aligned as the
//	                  CLI aligns them; for a sample whose prose says which columns it
//	                  leaves out.
//	setup=fake-clouds the command runs against refresh_e2e_test.go's test servers
//	                  (fakeClouds: Azure, Lambda and RunPod answering with the fixtures
//	                  under providers/*/testdata), with --config naming them; the clock
//	                  starts at fixedNow and runs at real speed, so durations are real.
//	mask=A            column A's cells vary from run to run (a duration): they are not
//	                  compared, and -update rewrites the block, with this run's values,
//	                  only when something else differs.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var updateREADME = flag.Bool("update", false, "rewrite README.md's sample blocks with what their commands print (TestREADMESamples)")

const readmePath = "../../README.md"

// readmeSample is one marked block: its marker (1-based line) and its content, the lines
// lines[from:to] of README.md (0-based, between the fences).
type readmeSample struct {
	line     int
	args     []string
	opts     map[string]string
	from, to int
}

func (s readmeSample) String() string {
	return fmt.Sprintf("README.md:%d `picker %s`", s.line, strings.Join(s.args, " "))
}

var (
	sampleMarkerRe  = regexp.MustCompile(`^<!-- sample((?: [a-z-]+=[^\s:]+)*): picker ((?:\S+ )*\S+) -->$`)
	sampleOptionSet = map[string]bool{"drop-columns": true, "setup": true, "mask": true}
)

// parseREADMESamples finds the marked samples in lines and says what breaks the rule.
func parseREADMESamples(lines []string) (samples []readmeSample, problems []string) {
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "<!-- sample") && (i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```")) {
			problems = append(problems, fmt.Sprintf("README.md:%d: a sample marker not right above an opening ``` fence", i+1))
		}
		fence := strings.TrimLeft(l, " ")
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		info := strings.TrimSpace(strings.TrimPrefix(fence, "```"))
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if end == len(lines) {
			problems = append(problems, fmt.Sprintf("README.md:%d: a ``` fence that is never closed", i+1))
			break
		}
		marker := ""
		if i > 0 && strings.HasPrefix(lines[i-1], "<!-- sample") {
			marker = lines[i-1]
		}
		switch {
		case info == "sh" && marker != "":
			problems = append(problems, fmt.Sprintf("README.md:%d: a sample marker above a ```sh block (commands to type, not output)", i))
		case info == "sh":
		case marker == "":
			problems = append(problems, fmt.Sprintf("README.md:%d: a ```%s block without a sample marker (<!-- sample: picker ARGS... --> on the line above); output samples must be made by TestREADMESamples, command lists are fenced ```sh", i+1, info))
		case fence != l:
			problems = append(problems, fmt.Sprintf("README.md:%d: an indented sample fence; samples are fenced at the start of the line", i+1))
		default:
			s, err := parseSampleMarker(marker)
			if err != nil {
				problems = append(problems, fmt.Sprintf("README.md:%d: %v", i, err))
				break
			}
			s.line, s.from, s.to = i, i+1, end
			samples = append(samples, s)
		}
		i = end
	}
	return samples, problems
}

func parseSampleMarker(marker string) (readmeSample, error) {
	m := sampleMarkerRe.FindStringSubmatch(marker)
	if m == nil {
		return readmeSample{}, fmt.Errorf("marker %q is not <!-- sample[ OPTION=VALUE...]: picker ARGS... -->", marker)
	}
	s := readmeSample{args: strings.Fields(m[2]), opts: map[string]string{}}
	if strings.ContainsAny(m[2], `"'`) {
		return s, fmt.Errorf("marker %q: ARGS are split at spaces, quotes are not understood", marker)
	}
	for _, o := range strings.Fields(m[1]) {
		k, v, _ := strings.Cut(o, "=")
		if !sampleOptionSet[k] {
			return s, fmt.Errorf("marker %q: unknown option %q (known: drop-columns, setup, mask)", marker, k)
		}
		s.opts[k] = v
	}
	if v := s.opts["setup"]; v != "" && v != "fake-clouds" {
		return s, fmt.Errorf("marker %q: unknown setup %q (known: fake-clouds)", marker, v)
	}
	return s, nil
}

// runSample runs s's command as the rule at the top of this file says and returns the
// lines of its block.
func runSample(t *testing.T, s readmeSample) []string {
	t.Helper()
	args := append([]string{"--db", tempDB(t)}, s.args...)
	now := func() time.Time { return fixedNow }
	if s.opts["setup"] == "fake-clouds" {
		t.Setenv("PICKER_TEST_LAMBDA_KEY", "secret-lambda-key")
		az, lm, rp := fakeClouds(t, false)
		args = append([]string{"--config", cloudConfig(t, az.URL, lm.URL, rp.URL, "1m")}, args...)
		start := time.Now()
		now = func() time.Time { return fixedNow.Add(time.Since(start)) }
	}
	var out, errb strings.Builder
	tty := true
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir()}
	m := Main{Stdout: &out, Stderr: &errb, Args: args, TTY: &tty, Getenv: func(k string) string { return env[k] }, Now: now}
	if code := m.Run(context.Background()); code != 0 {
		t.Fatalf("%s: exit %d; a sample's command must exit 0:\n%s", s, code, errb.String())
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.HasPrefix(l, "warning: ") {
			lines = append(lines, l)
		}
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	if cols := s.opts["drop-columns"]; cols != "" {
		var err error
		if lines, err = reshapeTables(lines, strings.Split(cols, ","), true); err != nil {
			t.Fatalf("%s: drop-columns=%s: %v", s, cols, err)
		}
	}
	return lines
}

// reshapeTables drops (drop) or blanks (otherwise: every cell below the header becomes
// "*") the named columns of every table in lines whose header line has one of them, and
// re-aligns those tables as text/tabwriter with padding 2 does (table.write on a
// terminal). The cells are cut at the header's column offsets, in runes as tabwriter counts
// them; a table has its header line and the lines below it up to a blank line or the
// warnings (the block's lines from stderr).
func reshapeTables(lines, names []string, drop bool) ([]string, error) {
	out := slices.Clone(lines)
	found := map[string]bool{}
	for i := 0; i < len(out); i++ {
		starts, heads := headerColumns(out[i])
		hit := make([]bool, len(heads))
		named := false
		for k, h := range heads {
			if slices.Contains(names, h) {
				hit[k], named, found[h] = true, true, true
			}
		}
		if !named {
			continue
		}
		end := i
		for end < len(out) && strings.TrimSpace(out[end]) != "" && !strings.HasPrefix(out[end], "warning: ") {
			end++
		}
		var rows [][]string
		for r, l := range out[i:end] {
			rl := []rune(l)
			var row []string
			for k, st := range starts {
				if st > len(rl) {
					row = append(row, "")
					continue
				}
				if st > 0 && rl[st-1] != ' ' {
					return nil, fmt.Errorf("line %q is not aligned under the header %q", l, out[i])
				}
				stop := len(rl)
				if k+1 < len(starts) && starts[k+1] < stop {
					stop = starts[k+1]
				}
				cell := strings.TrimSpace(string(rl[st:stop]))
				if hit[k] && !drop && r > 0 {
					cell = "*"
				}
				if !hit[k] || !drop {
					row = append(row, cell)
				}
			}
			rows = append(rows, row)
		}
		copy(out[i:end], alignCells(rows))
		i = end
	}
	for _, n := range names {
		if !found[n] {
			return nil, fmt.Errorf("no table has a column %s", n)
		}
	}
	return out, nil
}

// headerColumns cuts a line into the cells text/tabwriter separates by two or more
// spaces: their rune offsets and texts.
func headerColumns(line string) (starts []int, cells []string) {
	rl := []rune(line)
	for i := 0; i < len(rl); {
		if rl[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(rl) && !(rl[j] == ' ' && (j+1 == len(rl) || rl[j+1] == ' ')) {
			j++
		}
		starts, cells = append(starts, i), append(cells, string(rl[i:j]))
		i = j
	}
	return starts, cells
}

func alignCells(rows [][]string) []string {
	var width []int
	for _, r := range rows {
		for k, c := range r {
			if k == len(width) {
				width = append(width, 0)
			}
			width[k] = max(width[k], utf8.RuneCountInString(c))
		}
	}
	lines := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		for k, c := range r {
			b.WriteString(c)
			if k+1 < len(r) {
				b.WriteString(strings.Repeat(" ", width[k]-utf8.RuneCountInString(c)+2))
			}
		}
		lines[i] = strings.TrimRight(b.String(), " ")
	}
	return lines
}

// comparable returns a README block and a command's output as they are compared: with
// the masked column's cells made "*" in both.
func comparable(s readmeSample, readme, got []string) ([]string, []string, error) {
	col := s.opts["mask"]
	if col == "" {
		return readme, got, nil
	}
	r, err := reshapeTables(readme, []string{col}, false)
	if err != nil {
		return nil, nil, fmt.Errorf("mask=%s in the README block: %v", col, err)
	}
	g, err := reshapeTables(got, []string{col}, false)
	if err != nil {
		return nil, nil, fmt.Errorf("mask=%s in the output: %v", col, err)
	}
	return r, g, nil
}

// lineDiff is a line diff of a and b: "-" lines only in a, "+" only in b, " " in both.
func lineDiff(a, b []string) string {
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var d strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			fmt.Fprintf(&d, "  %s\n", a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			fmt.Fprintf(&d, "- %s\n", a[i])
			i++
		default:
			fmt.Fprintf(&d, "+ %s\n", b[j])
			j++
		}
	}
	return d.String()
}

func TestREADMESamples(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	samples, problems := parseREADMESamples(lines)
	for _, p := range problems {
		t.Error(p)
	}
	if len(samples) == 0 {
		t.Fatal("README.md has no sample markers")
	}
	fresh := map[int][]string{} // by the index of a sample whose block is to be rewritten
	for n, s := range samples {
		t.Run(fmt.Sprintf("line%d", s.line), func(t *testing.T) {
			got := runSample(t, s)
			readme, output, err := comparable(s, lines[s.from:s.to], got)
			switch {
			case err != nil:
				t.Fatalf("%s: %v", s, err)
			case slices.Equal(readme, output):
			case *updateREADME:
				fresh[n] = got
			default:
				masked := ""
				if col := s.opts["mask"]; col != "" {
					masked = ", " + col + " masked"
				}
				t.Errorf("%s: the sample differs from what the command prints (- README, + output%s); go test ./cmd/picker -run TestREADMESamples -update rewrites it:\n%s",
					s, masked, lineDiff(readme, output))
			}
		})
	}
	if len(fresh) == 0 {
		return
	}
	for n := len(samples) - 1; n >= 0; n-- { // from the end, so earlier offsets hold
		if got, ok := fresh[n]; ok {
			s := samples[n]
			lines = slices.Replace(lines, s.from, s.to, got...)
			t.Logf("%s: rewritten", s)
		}
	}
	if err := os.WriteFile(readmePath, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

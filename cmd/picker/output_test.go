package main

import (
	"strings"
	"testing"
)

// TestTablesTerminalAndPipe runs every table-printing command both ways: on a terminal
// the columns are aligned with spaces; in a pipe the same rows are tab-separated with a
// constant column count, so `cut -f` works.
func TestTablesTerminalAndPipe(t *testing.T) {
	db := tempDB(t)
	cmds := [][]string{
		{"offers", "--gpu-model", "L4", "--limit", "5"},
		{"gpus"},
		{"providers"},
		{"history", "--provider", "lambda", "--instance-type", "gpu_1x_a10"},
		{"recommend", "--model", "llama-3.2-1b", "--task", "lora", "--top", "3"},
		{"estimate", "--model", "llama-2-7b", "--task", "qlora"},
	}
	for _, args := range cmds {
		t.Run(args[0], func(t *testing.T) {
			pipe := runCLI(t, db, false, args...)
			term := runCLI(t, db, true, args...)
			if pipe.code != 0 || term.code != 0 {
				t.Fatalf("exit %d/%d: %s %s", pipe.code, term.code, pipe.stderr, term.stderr)
			}
			if strings.Contains(term.stdout, "\t") {
				t.Errorf("terminal output has tabs:\n%s", term.stdout)
			}
			if !strings.Contains(pipe.stdout, "\t") {
				t.Errorf("pipe output has no tab-separated table:\n%s", pipe.stdout)
			}
			// Every tab-separated block keeps one column count from its header down.
			var cols int
			for _, l := range strings.Split(pipe.stdout, "\n") {
				n := strings.Count(l, "\t")
				switch {
				case n == 0:
					cols = 0 // a blank line or text between tables
				case cols == 0:
					cols = n
				case n != cols:
					t.Errorf("row %q has %d tabs; its table's header has %d", l, n, cols)
				}
			}
			if pl, tl := strings.Count(pipe.stdout, "\n"), strings.Count(term.stdout, "\n"); pl != tl {
				t.Errorf("pipe has %d lines, terminal %d; want the same rows", pl, tl)
			}
		})
	}
}

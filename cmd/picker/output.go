package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pickergpu/picker/pricing"
)

// IOStreams is where a command's output goes and how it looks: the format (-o), whether
// Out is a terminal (aligned tables, progress, footers) or a pipe (tab-separated), and the
// clock that ages are measured against. Tests fill it with buffers.
type IOStreams struct {
	Out, ErrOut io.Writer
	Format      string // table, json or csv
	TTY         bool
	Verbose     bool // -v: tables add detail (recommend's time-cost frontier, exclusions, assumptions, per-offer notes, the ladder's rejected rungs)
	Quiet       bool // -q: the result alone (recommend: the offers' table), no warnings
	Now         func() time.Time
}

// streams is where commands print, as the global flags and the terminal say.
func (a *app) streams() *IOStreams {
	return &IOStreams{Out: a.stdout, ErrOut: a.stderr, Format: a.output, TTY: a.tty, Verbose: a.verbose, Quiet: a.quiet && !a.verbose, Now: a.now}
}

// table is a rendered result: headers and rows of cells. The same table goes to a
// terminal (aligned, with units in the headers) and to a pipe (the same columns, tab
// separated so `cut -f` and `awk -F'\t'` work).
type table struct {
	headers []string
	rows    [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer, tty bool) error {
	if !tty {
		for _, r := range append([][]string{t.headers}, t.rows...) {
			if _, err := fmt.Fprintln(w, strings.Join(r, "\t")); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.headers, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeCSV(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// writeFileAtomic writes through a temporary file in the same directory and renames
// it over path, so readers never see a half-written export.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	mode, err := outFileMode(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// num formats a float compactly: no trailing zeros, at most prec decimals.
func num(v float64, prec int) string { return pricing.FormatNum(v, prec) }

func roundTo(v float64, prec int) float64 { return pricing.RoundTo(v, prec) }

// usd formats a dollar figure as the ranking compares it (pricing.RoundUSD): cents, more
// digits below $1.
func usd(v float64) string { return pricing.FormatUSD(v) }

// formatAge renders an age the way a table wants it: "45 s", "3 h", "112 d".
func formatAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0 s"
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	default:
		return fmt.Sprintf("%d d", int(d.Hours()/24))
	}
}

// oneLine keeps a table row on one line: a multi-line message ("13/13 regions failed:"
// then one line per region) becomes its first line and a count of the rest; JSON, CSV
// and -v logs carry it whole.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	first, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return s
	}
	n := strings.Count(strings.TrimSpace(rest), "\n") + 1
	first = strings.TrimSpace(first)
	if !strings.HasSuffix(first, ":") && first != "" {
		first += ";"
	}
	return fmt.Sprintf("%s … %d more line(s) (-o json or -v for all)", first, n)
}

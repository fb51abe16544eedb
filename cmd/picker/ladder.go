package main

import (
	"fmt"

	"github.com/pickergpu/picker/recommend"
)

// writeLadder prints the savings ladder (the rungs that do the work for less, each on its
// own), the combined plan, what the ladder leaves out, and with -v the rungs left out and
// why (there only: RunRecommend does not log them too). The cost column is the ranking's figure (job $, $/M tokens, $/1K images; $/HR
// with --rank hourly), $/HR beside it.
func writeLadder(s *IOStreams, r *recommend.Recommendation) error {
	w := s.Out
	rankHeader, _, ranked := rankedColumn(r.RankedBy)
	row := func(t *table, st recommend.LadderStep) {
		cheapest, price, saving := "nothing fits", "-", "fits"
		if st.Cheapest != nil {
			cheapest = fmt.Sprintf("%s %s %s", st.Cheapest.Provider, st.Cheapest.Region, st.Cheapest.InstanceType)
			price = usd(st.Cheapest.PriceUSDHr)
		}
		if st.SavingPct != nil {
			saving = num(*st.SavingPct, 1) + " %"
		}
		cells := []string{st.Change, st.Flags, num(st.NeedPerGPUGiB, 1), cheapest}
		if ranked {
			cells = append(cells, optUSD(recommend.RankedStepValue(r.RankedBy, &st), "-"))
		}
		t.add(append(cells, price, saving, "×"+num(st.Slowdown, 2), st.Tradeoff)...)
	}
	headers := []string{"CHANGE", "FLAGS", "NEED/GPU", "CHEAPEST"}
	if ranked {
		headers = append(headers, rankHeader)
	}
	headers = append(headers, "$/HR", "SAVING", "TIME", "TRADE-OFF")
	switch {
	case len(r.Ladder) > 0:
		fmt.Fprintln(w, "\nsavings ladder (each change on its own; SAVING and TIME against the top offer's cost and time for the job as asked):")
		t := &table{headers: headers}
		for _, st := range r.Ladder {
			row(t, st)
		}
		if err := t.write(w, s.TTY); err != nil {
			return err
		}
	case len(r.Offers) > 0 && len(r.Rejected) > 0:
		why := " (-v says why)"
		if s.Verbose {
			why = "" // the table of rungs left out, below, says it
		}
		fmt.Fprintf(w, "\nsavings ladder: none of %d changes does the job for less than the top offer%s\n", len(r.Rejected), why)
	}
	if r.Plan != nil {
		fmt.Fprintln(w, "\nplan (the cheapest combination):")
		t := &table{headers: headers}
		row(t, r.Plan.LadderStep)
		if err := t.write(w, s.TTY); err != nil {
			return err
		}
	}
	if r.LadderOmits != "" && (len(r.Ladder) > 0 || len(r.Rejected) > 0) {
		fmt.Fprintln(w, "\nladder "+r.LadderOmits)
	}
	if s.Verbose && len(r.Rejected) > 0 {
		fmt.Fprintln(w, "\nleft out of the ladder (-v):")
		t := &table{headers: []string{"CHANGE", "FLAGS", "WHY"}}
		for _, x := range r.Rejected {
			t.add(x.Change, x.Flags, x.Reason)
		}
		return t.write(w, s.TTY)
	}
	return nil
}

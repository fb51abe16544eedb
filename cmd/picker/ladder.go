package main

import (
	"fmt"

	"github.com/pickergpu/picker/recommend"
)

// writeLadder prints the savings ladder (the rungs that save money, each on its own),
// the combined plan, and with -v the rungs left out and why.
func writeLadder(s *IOStreams, r *recommend.Recommendation) error {
	w := s.Out
	row := func(t *table, st recommend.LadderStep) {
		cheapest, price, saving := "nothing fits", "-", "fits"
		if st.Cheapest != nil {
			cheapest = fmt.Sprintf("%s %s %s", st.Cheapest.Provider, st.Cheapest.Region, st.Cheapest.InstanceType)
			price = usd(st.Cheapest.PriceUSDHr)
		}
		if st.SavingPct != nil {
			saving = num(*st.SavingPct, 1) + " %"
		}
		t.add(st.Change, st.Flags, num(st.NeedPerGPUGiB, 1), cheapest, price, saving, "×"+num(st.Slowdown, 2), st.Tradeoff)
	}
	headers := []string{"CHANGE", "FLAGS", "NEED/GPU", "CHEAPEST", "$/HR", "SAVING", "TIME", "TRADE-OFF"}
	if len(r.Ladder) > 0 {
		fmt.Fprintln(w, "\nsavings ladder (each change on its own; TIME is the job's time with it over without):")
		t := &table{headers: headers}
		for _, st := range r.Ladder {
			row(t, st)
		}
		if err := t.write(w, s.TTY); err != nil {
			return err
		}
	}
	if r.Plan != nil {
		fmt.Fprintln(w, "\nplan (the cheapest combination):")
		t := &table{headers: headers}
		row(t, r.Plan.LadderStep)
		if err := t.write(w, s.TTY); err != nil {
			return err
		}
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

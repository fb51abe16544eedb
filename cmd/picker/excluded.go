package main

import (
	"fmt"

	"github.com/pickergpu/picker/recommend"
)

// writeExclusions says which offers recommend left out whatever their memory (the
// software stack, fp8, --vendor): one summary line by default (recommend.TallyExclusions,
// the web page's line too), every GPU model with its reason under -v. They are part of
// the answer (why an offer the user expected is not listed), so they go to stdout with
// it, once; a JSON reader has them in "excluded".
func writeExclusions(s *IOStreams, xs []recommend.Exclusion) error {
	if len(xs) == 0 {
		return nil
	}
	t := recommend.TallyExclusions(xs)
	if !s.Verbose {
		_, err := fmt.Fprintf(s.Out, "\n%s; -v for the list\n", t)
		return err
	}
	fmt.Fprintf(s.Out, "\n%s:\n", t.Head())
	tbl := &table{headers: []string{"GPU", "OFFERS", "CODE", "WHY"}}
	for _, x := range xs {
		tbl.add(x.GPUModel, fmt.Sprint(x.Offers), x.Code, x.Reason)
	}
	return tbl.write(s.Out, s.TTY)
}

package fit

import "strconv"

// The assumptions and warnings an estimate states are built on the recommender's hot
// path (tens of estimates per request, issue 29), so they concatenate their numbers with
// these instead of going through fmt.Sprintf (the few that depend on constants only are
// formatted once, with fmt). Each formats exactly as the fmt verb it
// replaces: fmt formats %e, %f and %g by calling strconv.AppendFloat with the verb and
// precision and only adds flags and padding, which these notes never use
// (TestNumberFormatsMatchFmt compares them over many values).

// fixed is fmt's %.<prec>f.
func fixed(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }

// general is fmt's %.<prec>g.
func general(x float64, prec int) string { return strconv.FormatFloat(x, 'g', prec, 64) }

// itoa is fmt's %d of an int.
func itoa(n int) string { return strconv.Itoa(n) }

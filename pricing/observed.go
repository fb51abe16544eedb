package pricing

import (
	"fmt"
	"time"
)

// MinObserved is the earliest plausible observation date of a price: a date before 2000
// in a price file or an answer is a bad date, not an old price. Year 1 is Go's zero
// time, which the store reads as "unstated" and replaces with the refresh time, so a
// file's "0001-01-01" silently became the refresh time (issue 30).
var MinObserved = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// CheckObservedDate refuses a date a file or an answer gave that is before MinObserved.
func CheckObservedDate(t time.Time) error {
	if t.Before(MinObserved) {
		return fmt.Errorf("%s is before %d: not a plausible date", t.UTC().Format(time.DateOnly), MinObserved.Year())
	}
	return nil
}

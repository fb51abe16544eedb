package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// zonePrefixes are the zone prefixes cron's parser accepts before a spec
// (robfig/cron/v3 v3.0.1 parser.go Parse: "TZ=" or "CRON_TZ=", the zone up to the first
// space).
var zonePrefixes = []string{"CRON_TZ=", "TZ="}

// splitZone separates a leading TZ=/CRON_TZ= zone from spec. cron's parser slices the
// zone up to the first space without checking there is one, so "TZ=UTC" alone panicked
// inside it (issue 30); here that is an error, as is an unknown zone or no schedule
// after the zone.
func splitZone(spec string) (zone, rest string, err error) {
	for _, p := range zonePrefixes {
		after, ok := strings.CutPrefix(spec, p)
		if !ok {
			continue
		}
		zone, rest, ok = strings.Cut(after, " ")
		rest = strings.TrimSpace(rest)
		if !ok || rest == "" {
			return "", "", fmt.Errorf("%s%s has no schedule after the zone (write %s%s followed by a spec, e.g. %s%s 0 */6 * * *)", p, zone, p, zone, p, zone)
		}
		if _, err := time.LoadLocation(zone); err != nil || zone == "" {
			return "", "", fmt.Errorf("unknown time zone %q", zone)
		}
		return zone, rest, nil
	}
	return "", spec, nil
}

// Every returns the delay of an "@every" spec (after any zone prefix), negative or zero
// as written; ok is false for other specs. cron's parser turns a negative or sub-second delay into one second, so
// the text is read here instead.
func Every(spec string) (d time.Duration, ok bool, err error) {
	_, rest, err := splitZone(strings.TrimSpace(spec))
	if err != nil {
		return 0, false, err
	}
	after, ok := strings.CutPrefix(rest, "@every")
	if !ok {
		return 0, false, nil
	}
	d, err = time.ParseDuration(strings.TrimSpace(after))
	if err != nil {
		return 0, true, fmt.Errorf("bad @every duration: %v", err)
	}
	return d, true, nil
}

// parseSpec validates spec, its zone prefix and @every delay included, before cron's
// parser sees it, so no spec can panic there.
func parseSpec(spec string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, errors.New("empty spec")
	}
	if d, ok, err := Every(spec); err != nil {
		return nil, err
	} else if ok && d <= 0 {
		return nil, fmt.Errorf("@every %v is not a positive delay", d)
	}
	return cron.ParseStandard(spec)
}

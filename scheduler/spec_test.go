package scheduler

import (
	"strings"
	"testing"
)

// TestParseNeverPanics: specs that made cron's parser panic (a zone prefix with no
// space after it) or that it silently bent (a negative @every) are errors from Parse.
func TestParseNeverPanics(t *testing.T) {
	for spec, want := range map[string]string{
		"TZ=UTC":                 "no schedule after the zone",
		"CRON_TZ=UTC":            "no schedule after the zone",
		"TZ=":                    "no schedule after the zone",
		"CRON_TZ=UTC @every -5m": "not a positive delay",
		"@every 0s":              "not a positive delay",
		"":                       "empty spec",
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%q panicked: %v", spec, r)
				}
			}()
			if _, err := Parse(spec); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Parse(%q): %v; want %q", spec, err, want)
			}
		}()
	}
	if _, err := Parse("CRON_TZ=America/New_York 0 9 * * *"); err != nil {
		t.Errorf("a zoned spec: %v", err)
	}
}

package config

import (
	"strings"
	"testing"
)

// TestScheduleZonePrefix: a TZ=/CRON_TZ= prefix is validated (no panic in the cron
// parser for a zone with nothing after it), and the minimum interval and the sign of an
// @every delay are checked after the prefix (issue 30).
func TestScheduleZonePrefix(t *testing.T) {
	for _, tt := range []struct {
		spec string
		want string // "" for accepted
	}{
		{"TZ=UTC", "no schedule after the zone"},
		{"CRON_TZ=UTC", "no schedule after the zone"},
		{"CRON_TZ=UTC ", "no schedule after the zone"},
		{"TZ=UTC @every 1s", "minimum interval"},
		{"CRON_TZ=UTC @every -5m", "minimum interval"},
		{"TZ=Mars/Olympus 0 * * * *", "unknown time zone"},
		{"TZ=UTC @every 30m", ""},
		{"CRON_TZ=Europe/Paris 0 9 * * *", ""},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panicked: %v", r)
					}
				}()
				_, err = Parse([]byte("[refresh]\nschedule = \""+tt.spec+"\"\n"), "c.toml")
			}()
			if tt.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "c.toml:2") || !strings.Contains(err.Error(), "schedule") {
				t.Errorf("error %v; want %q at c.toml:2", err, tt.want)
			}
		})
	}
}

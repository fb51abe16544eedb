package config

import (
	"strings"
	"testing"
	"time"
)

// TestDefaultKeepHistoryAndAnswerCap: history is pruned by default (90 days), "0" still
// keeps everything, and max_answer_mib stops at what RSS can afford (issue 30: history
// grew without bound by default; 4096 MiB let a 3 GiB body pass 6 GiB RSS).
func TestDefaultKeepHistoryAndAnswerCap(t *testing.T) {
	c, err := Parse([]byte(""), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Store.KeepHistory.Duration != 90*24*time.Hour || Default().Store.KeepHistory.Duration != DefaultKeepHistory {
		t.Errorf("default keep_history %v; want 90 days", c.Store.KeepHistory.Duration)
	}
	c, err = Parse([]byte("[store]\nkeep_history = \"0\"\n"), "c.toml")
	if err != nil || c.Store.KeepHistory.Duration != 0 {
		t.Errorf("keep_history = \"0\": %v, %v; want it kept (0)", c.Store.KeepHistory.Duration, err)
	}
	if _, err := Parse([]byte("[refresh]\nmax_answer_mib = 4096\n"), "c.toml"); err == nil || !strings.Contains(err.Error(), "between 1 and 256") {
		t.Errorf("max_answer_mib = 4096: %v; want it refused", err)
	}
	if _, err := Parse([]byte("[refresh]\nmax_answer_mib = 256\n"), "c.toml"); err != nil {
		t.Errorf("max_answer_mib = 256: %v", err)
	}
}

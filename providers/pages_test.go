package providers

import (
	"strings"
	"testing"
)

// TestPageGuard: a token that repeats (A A, or A B A) or a list past MaxPages is an
// error naming the list; distinct tokens and the same token in another list are not.
func TestPageGuard(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tokens []string
		want   string // "" for no error
	}{
		{"distinct", []string{"", "a", "b", "c", ""}, ""},
		{"repeat", []string{"", "a", "a"}, "came back after 3 pages"},
		{"alternate", []string{"", "a", "b", "a"}, "came back after 4 pages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var g PageGuard
			var err error
			for _, tok := range tt.tokens {
				if err = g.Next("skus", tok); err != nil {
					break
				}
			}
			if (err == nil) != (tt.want == "") || err != nil && (!strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "skus: ")) {
				t.Errorf("error %v; want %q", err, tt.want)
			}
			if err := g.Next("other", "a"); err != nil {
				t.Errorf("another list's token: %v", err)
			}
		})
	}
	var g PageGuard
	var err error
	n := 0
	for ; err == nil && n < MaxPages+5; n++ {
		err = g.Next("endless", strings.Repeat("x", n+1))
	}
	if err == nil || n != MaxPages+1 || !strings.Contains(err.Error(), "does not end") {
		t.Errorf("after %d fresh tokens: %v; want a stop at page %d", n, err, MaxPages+1)
	}
}

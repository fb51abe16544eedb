package termsafe

import (
	"bytes"
	"testing"
)

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"p4d.24xlarge":            "p4d.24xlarge",
		"gpu\x1b]0;pwned\x07":     `gpu\x1b]0;pwned\x07`,
		"r\x1b[2J":                `r\x1b[2J`,
		"H100\u009b2J":            `H100\x9b2J`,
		"a\u202eb":                `a\u202eb`,
		"z\xff":                   `z\xff`,
		"two\nlines\tand tab":     "two\nlines\tand tab",
		"cr\roverwrite":           `cr\x0doverwrite`,
		"ünïcödé and \uFFFD kept": "ünïcödé and \uFFFD kept",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q; want %q", in, got, want)
		}
	}
	var b bytes.Buffer
	n, err := Writer{&b}.Write([]byte("x\x1b[31my"))
	if n != 7 || err != nil || b.String() != `x\x1b[31my` {
		t.Errorf("Writer: %d %v %q", n, err, b.String())
	}
	if Printable("a\tb") || !Printable("a-b.c") || Printable("a\x1b") {
		t.Error("Printable")
	}
}

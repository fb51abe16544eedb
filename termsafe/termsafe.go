// Package termsafe keeps text from outside picker (a provider's strings, an upstream
// error body, a stored row) from driving the terminal it is printed on: an ESC or OSC
// sequence can retitle, clear or rewrite a user's terminal, a C1 CSI (U+009B) does the
// same on terminals that honour it, and bidirectional overrides reorder what is shown
// (issue 30). Such characters are escaped, visibly, never passed through.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// unsafeRune reports a rune that must not reach a terminal raw: a control character
// (unicode.IsControl: C0, DEL, C1) other than newline and tab, or a bidirectional
// embedding, override or isolate (U+202A–U+202E, U+2066–U+2069).
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) && r != '\n' && r != '\t' || r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
}

// Printable reports whether s is valid UTF-8 with no unsafe rune and no newline or tab
// (a one-line name: an instance type, a region).
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unsafeRune(r) || r == '\n' || r == '\t' {
			return false
		}
	}
	return true
}

// String returns s with every unsafe rune written as \xHH or \uHHHH and every invalid
// byte as \xHH; newlines and tabs are kept. Clean text is returned as is.
func String(s string) string {
	clean := true
	for i, r := range s {
		if unsafeRune(r) || r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x100 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Writer escapes what is written through it with String. Each Write is escaped on its
// own; a rune split across two writes is escaped as its bytes.
type Writer struct{ W io.Writer }

func (w Writer) Write(p []byte) (int, error) {
	s := String(string(p))
	if len(s) == len(p) {
		if _, err := w.W.Write(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if _, err := io.WriteString(w.W, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

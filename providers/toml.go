package providers

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
)

// TOMLErrorString renders a go-toml decode error as "file:line:col: what", naming the
// key for unknown-key errors, so every TOML file picker reads (the config, static price files) reports errors the same
// way. It lives here because both the config and the static adapter import this package.
func TOMLErrorString(path string, err error) string {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		parts := make([]string, 0, len(strict.Errors))
		for _, e := range strict.Errors {
			row, col := e.Position()
			parts = append(parts, fmt.Sprintf("%s:%d:%d: unknown key %q", path, row, col, strings.Join(e.Key(), ".")))
		}
		return strings.Join(parts, "; ")
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		msg := plainTOMLType(de.Error())
		if k := de.Key(); len(k) > 0 {
			msg = fmt.Sprintf("key %q: %s", strings.Join(k, "."), msg)
		}
		return fmt.Sprintf("%s:%d:%d: %s", path, row, col, msg)
	}
	return fmt.Sprintf("%s: %v", path, err)
}

// Compiled on first use, not in package init, which every picker command runs.
var tomlTypeRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:toml: )?cannot (?:decode|store) TOML (\w+) into (?:struct field \S+|a Go value) of type (\S+)$`)
})

// plainTOMLType rewrites the decoder's "cannot decode TOML string into struct field
// aws.Config.Enabled of type bool" into what the key wants, in TOML terms: no Go type or
// struct names reach the user.
func plainTOMLType(msg string) string {
	m := tomlTypeRE().FindStringSubmatch(msg)
	if m == nil {
		return strings.TrimPrefix(msg, "toml: ")
	}
	want := "a different kind of value"
	switch t := strings.TrimPrefix(m[2], "*"); {
	case t == "bool":
		want = "true or false"
	case t == "string":
		want = "a quoted string"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		want = "a whole number"
	case strings.HasPrefix(t, "float"):
		want = "a number"
	case strings.HasPrefix(t, "[]"):
		want = "a list, e.g. [\"a\", \"b\"]"
	case strings.HasSuffix(t, "Duration"):
		want = "a duration string, e.g. \"10m\""
	case strings.HasPrefix(t, "map[") || strings.Contains(t, "."):
		want = "a table"
	}
	return fmt.Sprintf("got a TOML %s; want %s", m[1], want)
}

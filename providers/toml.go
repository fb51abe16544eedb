package providers

import (
	"errors"
	"fmt"
	"strings"

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
		msg := de.Error()
		if k := de.Key(); len(k) > 0 {
			msg = fmt.Sprintf("key %q: %s", strings.Join(k, "."), msg)
		}
		return fmt.Sprintf("%s:%d:%d: %s", path, row, col, msg)
	}
	return fmt.Sprintf("%s: %v", path, err)
}

package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// pflagValueRE matches pflag's "invalid argument "abc" for "--top" flag: strconv.ParseInt:
// parsing "abc": invalid syntax", whose strconv part means nothing to a user.
// Compiled on first use, not in package init, which every picker command runs.
var pflagValueRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: strconv\.Parse(\w+)`)
})

// plainFlagError rewrites pflag's errors into the flag, the value and what it wants.
func plainFlagError(err error) error {
	m := pflagValueRE().FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	want := map[string]string{"Int": "a whole number", "Uint": "a whole number", "Float": "a number", "Bool": "true or false"}[m[3]]
	if want == "" {
		want = "a valid value"
	}
	return fmt.Errorf("%s %q: want %s", m[2], m[1], want)
}

// noArgs rejects positional arguments as usage errors. "false" or "true" after a switch
// ("--grad-ckpt false") is the common case: a switch takes its value after "=". raw is
// the command line, to name the switch.
func noArgs(raw []string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		if v := strings.ToLower(args[0]); v == "true" || v == "false" {
			sw := "--grad-ckpt"
			for i, a := range raw {
				if a == args[0] && i > 0 && strings.HasPrefix(raw[i-1], "--") {
					sw = raw[i-1]
					break
				}
			}
			return usageError{fmt.Errorf("unexpected argument %q: a switch is given alone for true, or with = (%s=%s)", args[0], sw, v)}
		}
		return usageError{errors.New("unexpected argument " + fmt.Sprintf("%q", args[0]) + ": " + cmd.CommandPath() + " takes flags only")}
	}
}

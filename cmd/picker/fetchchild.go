package main

import (
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/fetchproc"
)

// childConfigurer is a provider that fetches in another process (aws and gcp, in
// picker-fetch): it takes picker's environment, log destination, level and format, and
// redaction, and finds its program up front.
type childConfigurer interface {
	Configure(fetchproc.Settings) error
}

// configureChild hands p picker's settings when it runs a child process, so a missing
// picker-fetch is reported before the refresh starts and the child logs as picker does.
func (a *app) configureChild(p providers.Provider) error {
	c, ok := p.(childConfigurer)
	if !ok {
		return nil
	}
	return c.Configure(fetchproc.Settings{
		Getenv:    a.m.Getenv,
		Stderr:    a.stderr,
		LogLevel:  a.logLevel(),
		LogFormat: a.logFormat,
		Secrets:   a.cfg.Secrets(a.m.Getenv),
	})
}

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyHangup is a seam for tests, as notifySignals is.
var notifyHangup = func(c chan<- os.Signal) { signal.Notify(c, syscall.SIGHUP) }

// ignoreHangup keeps SIGHUP from killing the daemon (its default action is to end the
// process at once, with no shutdown and no log line: issue 30). The daemon does not
// reload its config on SIGHUP: a config is validated as a whole at start, and its
// providers, schedules, listen address and guards are fixed for the process's life, so
// a partial reload would serve a mix; it logs that a restart applies a changed config.
// Call the function it returns to stop listening.
func (a *app) ignoreHangup() (stop func()) {
	hup := make(chan os.Signal, 1)
	notifyHangup(hup)
	stopped := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				a.log.Warn("SIGHUP received and ignored: the daemon does not reload its config; restart it to apply a changed config")
			case <-stopped:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(stopped)
	}
}

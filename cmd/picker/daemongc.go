package main

import (
	"log/slog"
	"runtime/debug"
	"strconv"
)

// The daemon's garbage collector. Its live heap is small (a few MiB plus the offer
// cache) while a recommend answer on a marketplace allocates about 4 MiB, so at Go's
// default GOGC=100 the collector ran every few requests and took about a fifth of the
// daemon's CPU (BenchmarkAPIRecommendDistinct: user CPU 3.0 -> 2.3 s for 300 distinct
// answers at GOGC=400). The Go GC guide (go.dev/doc/gc-guide, "GOGC"): the heap target
// is the live heap times 1+GOGC/100, and doubling GOGC roughly halves the collector's
// CPU for twice the heap overhead; a memory limit ("Memory limit", Go 1.19+) caps that
// overhead, the collector running as often as it must to stay under it. So the daemon
// runs at daemonGOGC with a daemonMemLimit soft limit, unless the environment sets
// GOGC or GOMEMLIMIT (then the runtime has already applied them, and they are left).
const (
	daemonGOGC     = 400
	daemonMemLimit = 1 << 30 // 1 GiB: above the daemon's peak RSS under tools/loadtest -hostile (~0.9 GiB)
)

// tuneDaemonGC applies the daemon's collector settings where the environment left them unset
// (main's tuneGC leaves the daemon at the runtime's default until then).
func (a *app) tuneDaemonGC(log *slog.Logger) {
	gogc := "GOGC from the environment"
	if a.m.Getenv("GOGC") == "" {
		debug.SetGCPercent(daemonGOGC)
		gogc = strconv.Itoa(daemonGOGC)
	}
	if a.m.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(daemonMemLimit)
	}
	// A negative limit reads the limit in force without changing it.
	log.Debug("garbage collector", "gogc", gogc, "memory_limit_bytes", debug.SetMemoryLimit(-1))
}

// Command picker answers "what is the cheapest GPU instance that can run this job?":
// it estimates a job's GPU memory, keeps GPU instance prices from the clouds in SQLite,
// and recommends the instance that fits the job and does it for the least money.
//
// It is the only package that knows every other: config, wiring, commands, output. Each
// command has an Options struct (its typed inputs, lazily opened dependencies, IOStreams)
// and a run function that never touches cobra (RunOffers, RunEstimate, RunRecommend);
// params.go's one binder, BindParams over a Lookup, fills Options from CLI flags, API
// query parameters or form fields alike, and the HTTP API (server.go) calls the same run
// functions. The recommend path reads: command -> bind job -> resolve model (modelref) ->
// fit.Recommend -> freshness warnings -> output.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"
)

func main() {
	tuneGC(os.Args[1:], os.Getenv("GOGC"))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Args: os.Args[1:], Getenv: os.Getenv}.Run(ctx)
	stop()
	os.Exit(code)
}

// oneShotGCPercent is the GC target of one-shot commands: they allocate a few MB and
// exit, and at the default 100 a recommend on 100k offers ran a collection it never
// needed (CPU per run 31 -> 26 ms, medians of 3x30 runs, tools/bench-recommend.sh's
// database). refresh, whose peak memory is bounded (it streams 100k offers), keeps the
// default; the daemon sets its own, with a memory limit (daemongc.go).
const oneShotGCPercent = 400

// tuneGC sets oneShotGCPercent unless the command is the daemon or refresh, or GOGC is set.
func tuneGC(args []string, gogc string) {
	if gogc == "" && !slices.Contains(args, "daemon") && !slices.Contains(args, "refresh") {
		debug.SetGCPercent(oneShotGCPercent)
	}
}

// Command picker answers "what is the cheapest GPU instance that can run this job?":
// it estimates a job's GPU memory, keeps GPU instance prices from the clouds in SQLite,
// and recommends the cheapest instance whose VRAM just covers the job.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Args: os.Args[1:], Getenv: os.Getenv}.Run(ctx)
	stop()
	os.Exit(code)
}

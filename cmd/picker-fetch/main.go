// Command picker-fetch runs one provider's fetch for picker: the adapters built on the
// AWS and GCP SDKs live here, not in picker, so that the SDKs' package initialisation
// (~8 ms, the GCP compute protobuf registry above all) is paid only by the refresh that
// uses them, not by every picker command (issue 17). picker starts it as
// `picker-fetch PROVIDER` with the provider's config section on stdin and reads the
// offers from its stdout as they come (providers/fetchproc has both sides).
//
// Install it next to picker (go install github.com/pickergpu/picker/cmd/...), on PATH,
// or point PICKER_FETCH at it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pickergpu/picker/buildinfo"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/aws"
	"github.com/pickergpu/picker/providers/fetchproc"
	"github.com/pickergpu/picker/providers/gcp"
)

// adapters are the SDK adapters picker-fetch runs; picker's registry lists the same
// names through their light packages (awsconf, gcpconf).
var adapters = []providers.Descriptor{
	aws.Descriptor,
	gcp.Descriptor,
}

func main() {
	if printVersion(os.Args[1:], os.Stdout, buildinfo.Get()) {
		os.Exit(0)
	}
	// picker cancels a fetch with SIGTERM (Ctrl-C reaches the whole process group).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stdout := os.Stdout
	os.Stdout = os.Stderr // stdout carries the frames: a stray print from a library must not corrupt them
	code := fetchproc.Main(ctx, os.Args[1:], os.Stdin, stdout, os.Stderr, adapters)
	stop()
	os.Exit(code)
}

// printVersion answers `picker-fetch --version` (or -version) with the build's version
// line, the same build information `picker version` shows, and reports whether it did.
func printVersion(args []string, w io.Writer, b buildinfo.Info) bool {
	if len(args) != 1 || (args[0] != "--version" && args[0] != "-version") {
		return false
	}
	fmt.Fprintf(w, "picker-fetch %s\n", b)
	return true
}

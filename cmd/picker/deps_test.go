package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// sdkPrefixes are the import paths of the cloud SDKs and what they bring (gRPC,
// protobuf): their package initialisation cost every picker command ~8 ms (issue 17),
// so they live in picker-fetch only (providers/fetchproc).
var sdkPrefixes = []string{
	"github.com/aws/aws-sdk-go-v2",
	"github.com/aws/smithy-go",
	"cloud.google.com/go",
	"google.golang.org/api",
	"google.golang.org/grpc",
	"google.golang.org/protobuf",
}

// TestPickerLinksNoCloudSDK pins the split: picker's dependencies hold none of the SDK
// packages, picker-fetch's hold them (so the check cannot pass on an empty listing).
func TestPickerLinksNoCloudSDK(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to list dependencies with: %v", err)
	}
	deps := func(pkg string) []string {
		out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	sdk := func(p string) bool {
		for _, pre := range sdkPrefixes {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return false
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/pickergpu/picker/cmd/picker").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	// protobuf is let in only through the Prometheus client (the daemon's /metrics,
	// issue 25), which has no build without it: no SDK, gRPC or other importer.
	const protobuf = "google.golang.org/protobuf"
	viaPrometheus := true
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] == protobuf || strings.HasPrefix(f[0], protobuf+"/") || strings.HasPrefix(f[0], "github.com/prometheus/") {
			continue
		}
		for _, imp := range f[1:] {
			if imp == protobuf || strings.HasPrefix(imp, protobuf+"/") {
				viaPrometheus = false
				t.Errorf("picker links %s through %s: protobuf is allowed only through the Prometheus client", imp, f[0])
			}
		}
	}
	for _, p := range deps("github.com/pickergpu/picker/cmd/picker") {
		if sdk(p) && !(viaPrometheus && (p == protobuf || strings.HasPrefix(p, protobuf+"/"))) {
			t.Errorf("picker links %s: the cloud SDKs belong in picker-fetch (use the adapter's light package and providers/fetchproc)", p)
		}
	}
	// encoding/gob's init (~0.3 ms) runs in every command; offers have pricing.AppendOffers.
	// The one importer allowed is the MCP SDK (`picker mcp`, issue 25), which has no build
	// without it.
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && slices.Contains(f[1:], "encoding/gob") && !strings.HasPrefix(f[0], "github.com/modelcontextprotocol/go-sdk/") {
			t.Errorf("picker links encoding/gob through %s: encode offers with pricing.AppendOffers", f[0])
		}
	}
	found := map[string]bool{}
	for _, p := range deps("github.com/pickergpu/picker/cmd/picker-fetch") {
		for _, pre := range []string{"github.com/aws/aws-sdk-go-v2/service/ec2", "cloud.google.com/go/compute/apiv1"} {
			if p == pre {
				found[pre] = true
			}
		}
	}
	if len(found) != 2 {
		t.Errorf("picker-fetch's dependencies lack the SDK adapters' packages (found %v): the listing is wrong", found)
	}
}

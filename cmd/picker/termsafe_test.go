package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// TestTerminalSafeOutput: a stored offer whose strings carry ESC/OSC sequences (stored
// before Finalize refused them, or by another writer) is printed escaped on a terminal,
// and an error that quotes one is escaped on stderr (issue 30: a provider could retitle
// or clear the user's terminal).
func TestTerminalSafeOutput(t *testing.T) {
	a, _ := newTestApp(t, "", func() time.Time { return fixedNow })
	evil := pricing.Offer{Provider: "lambda", Region: "us-east-1\x1b[2J", InstanceType: "gpu_1x_h100\x1b]0;pwned\x07", GPUModel: "H100", GPUCount: 1, GPUMemGiB: 80,
		Purchase: pricing.OnDemand, PriceUSDHr: 0.01, Currency: "USD", ObservedAt: fixedNow, Source: pricing.SourceAPI}
	if _, err := a.st.WriteSnapshot(context.Background(), "lambda", store.WriteInput{Offers: []pricing.Offer{evil}, Finished: fixedNow}); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, a.st.Path(), true, "offers", "--provider", "lambda")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07") || !strings.Contains(r.stdout, `gpu_1x_h100\x1b]0;pwned\x07`) {
		t.Errorf("the terminal got raw escapes or lost the name:\n%q", r.stdout)
	}
	r = runCLI(t, a.st.Path(), true, "offers", "--region", "nowhere\x1b]0;x\x07")
	if strings.ContainsAny(r.stderr, "\x1b\x07") {
		t.Errorf("stderr holds raw escapes: %q", r.stderr)
	}
}

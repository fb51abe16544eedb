package aws

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
)

// The SDK's own warnings go to slog at debug level, not to stderr past -q.
func TestSDKLogsAtDebug(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	p, err := New(Config{PricingRegion: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := p.loadConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger.Logf(logging.Warn, "failed to discard remaining HTTP response body, this may affect connection reuse: %v", "closed")
	if got := buf.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "failed to discard") {
		t.Errorf("SDK warning logged as %q; want it at debug level through slog", got)
	}
}

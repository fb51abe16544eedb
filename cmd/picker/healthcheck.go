package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/pricing"
)

// healthcheckCmd asks a running daemon's /healthz, for container HEALTHCHECKs and
// service monitors where no curl is installed (the distroless image has none).
func (a *app) healthcheckCmd() *cobra.Command {
	var url string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Ask a running daemon's /healthz: exit 0 when it answers ok, else 1",
		Long: `healthcheck asks a running picker daemon's /healthz (no token needed) and exits 0
when it answers 200 {"status":"ok"}, 1 otherwise, saying why on stderr. Without --url
it asks the [daemon] listen address of the config (a wildcard host such as 0.0.0.0 is
asked on 127.0.0.1).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if url == "" {
				url = healthURL(a.cfg.Daemon.Listen)
			}
			return checkHealth(cmd.Context(), url, timeout)
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "the /healthz URL (default: from [daemon] listen, http://127.0.0.1:8080/healthz)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long (duration)")
	return cmd
}

// healthURL is the /healthz URL of a daemon listening on addr; a wildcard or empty
// host is asked on loopback.
func healthURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = "127.0.0.1", "8080"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz"
}

func checkHealth(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return pricing.Errorf(pricing.Invalid, "healthcheck: --url %q: %v", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var h struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Status != "ok" {
		return fmt.Errorf("healthcheck: %s: %s %s", url, resp.Status, body)
	}
	return nil
}

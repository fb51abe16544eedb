package providers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
)

type fakeConfig struct{ Common }

type fakeProvider struct{ cfg fakeConfig }

func (f *fakeProvider) Fetch(context.Context) (*Snapshot, error) { return nil, errors.New("unused") }

func TestConstructor(t *testing.T) {
	boom := errors.New("bad config")
	newFake := Constructor("fake", func(c fakeConfig) (*fakeProvider, error) {
		if c.Endpoint == "bad" {
			return nil, boom
		}
		return &fakeProvider{c}, nil
	})
	for _, cfg := range []any{fakeConfig{Common{Endpoint: "x"}}, &fakeConfig{Common{Endpoint: "x"}}} {
		p, err := newFake(cfg)
		if err != nil || p.(*fakeProvider).cfg.Endpoint != "x" {
			t.Errorf("New(%T) = %v, %v; want the provider built from the config", cfg, p, err)
		}
	}
	if p, err := newFake(fakeConfig{Common{Endpoint: "bad"}}); !errors.Is(err, boom) || p != nil {
		t.Errorf("constructor error: got %v, %v; want nil and the error (no typed nil)", p, err)
	}
	if _, err := newFake(42); pricing.ErrorCode(err) != pricing.Internal || !strings.Contains(err.Error(), "fake") {
		t.Errorf("wrong config type: %v; want an internal error naming the adapter", err)
	}
}

func TestParseDuration(t *testing.T) {
	tests := map[string]time.Duration{"90s": 90 * time.Second, "10m": 10 * time.Minute, "7d": 7 * 24 * time.Hour, "365d": 365 * 24 * time.Hour, "1h30m": 90 * time.Minute}
	for in, want := range tests {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "7 days", "d", "-3d", "1w"} {
		var d Duration
		if err := d.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("Duration(%q) parsed as %v; want an error", bad, d)
		}
	}
}

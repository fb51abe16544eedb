//go:build unix

package config

import (
	"slices"

	"github.com/pickergpu/picker/redact"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadRefusesSpecialFiles: a config that is a device, a FIFO or past the cap is an
// error naming the path, at once (issue 30: PICKER_CONFIG=/dev/zero had no size or
// regular-file check and reached 24 GiB RSS; a FIFO blocked).
func TestLoadRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero": "not a regular file (a device)",
		fifo:        "not a regular file (a named pipe)",
		big:         "larger than the 1024 KiB cap",
		dir:         "not a regular file (a directory)",
	} {
		done := make(chan error, 1)
		go func() { _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Load(%s): %v; want %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) did not return", path)
		}
	}
}

// TestConfigBOM: a UTF-8 byte order mark before the first key is accepted, and line
// numbers in errors stay the file's (issue 30: it was an error).
func TestConfigBOM(t *testing.T) {
	c, err := Parse([]byte("\uFEFF[refresh]\nschedule = \"@hourly\"\n"), "c.toml")
	if err != nil {
		t.Fatalf("a BOM: %v", err)
	}
	if c.Refresh.Schedule != "@hourly" {
		t.Errorf("schedule %q", c.Refresh.Schedule)
	}
	_, err = Parse([]byte("\uFEFF[refresh]\nschedule = \"nope\"\n"), "c.toml")
	if err == nil || !strings.Contains(err.Error(), "c.toml:2") {
		t.Errorf("error after a BOM: %v; want c.toml:2", err)
	}
}

// TestSecretsKeyShapedEnvName: an api_key_env whose text is a valid variable name but
// shaped like a key (a pasted Hugging Face or Stripe-style key) is masked by value, as a
// non-name is; an ordinary variable name is not (issue 30).
func TestSecretsKeyShapedEnvName(t *testing.T) {
	src := "[providers.lambda]\napi_key_env = \"hf_AbCdEfGhIjKlMnOpQr123456\"\n[providers.runpod]\napi_key_env = \"MY_RUNPOD_KEY\"\n"
	c, err := Parse([]byte(src), "picker.toml")
	if err != nil {
		t.Fatal(err)
	}
	got := c.Secrets(func(string) string { return "" })
	if !slices.Contains(got, "hf_AbCdEfGhIjKlMnOpQr123456") {
		t.Errorf("Secrets = %q; want the key-shaped api_key_env masked", got)
	}
	if slices.Contains(got, "MY_RUNPOD_KEY") {
		t.Errorf("Secrets = %q; a variable's name is not a secret", got)
	}
	withHF := c.Secrets(func(k string) string {
		return map[string]string{"HF_ENDPOINT": "http://u:mirror-pass-77@hub.internal"}[k]
	})
	if !slices.Contains(withHF, "mirror-pass-77") {
		t.Errorf("Secrets = %q; want HF_ENDPOINT's password", withHF)
	}
	msg := redact.New(got...).String(`lambda: the environment variable hf_AbCdEfGhIjKlMnOpQr123456 (api_key_env) is not set`)
	if strings.Contains(msg, "hf_AbCdEf") || !strings.Contains(msg, "environment variable") {
		t.Errorf("redacted %q", msg)
	}
}

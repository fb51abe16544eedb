package providertest

import (
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// WantError checks a failed fetch's error: it exists, contains want, has code, and
// shows none of secrets (the API key the test set). Adapters' error tables share it.
func WantError(t testing.TB, err error, want string, code pricing.Code, secrets ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Fetch succeeded; want an error containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q\nwant it to contain %q", err, want)
	}
	if c := pricing.ErrorCode(err); c != code {
		t.Errorf("error %q: code %q, want %q", err, c, code)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("error %q shows a secret", err)
		}
	}
}

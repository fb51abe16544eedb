package lambda

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pickergpu/picker/providers/providertest"
)

// Lambda's one request is the fetch's one part: reported started, then done with the
// offers it gave; the server answered that one request.
func TestProgressOneRequest(t *testing.T) {
	t.Setenv("PICKER_TEST_LAMBDA_KEY", testKey)
	for _, cfg := range []Config{{}, {IncludeUnavailable: true}} {
		t.Run(fmt.Sprint("include_unavailable=", cfg.IncludeUnavailable), func(t *testing.T) {
			s := &lambdaServer{}
			_, log := providertest.FetchProgress(t, setup(t, s, cfg, nil), "requests", 1)
			if done := log.DoneParts(); !slices.Equal(done, []string{"instance types"}) || s.requests.Load() != 1 {
				t.Errorf("parts done %v, %d requests served; want the one instance types request", done, s.requests.Load())
			}
		})
	}
}

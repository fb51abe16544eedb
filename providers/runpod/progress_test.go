package runpod

import (
	"slices"
	"strings"
	"testing"

	"github.com/pickergpu/picker/providers/providertest"
)

// RunPod's one query is the fetch's one part: reported started, then done with the
// offers it gave; the server answered that one query.
func TestProgressOneQuery(t *testing.T) {
	for _, cfg := range []Config{{}, {Clouds: []string{"secure"}}} {
		t.Run(strings.Join(cfg.Clouds, ","), func(t *testing.T) {
			s := &graphqlServer{}
			_, log := providertest.FetchProgress(t, setup(t, s, cfg, nil), "requests", 1)
			if done := log.DoneParts(); !slices.Equal(done, []string{"gpuTypes"}) || s.requests.Load() != 1 {
				t.Errorf("parts done %v, %d queries served; want the one gpuTypes query", done, s.requests.Load())
			}
		})
	}
}

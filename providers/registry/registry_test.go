package registry

import (
	"slices"
	"testing"

	"github.com/pickergpu/picker/providers"
)

// Every adapter says what a refresh needs (picker providers' NEEDS column), and one
// that reads a key names its default variable, which is api_key_env's documented default.
func TestEveryAdapterSaysWhatItNeeds(t *testing.T) {
	kinds := []string{providers.NeedsNothing, providers.NeedsKey, providers.NeedsOptionalKey, providers.NeedsAccount, providers.NeedsFiles}
	for _, d := range All() {
		n := d.Needs
		if !slices.Contains(kinds, n.Kind) {
			t.Errorf("%s: Needs.Kind %q is not one of %q", d.Name, n.Kind, kinds)
		}
		if (n.Kind == providers.NeedsKey || n.Kind == providers.NeedsOptionalKey) && n.KeyEnv == "" {
			t.Errorf("%s: needs a key but names no variable", d.Name)
		}
		for _, o := range d.Options {
			if o.Key == "api_key_env" && n.KeyEnv != "" && o.Default != "" && o.Default != n.KeyEnv {
				t.Errorf("%s: Needs.KeyEnv %q but api_key_env defaults to %q", d.Name, n.KeyEnv, o.Default)
			}
		}
	}
}

package static

import (
	"slices"
	"strings"
	"testing"

	"github.com/pickergpu/picker/providers/providertest"
)

// Each file is a part: reported done in order, with the offers ReadFile finds in it.
func TestProgressPerFile(t *testing.T) {
	for _, files := range [][]string{{"testdata/prices.csv"}, {"testdata/prices.csv", "testdata/prices.toml"}} {
		t.Run(strings.Join(files, ","), func(t *testing.T) {
			_, log := providertest.FetchProgress(t, New(Config{Files: files}), "files", len(files))
			if done := log.DoneParts(); !slices.Equal(done, files) {
				t.Errorf("files done %v; want %v in order", done, files)
			}
			steps := log.Steps()
			for i, f := range files {
				offers, err := ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if got := steps[i+1].Offers - steps[i].Offers; got != len(offers) {
					t.Errorf("%s: %d offers reported; the file holds %d", f, got, len(offers))
				}
			}
		})
	}
}

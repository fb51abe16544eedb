package fit

import (
	"testing"

	"github.com/pickergpu/picker/model"
)

// TestCatalogCoversCalibration: every model named in the calibration cases resolves from
// the catalog, so the accuracy test never needs the network.
func TestCatalogCoversCalibration(t *testing.T) {
	for _, c := range loadCases(t, "testdata/vram_cases.csv") {
		if _, ok, err := model.CatalogModel(c.model); !ok || err != nil {
			t.Errorf("case %s: model %s not in the catalog (err %v)", c.id, c.model, err)
		}
	}
}

package pricing

import (
	"bytes"
	"encoding/csv"
	"testing"
	"time"
)

// TestExportCSVSpreadsheetSafe: an instance type, region or model that a spreadsheet
// would read as a formula is written with a leading quote; numbers (a negative one
// included) are not touched (issue 30: =HYPERLINK(…) was written as a formula).
func TestExportCSVSpreadsheetSafe(t *testing.T) {
	o := Offer{Provider: "static", Region: "+cmd|' /C calc'!A0", InstanceType: `=HYPERLINK("http://evil","x")`, GPUModel: "@SUM(1)",
		Zone: "-1+1", GPUCount: 1, GPUMemGiB: 80, PriceUSDHr: 2, Purchase: OnDemand, Currency: "USD", ObservedAt: time.Unix(0, 0), Source: "file"}
	var b bytes.Buffer
	if err := WriteExportCSV(&b, []Offer{o}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]string{}
	for i, c := range recs[0] {
		row[c] = recs[1][i]
	}
	for col, want := range map[string]string{
		"instance_type": `'=HYPERLINK("http://evil","x")`, "region": "'+cmd|' /C calc'!A0", "gpu_model": "'@SUM(1)", "zone": "'-1+1",
		"provider": "static", "price_usd_hr": "2",
	} {
		if row[col] != want {
			t.Errorf("%s = %q; want %q", col, row[col], want)
		}
	}
}

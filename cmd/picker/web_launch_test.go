package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/store"
)

// TestWebProvidersLaunchData: the web Providers page shows what `picker providers`
// prints under its table, from the real store through the daemon's handler: aws's quota
// read (account, count, when read and how long ago, the oldest quota's age, the failed
// region's error) and lambda's capacity word with its age; the ages follow the clock
// although the rows are cached until the data changes.
func TestWebProvidersLaunchData(t *testing.T) {
	db := filepath.Join(t.TempDir(), "picker.db")
	a, err := newTestAppAt(t, db)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := fixedNow
	a.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }

	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	read := fixedNow.Add(-2 * time.Hour)
	quotas := []pricing.Quota{
		{Provider: "aws", Account: "000011112222", Region: "us-east-1", Code: "L-417A185B", Name: "Running On-Demand P instances", Family: "P",
			Purchase: pricing.OnDemand, Unit: pricing.QuotaVCPU, Limit: 96, Usage: 48, UsageKnown: true, ObservedAt: read},
		{Provider: "aws", Account: "000011112222", Region: "us-east-1", Code: "L-DB2E81BA", Name: "Running On-Demand G and VT instances", Family: "G",
			Purchase: pricing.OnDemand, Unit: pricing.QuotaVCPU, Limit: 64, UsageKnown: true, ObservedAt: read},
	}
	if err := st.WriteQuotas(t.Context(), "aws", store.QuotaRead{Account: "000011112222", Quotas: quotas, Regions: []string{"us-east-1"},
		Failed: map[string]string{"us-west-2": "AccessDeniedException: not authorized"}, Requests: 9, At: read}); err != nil {
		t.Fatal(err)
	}
	said := fixedNow.Add(-5 * time.Minute)
	offers := []pricing.Offer{
		{Provider: "lambda", Region: "us-east-1", InstanceType: "gpu_1x_h100_pcie", Purchase: pricing.OnDemand, Available: pricing.SoldOut},
		{Provider: "lambda", Region: "us-west-1", InstanceType: "gpu_1x_a10", Purchase: pricing.OnDemand, Available: pricing.AvailableNow},
	}
	if err := st.WriteCapacity(t.Context(), "lambda", nil, offers, said); err != nil {
		t.Fatal(err)
	}
	st.Close()

	srv := httptest.NewServer(a.apiHandler())
	defer srv.Close()
	row := func(body, name string) string {
		t.Helper()
		i := strings.Index(body, `<tr data-launch="`+name+`">`)
		if i < 0 {
			t.Fatalf("no %s row in the Providers page's launch table", name)
		}
		return body[i : i+strings.Index(body[i:], "</tr>")]
	}
	for _, tc := range []struct {
		after          time.Duration
		quotaAge, word string
	}{{0, "2 h", "5 min"}, {time.Hour, "3 h", "1 h"}} {
		mu.Lock()
		now = fixedNow.Add(tc.after)
		mu.Unlock()
		code, b := get(t, srv.URL+"/providers")
		if code != 200 {
			t.Fatalf("/providers: %d %.300s", code, b)
		}
		body := string(b)
		aws := row(body, "aws")
		for _, want := range []string{
			`<td class="quotas">account <span class="mono">000011112222</span>: 2 stored, read ` + read.UTC().Format("2006-01-02 15:04 UTC") + " (" + tc.quotaAge + " ago), oldest " + tc.quotaAge + " old",
			"failed for 1 region(s), their last good quotas kept: us-west-2: AccessDeniedException: not authorized",
		} {
			if !strings.Contains(aws, want) {
				t.Errorf("+%v: aws row lacks %q:\n%s", tc.after, want, aws)
			}
		}
		if want := `<td class="capacity">1 sold out, 1 available, observed ` + tc.word + " ago</td>"; !strings.Contains(row(body, "lambda"), want) {
			t.Errorf("+%v: lambda row lacks %q:\n%s", tc.after, want, row(body, "lambda"))
		}
		if strings.Contains(body, `<tr data-launch="azure">`) || !strings.Contains(row(body, "lambda"), `<td class="quotas"><span class="dim">none</span></td>`) {
			t.Errorf("azure (no launch data) has a launch row, or lambda (no quotas) does not say none:\n%s", row(body, "lambda"))
		}
	}
}

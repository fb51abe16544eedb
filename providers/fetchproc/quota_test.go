//go:build unix

package fetchproc

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// quotaFetcher returns one offer and, when its context asks, a quota read.
type quotaFetcher struct{ rep *providers.QuotaReport }

func (q quotaFetcher) Fetch(ctx context.Context) (*providers.Snapshot, error) {
	snap := &providers.Snapshot{Offers: fakeOffers(0, 1)}
	if providers.WantsQuotas(ctx) {
		snap.Quotas = q.rep
	}
	return snap, nil
}

// TestQuotaFrame: the child sends its quota read in a quota frame before the summary
// only when the request asked, and the parent's reader puts it back on the snapshot,
// errors with their codes, quotas that fail Validate dropped; a quota frame over its
// bound is garbled output, not an allocation.
func TestQuotaFrame(t *testing.T) {
	good := pricing.Quota{Provider: "fake", Account: "a", Region: "r1", Code: "L-417A185B", Name: "Running On-Demand P instances",
		Family: "P", Purchase: pricing.OnDemand, Unit: pricing.QuotaVCPU, Limit: 96, ObservedAt: testNow}
	bad := good
	bad.Code, bad.Limit = "L-BAD", -3
	rep := &providers.QuotaReport{Account: "a", Regions: []string{"r1"}, Requests: 8, Quotas: []pricing.Quota{good, bad},
		Failed: map[string]error{"r2": pricing.Errorf(pricing.Unavailable, "fake: r2: AccessDeniedException")}}
	for _, asked := range []bool{false, true} {
		ctx := context.Background()
		if asked {
			ctx = providers.WithQuotaRead(ctx)
		}
		var buf bytes.Buffer
		fw := newFrameWriter(&buf)
		if err := serve(ctx, quotaFetcher{rep}, fw.write); err != nil {
			t.Fatal(err)
		}
		kinds := frameKinds(t, buf.Bytes())
		snap, err := read(&buf, func([]pricing.Offer) error { return nil }, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !asked {
			if snap.Quotas != nil || strings.ContainsRune(kinds, kindQuota) {
				t.Errorf("not asked: frames %q, quotas %+v", kinds, snap.Quotas)
			}
			continue
		}
		if kinds != "PQS" {
			t.Errorf("frames %q; want part, quotas, summary", kinds)
		}
		got := snap.Quotas
		if got == nil || got.Account != "a" || got.Requests != 8 || !reflect.DeepEqual(got.Regions, []string{"r1"}) || !reflect.DeepEqual(got.Quotas, []pricing.Quota{good}) {
			t.Errorf("quotas %+v; want %+v without the bad one", got, rep)
		}
		if e := got.Failed["r2"]; e == nil || e.Error() != "fake: r2: AccessDeniedException" || pricing.ErrorCode(e) != pricing.Unavailable {
			t.Errorf("failed %v", got.Failed)
		}
	}
	// A quota frame claiming more than its bound.
	huge := append([]byte{kindQuota}, 0x80, 0x80, 0x80, 0x01) // 2 MiB
	if _, err := newFrameReader(bytes.NewReader(huge)).read(); !errors.Is(err, errGarbled) {
		t.Errorf("an oversized quota frame: %v; want garbled", err)
	}
}

// frameKinds lists the kinds of the frames in b, in order.
func frameKinds(t *testing.T, b []byte) string {
	t.Helper()
	fr := newFrameReader(bytes.NewReader(b))
	var kinds []byte
	for {
		f, err := fr.read()
		if err != nil {
			return string(kinds)
		}
		switch {
		case f.Quotas != nil:
			kinds = append(kinds, kindQuota)
		case f.Summary != nil:
			kinds = append(kinds, kindSummary)
		case f.Err != nil:
			kinds = append(kinds, kindError)
		case f.Progress != nil:
			kinds = append(kinds, kindProgress)
		default:
			kinds = append(kinds, kindPart)
		}
	}
}

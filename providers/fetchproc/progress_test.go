//go:build unix

package fetchproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// The adapter's progress in the child reaches the parent's progress function, each
// report as the adapter made it, in order among the parts.
func TestProgressThroughChild(t *testing.T) {
	for _, parts := range [][]int{{5}, {3, 0, 5000, 1}} {
		t.Run(fmt.Sprint(parts), func(t *testing.T) {
			p, _ := testChild(t, "fake", fakeConfig{Parts: parts}, slog.LevelInfo)
			// What the adapter reports in process is what the parent must hear.
			var want []providers.Progress
			wctx := providers.WithProgress(context.Background(), func(pr providers.Progress) { want = append(want, pr) })
			if _, err := (fakeStreamer{fakeConfig{Parts: parts}}).Stream(wctx, func([]pricing.Offer) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if len(want) != len(parts)+1 {
				t.Fatalf("the fake adapter made %d reports; want the start and one per part", len(want))
			}
			// Reports and parts arrive on the one goroutine that reads the stream.
			var got []providers.Progress
			var order []string
			ctx := providers.WithProgress(context.Background(), func(pr providers.Progress) {
				got = append(got, pr)
				order = append(order, fmt.Sprint("report ", pr.Done))
			})
			_, err := p.Stream(ctx, func(part []pricing.Offer) error {
				order = append(order, fmt.Sprint("part of ", len(part)))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("reports %+v; want the adapter's %+v", got, want)
			}
			// The adapter reports a part done after emitting it, so each part's report
			// follows it.
			wantOrder := []string{"report 0"}
			for i, n := range parts {
				wantOrder = append(wantOrder, fmt.Sprint("part of ", n), fmt.Sprint("report ", i+1))
			}
			if !reflect.DeepEqual(order, wantOrder) {
				t.Errorf("arrival order %v; want %v", order, wantOrder)
			}
		})
	}
}

// A child sends progress frames only when the request asks (an older parent, which
// refuses unknown frame kinds, never asks), and a parent that did not ask drops them.
func TestProgressOnlyWhenAsked(t *testing.T) {
	for _, ask := range []bool{false, true} {
		t.Run(fmt.Sprint("progress=", ask), func(t *testing.T) {
			req, _ := json.Marshal(request{Protocol: Protocol, Config: json.RawMessage(`{"Parts": [2, 3]}`), Progress: ask})
			var stdout bytes.Buffer
			if code := Main(context.Background(), []string{"fake"}, bytes.NewReader(req), &stdout, io.Discard, fakeAdapters); code != 0 {
				t.Fatalf("exit %d", code)
			}
			frames := countKinds(t, stdout.Bytes())
			if want := map[bool]int{false: 0, true: 3}[ask]; frames[kindProgress] != want {
				t.Errorf("%d progress frames; want %d (the start and each of 2 parts when asked)", frames[kindProgress], want)
			}
			if frames[kindPart] != 2 || frames[kindSummary] != 1 {
				t.Errorf("frames %v; want the 2 parts and the summary whatever progress does", frames)
			}
			if _, err := read(bytes.NewReader(stdout.Bytes()), func([]pricing.Offer) error { return nil }, nil); err != nil {
				t.Errorf("a parent that did not ask reads the stream: %v", err)
			}
		})
	}
}

// countKinds walks a frame stream and counts its frames by kind.
func countKinds(t *testing.T, b []byte) map[byte]int {
	t.Helper()
	fr := newFrameReader(bytes.NewReader(b))
	n := map[byte]int{}
	for {
		f, err := fr.read()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case f.Err != nil:
			n[kindError]++
		case f.Summary != nil:
			n[kindSummary]++
		case f.Progress != nil:
			n[kindProgress]++
		default:
			n[kindPart]++
		}
	}
}

package refresh

import (
	"context"
	"reflect"
	"testing"

	"github.com/pickergpu/picker/providers"
)

// Run hands the adapter's progress reports to the job's Progress, each as the adapter
// made it; a job without one gives the adapter no progress function.
func TestRunProgress(t *testing.T) {
	reports := []providers.Progress{{Unit: "regions", Total: 2}, {Unit: "regions", Total: 2, Done: 1, Part: "r1", Offers: 2}}
	for _, tt := range []struct {
		name string
		want []providers.Progress
	}{{"with progress", reports}, {"without", nil}} {
		t.Run(tt.name, func(t *testing.T) {
			var asked bool
			p := fetchFunc(func(ctx context.Context) (*providers.Snapshot, error) {
				asked = providers.WantsProgress(ctx)
				for _, r := range reports {
					providers.ReportProgress(ctx, r)
				}
				return &providers.Snapshot{Offers: offers(2)}, nil
			})
			var got []providers.Progress
			job := Job{Name: "p", Provider: p}
			if tt.want != nil {
				job.Progress = func(pr providers.Progress) { got = append(got, pr) }
			}
			if r := Run(context.Background(), &fakeStore{}, job, nil); r.Err != nil {
				t.Fatal(r.Err)
			}
			if asked != (tt.want != nil) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("adapter asked for progress: %v; job heard %+v; want %v, %+v", asked, got, tt.want != nil, tt.want)
			}
		})
	}
}

package web

import (
	"context"
	"net/http"
	"time"
)

// Watch is one [[watch]] price alert, shown on the Providers page.
type Watch struct {
	Name, Job, Threshold, State string
	Max                         float64
	Value                       *float64
	Offer                       string // "provider region instance_type", "" when nothing fits
	LastCrossing                *time.Time
	Error                       string
}

// WatchLister is a Backend that also has price watches (the daemon's); the Providers
// page lists them when the backend is one and has any.
type WatchLister interface {
	Watches() []Watch
}

// QuotaRead is a provider's account quota read, as `picker providers` lists it: how many
// quotas of which account are stored, when a read last landed and was last tried, the
// oldest stored quota (a failed region keeps its older ones) and what the newest read's
// failed regions said. Times, not ages: the page works the ages out when it renders, so
// a cached row does not show a stale age.
type QuotaRead struct {
	Account       string
	Quotas        int
	LastOK        *time.Time // nil: no read ever landed
	Oldest        time.Time
	Attempted     time.Time
	RegionsFailed int
	Error         string
}

// CapacityWord is a provider's stored capacity word: offers it said were available and
// sold out, and when it said so.
type CapacityWord struct {
	Available, SoldOut int
	Observed           time.Time
}

type providersPage struct {
	Rows []Provider
	// Launch are the rows with quota or capacity data, in a table of their own under
	// the providers table (as `picker providers` prints them under its own).
	Launch  []Provider
	Watches []Watch
	Error   string
	APIURL  string
}

func (s *server) providers(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 45*time.Second)
	defer cancel()
	p := providersPage{}
	if s.o.APIBase != "" {
		p.APIURL = s.o.APIBase + "/providers"
	}
	status := http.StatusOK
	rows, err := s.b.Providers(ctx)
	if err != nil {
		status = statusOf(err)
		s.logFailure(r, status, err)
		p.Error = err.Error()
	}
	p.Rows = rows
	for _, r := range rows {
		if r.Quotas != nil || r.Capacity != nil {
			p.Launch = append(p.Launch, r)
		}
	}
	if wl, ok := s.b.(WatchLister); ok {
		p.Watches = wl.Watches()
	}
	s.render(w, r, status, "providers", "Providers", p)
}

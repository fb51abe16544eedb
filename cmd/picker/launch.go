package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
	"github.com/pickergpu/picker/scheduler"
	"github.com/pickergpu/picker/store"
)

// Launchability (issue 24): what recommend reads besides the prices, so that it ranks
// offers the account can actually launch: the account's GPU quotas (AWS Service Quotas,
// GCP regional quotas, read by picker-fetch with the refresh) and the providers' capacity
// word (Lambda's regions with capacity, RunPod's stock, ...). Quota data stays on this
// machine: it is read from the store into answers and nowhere else.

// quotaProviders are the providers whose refresh reads the account's quotas.
var quotaProviders = []string{"aws", "gcp"}

// launchStore is a store that keeps quotas and capacity (*store.Store does).
type launchStore interface {
	Quotas(ctx context.Context) ([]pricing.Quota, error)
	QuotaStatuses(ctx context.Context) ([]store.QuotaStatus, error)
	ReadCapacity(ctx context.Context) (store.Capacity, error)
}

// launchFacts are the quotas and capacity one recommendation reads.
type launchFacts struct {
	quotas   []pricing.Quota
	statuses []store.QuotaStatus
	capacity store.Capacity
	ignore   bool // --ignore-quota
}

func (o *RecommendOptions) launchParams() []param {
	return []param{
		{name: "ignore-quota", kind: kindBool, usage: "rank offers whatever the account's quotas allow (default: leave out what the stored quotas do not allow)",
			set: func(v string) (err error) { o.IgnoreQuota, err = parseBool("ignore-quota", v); return }},
	}
}

// quotaEvery is how often a provider's refresh reads the account's quotas: once per
// period of its schedule (a refresh run by hand in between reuses them).
func (a *app) quotaEvery(name string) time.Duration {
	p, err := scheduler.Period(a.cfg.Schedule(name), a.now())
	if err != nil {
		return 0
	}
	return p
}

// loadLaunch reads the launch facts from st (none from a store that keeps none) and
// puts the quotas into in.
func loadLaunch(ctx context.Context, st offerStore, in *recommend.RecommendInput, ignore bool) (*launchFacts, error) {
	lf := &launchFacts{ignore: ignore}
	ls, ok := st.(launchStore)
	if !ok {
		return lf, nil
	}
	var err error
	if lf.quotas, err = ls.Quotas(ctx); err != nil {
		return nil, err
	}
	if lf.statuses, err = ls.QuotaStatuses(ctx); err != nil {
		return nil, err
	}
	if lf.capacity, err = ls.ReadCapacity(ctx); err != nil {
		return nil, err
	}
	in.Quotas, in.IgnoreQuota = lf.quotas, ignore
	for k, w := range lf.capacity {
		if w.Available == pricing.SoldOut {
			if in.SoldOut == nil {
				in.SoldOut = map[pricing.Key]bool{}
			}
			in.SoldOut[k] = true
		}
	}
	return lf, nil
}

// apply returns offers with each one's stored capacity word: a copy when any changes
// (the store's caches hold the slice it returned).
func (lf *launchFacts) apply(offers []pricing.Offer) []pricing.Offer {
	if lf == nil || len(lf.capacity) == 0 {
		return offers
	}
	out := offers
	copied := false
	for i := range offers {
		w, ok := lf.capacity[offers[i].Key()]
		if !ok || offers[i].Available == w.Available {
			continue
		}
		if !copied {
			out, copied = slices.Clone(offers), true
		}
		out[i].Available = w.Available
	}
	return out
}

// launchOffers is recommendOffers (fastpath.go) with the launch facts, which travel in
// the input (RecommendInput.Quotas, SoldOut): the shape read reads on past a shape's
// first offers where a quota or a sold-out word sets one apart (recommend.ShapePlan), so
// the answer is the full scan's without reading every offer; the offers come back with
// their capacity word.
func launchOffers(ctx context.Context, st offerStore, q store.Query, in recommend.RecommendInput, lf *launchFacts) ([]pricing.Offer, bool, error) {
	offers, shaped, err := recommendOffers(ctx, st, q, in)
	return lf.apply(offers), shaped, err
}

// warnings say what the launch facts behind an answer are and how old: quotas not
// checked for a quota provider among the offers shown (no quota data: no credentials,
// or never read), ignored (--ignore-quota), or read some time ago (and a newer read
// that failed); the sold-out word's age.
func (lf *launchFacts) warnings(fits []recommend.Fit, now time.Time) []string {
	if lf == nil {
		return nil
	}
	var w []string
	shown := map[string]bool{}
	soldBy := map[string]time.Time{}
	for _, f := range fits {
		shown[f.Provider] = true
		if f.Available == pricing.SoldOut {
			if c, ok := lf.capacity[f.Key()]; ok && (soldBy[f.Provider].IsZero() || c.ObservedAt.Before(soldBy[f.Provider])) {
				soldBy[f.Provider] = c.ObservedAt
			}
		}
	}
	status := map[string]store.QuotaStatus{}
	for _, s := range lf.statuses {
		status[s.Provider] = s
	}
	have := map[string]bool{}
	for _, q := range lf.quotas {
		have[q.Provider] = true
	}
	var unchecked, checked []string
	for _, p := range quotaProviders {
		if !shown[p] {
			continue
		}
		s, read := status[p]
		switch {
		case lf.ignore:
			unchecked = append(unchecked, p)
		case !have[p]:
			why := "no quota data (a refresh with the account's credentials reads them)"
			if read && s.Error != "" {
				why = "the quota read failed " + formatAge(now.Sub(s.Attempted)) + " ago: " + oneLine(s.Error)
			}
			unchecked = append(unchecked, p+": "+why)
		default:
			c := fmt.Sprintf("%s (read %s ago", p, formatAge(now.Sub(s.LastOK)))
			if s.Error != "" {
				c += fmt.Sprintf("; %d region(s) failed %s ago, their last good quotas kept, %s old", s.RegionsFailed, formatAge(now.Sub(s.Attempted)), formatAge(now.Sub(s.Oldest)))
			}
			checked = append(checked, c+")")
		}
	}
	switch {
	case lf.ignore && len(unchecked) > 0:
		w = append(w, "quotas not checked (--ignore-quota) for "+strings.Join(unchecked, ", "))
	case len(unchecked) > 0:
		w = append(w, "quotas not checked for "+strings.Join(unchecked, "; "))
	}
	if len(checked) > 0 {
		w = append(w, "quotas checked for "+strings.Join(checked, ", "))
	}
	var sold []string
	for p, at := range soldBy {
		sold = append(sold, fmt.Sprintf("%s (%s ago)", p, formatAge(now.Sub(at))))
	}
	if len(sold) > 0 {
		slices.Sort(sold)
		w = append(w, "capacity word from "+strings.Join(sold, ", "))
	}
	return w
}

// quotaRow is a provider's quota read in `picker providers` (GET /v1/providers): when
// it was last read well and tried, how many quotas of which account are stored, and
// what the newest read's failed regions said. Account ids stay on this machine: this is
// an answer to its own user.
type quotaRow struct {
	Account   string     `json:"account,omitempty"`
	Quotas    int        `json:"quotas"`
	LastOK    *time.Time `json:"last_ok"`
	Attempted time.Time  `json:"attempted"`
	// Age is the oldest stored quota's age (a failed region's are older than LastOK).
	Age           string `json:"age"`
	RegionsFailed int    `json:"regions_failed"`
	Error         string `json:"error,omitempty"`
	Requests      int    `json:"requests"`
	// oldest is Age's time, for the web page, which works ages out as it renders.
	oldest time.Time
}

// capacityRow is a provider's stored capacity word: offers said available and sold out,
// and the newest word's age.
type capacityRow struct {
	Available int       `json:"available"`
	SoldOut   int       `json:"sold_out"`
	Observed  time.Time `json:"observed"`
	Age       string    `json:"age"`
}

// addLaunchRows fills the rows' quota and capacity columns from st (nothing from a store
// that keeps neither).
func (a *app) addLaunchRows(ctx context.Context, st any, rows []providerRow) error {
	ls, ok := st.(interface {
		QuotaStatuses(ctx context.Context) ([]store.QuotaStatus, error)
		CapacityStatuses(ctx context.Context) ([]store.CapacityStatus, error)
	})
	if !ok {
		return nil
	}
	qs, err := ls.QuotaStatuses(ctx)
	if err != nil {
		return err
	}
	cs, err := ls.CapacityStatuses(ctx)
	if err != nil {
		return err
	}
	now := a.now()
	for i := range rows {
		for _, q := range qs {
			if q.Provider != rows[i].Name {
				continue
			}
			r := &quotaRow{Account: q.Account, Quotas: q.Quotas, Attempted: q.Attempted, RegionsFailed: q.RegionsFailed,
				Error: a.redactor().String(q.Error), Requests: q.Requests}
			if !q.LastOK.IsZero() {
				t := q.LastOK
				r.LastOK = &t
			}
			if !q.Oldest.IsZero() {
				r.Age, r.oldest = formatAge(now.Sub(q.Oldest)), q.Oldest
			}
			rows[i].Quotas = r
		}
		for _, c := range cs {
			if c.Provider == rows[i].Name {
				rows[i].Capacity = &capacityRow{Available: c.Available, SoldOut: c.SoldOut, Observed: c.Observed, Age: formatAge(now.Sub(c.Observed))}
			}
		}
	}
	return nil
}

// writeLaunchLines prints, under the providers table, a line per provider with quota
// or capacity data: "quotas: aws account 000011112222: 8 quotas, read 2 h ago (1 region
// failed 10 min ago: …)", "capacity: lambda: 3 sold out, 37 available, 5 min ago".
func writeLaunchLines(w io.Writer, rows []providerRow) {
	for _, r := range rows {
		if q := r.Quotas; q != nil {
			line := fmt.Sprintf("quotas: %s", r.Name)
			if q.Account != "" {
				line += " account " + q.Account
			}
			line += fmt.Sprintf(": %d quotas", q.Quotas)
			switch {
			case q.LastOK == nil:
				line += ", never read well"
			default:
				line += ", read " + fmtOptTime(q.LastOK, "") + " (oldest " + q.Age + " old)"
			}
			if q.Error != "" {
				line += fmt.Sprintf("; the last read, %s, failed for %d region(s), their last good quotas kept: %s", q.Attempted.UTC().Format(time.RFC3339), q.RegionsFailed, oneLine(q.Error))
			}
			fmt.Fprintln(w, line)
		}
	}
	for _, r := range rows {
		if c := r.Capacity; c != nil {
			fmt.Fprintf(w, "capacity: %s: %d sold out, %d available, observed %s ago\n", r.Name, c.SoldOut, c.Available, c.Age)
		}
	}
}

// withCapacity gives offers read for `picker offers` (and /v1/offers, export) their stored
// capacity word, so their JSON says `available` as recommend's does.
func withCapacity(ctx context.Context, st offerStore, offers []pricing.Offer) ([]pricing.Offer, error) {
	ls, ok := st.(launchStore)
	if !ok || len(offers) == 0 {
		return offers, nil
	}
	c, err := ls.ReadCapacity(ctx)
	if err != nil {
		return nil, err
	}
	return (&launchFacts{capacity: c}).apply(offers), nil
}

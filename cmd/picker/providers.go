package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers/registry"
	"github.com/pickergpu/picker/store"
)

// providerRow is one provider's state, for `picker providers` and GET /v1/providers.
type providerRow struct {
	Name        string `json:"name"`
	Adapter     bool   `json:"adapter"` // picker can refresh it live
	Enabled     bool   `json:"enabled"`
	Description string `json:"description,omitempty"`
	// Needs is what a refresh of an adapter asks of the user: "none", "api key
	// $LAMBDA_API_KEY", "optional key $RUNPOD_API_KEY", "account (…)", "files"
	// (providers.Needs); empty for a provider without an adapter.
	Needs string `json:"needs,omitempty"`
	// LastSuccess is when the newest successful live refresh finished; nil when the
	// provider's prices are still the embedded snapshot's (SnapshotDate), which seeding
	// records as a successful run dated the snapshot's day: reporting that as a refresh
	// told users a provider picker never reached had answered months ago.
	LastSuccess *time.Time `json:"last_success"`
	// LastAttempt and LastAttemptStatus ("ok" or "failed") are the newest live refresh,
	// whatever its outcome; nil and "" when none was ever tried.
	LastAttempt       *time.Time `json:"last_attempt"`
	LastAttemptStatus string     `json:"last_attempt_status"`
	// SnapshotDate is the date of the embedded snapshot's prices for a provider never
	// refreshed live; nil once a live refresh succeeded.
	SnapshotDate        *time.Time `json:"snapshot_date"`
	Age                 string     `json:"age"`
	Offers              int        `json:"offers"`
	Sources             []string   `json:"sources"`
	LastError           string     `json:"last_error"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	Schedule            string     `json:"schedule,omitempty"`
	// newestObserved is when the newest current price was seen (Age's origin).
	newestObserved time.Time
	// Quotas and Capacity are the launch data's state (launch.go): the account's quota
	// read and the provider's capacity word, with their age; nil when there is none.
	Quotas   *quotaRow    `json:"quotas,omitempty"`
	Capacity *capacityRow `json:"capacity,omitempty"`
	// Market is the spot-band and storage-price read's state (allin.go); nil when none.
	Market *marketRow `json:"spot_storage,omitempty"`
}

func (a *app) providersCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "providers",
		Short: "Show each price provider: enabled, last successful refresh, price age, offers, last error",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rows, err := a.providerRows(cmd.Context())
			if err != nil {
				return err
			}
			return writeProviders(a.streams(), rows)
		},
	}
}

// providerRows merges the adapter list with what the store knows, so providers that
// only come from the embedded snapshot (cudo, oci, …) are listed too.
func (a *app) providerRows(ctx context.Context) ([]providerRow, error) {
	st, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	stats, err := st.Providers(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]store.ProviderStatus{}
	for _, s := range stats {
		byName[s.Provider] = s
	}
	var rows []providerRow
	seen := map[string]bool{}
	add := func(name string, adapter bool, desc, needs string) {
		seen[name] = true
		r := providerRow{Name: name, Adapter: adapter, Description: desc, Needs: needs, Sources: []string{}}
		if adapter {
			r.Enabled = a.cfg.Enabled(name)
			if r.Enabled {
				r.Schedule = a.cfg.Schedule(name)
			}
		}
		if s, ok := byName[name]; ok {
			r.LastSuccess, r.SnapshotDate, r.LastAttempt, r.LastAttemptStatus = liveRuns(s)
			r.Offers = s.Offers
			r.Sources = append(r.Sources, s.Sources...)
			r.LastError = a.redactor().String(s.LastError) // rows stored before redaction existed too
			r.ConsecutiveFailures = s.ConsecutiveFailures
			r.newestObserved = s.NewestObserved
			if !s.NewestObserved.IsZero() {
				// The age of the prices themselves: for snapshot-seeded providers that is
				// the snapshot's date, not when the database was created.
				r.Age = formatAge(a.now().Sub(s.NewestObserved))
			}
		}
		rows = append(rows, r)
	}
	for _, d := range registry.All() {
		add(d.Name, true, d.Description, d.Needs.WithKeyEnv(a.cfg.KeyEnv(d.Name)).String())
	}
	var rest []string
	for name := range byName {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for _, name := range rest {
		add(name, false, "embedded snapshot only", "")
	}
	if err := a.addLaunchRows(ctx, st, rows); err != nil { // launch.go
		return rows, err
	}
	return rows, a.addMarketRows(ctx, st, rows) // allin.go
}

// liveRuns splits what the store knows of a provider's runs into its live refreshes
// and the seed from the embedded snapshot. The store counts the seed as a successful
// run (finished at the snapshot's date for that provider) and marks nothing else, so
// the seed is told apart by what a live refresh leaves behind: every successful one
// writes offers whose source is the provider's API or a price file (providers'
// conformance rule), and no later write turns them back into snapshot offers. A
// provider whose current offers are all the snapshot's has therefore never refreshed
// live: its only success is the seed (reported as snapshotDate), and its newest run is
// either that seed (no attempt) or a failed live refresh (ConsecutiveFailures > 0).
func liveRuns(s store.ProviderStatus) (lastSuccess, snapshotDate, lastAttempt *time.Time, status string) {
	live := slices.ContainsFunc(s.Sources, func(src string) bool { return src != pricing.SourceSnapshot })
	if !s.LastSuccess.IsZero() {
		t := s.LastSuccess
		if live {
			lastSuccess = &t
		} else {
			snapshotDate = &t
		}
	}
	if !s.LastAttempt.IsZero() && (live || s.ConsecutiveFailures > 0) {
		t := s.LastAttempt
		lastAttempt, status = &t, "ok"
		if s.ConsecutiveFailures > 0 {
			status = "failed"
		}
	}
	return lastSuccess, snapshotDate, lastAttempt, status
}

// fmtAttempt is a table's LAST ATTEMPT cell: "2026-11-30T10:00:00Z failed", or "never".
func fmtAttempt(r providerRow) string {
	if r.LastAttempt == nil {
		return "never"
	}
	return fmtOptTime(r.LastAttempt, "") + " " + r.LastAttemptStatus
}

func writeProviders(s *IOStreams, rows []providerRow) error {
	switch s.Format {
	case "json":
		return writeJSON(s.Out, rows)
	case "csv":
		recs := make([][]string, len(rows))
		for i, r := range rows {
			recs[i] = []string{r.Name, fmt.Sprint(r.Adapter), fmt.Sprint(r.Enabled), fmtOptTime(r.LastSuccess, ""), r.Age, fmt.Sprint(r.Offers), strings.Join(r.Sources, " "), pricing.SpreadsheetSafe(r.LastError), fmt.Sprint(r.ConsecutiveFailures),
				fmtOptTime(r.LastAttempt, ""), r.LastAttemptStatus, fmtOptTime(r.SnapshotDate, ""), r.Needs}
		}
		return writeCSV(s.Out, []string{"name", "adapter", "enabled", "last_success", "age", "offers", "sources", "last_error", "consecutive_failures",
			"last_attempt", "last_attempt_status", "snapshot_date", "needs"}, recs)
	}
	t := &table{headers: []string{"PROVIDER", "ENABLED", "NEEDS", "LAST SUCCESS", "LAST ATTEMPT", "AGE", "OFFERS", "SOURCE", "FAILURES", "LAST ERROR"}}
	for _, r := range rows {
		enabled := "-"
		if r.Adapter {
			enabled = "no"
			if r.Enabled {
				enabled = "yes"
			}
		}
		needs := r.Needs
		if needs == "" {
			needs = "-"
		}
		t.add(r.Name, enabled, needs, fmtOptTime(r.LastSuccess, "never"), fmtAttempt(r), r.Age, fmt.Sprint(r.Offers), strings.Join(r.Sources, ","), fmt.Sprint(r.ConsecutiveFailures), oneLine(r.LastError))
	}
	if err := t.write(s.Out, s.TTY); err != nil {
		return err
	}
	writeLaunchLines(s.Out, rows) // launch.go
	writeMarketLines(s.Out, rows) // allin.go
	return nil
}

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
	"github.com/pickergpu/picker/providers/registry"
	"github.com/pickergpu/picker/refresh"
)

func (a *app) refreshCmd() *cobra.Command {
	var names []string
	provider := providerParam(&names, "the providers to refresh, comma list, enabled or not (default: every enabled provider)")
	cmd := &cobra.Command{
		Use:   "refresh",
		Short: "Fetch prices now from each enabled provider (or the ones named)",
		Long: `refresh fetches current prices from each enabled provider concurrently and writes
each provider's offers in one transaction. A failing provider records a failed run and
keeps its last good prices. Naming providers with --provider refreshes exactly those,
enabled or not.`,
		Example: `  picker refresh
  picker refresh --provider azure,lambda,runpod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := BindParams([]param{provider}, FlagLookup(cmd.Flags())); err != nil {
				return err
			}
			if err := checkProviders(names, registry.Names(), "no adapter refreshes it"); err != nil {
				return err
			}
			jobs, err := a.refreshJobs(names)
			if err != nil {
				return err
			}
			return a.runRefresh(cmd.Context(), jobs)
		},
	}
	registerParams(cmd.Flags(), []param{provider})
	return cmd
}

// refreshJobs builds a job per named provider, or per enabled provider when none is named.
func (a *app) refreshJobs(names []string) ([]refresh.Job, error) {
	if len(names) == 0 {
		for _, d := range registry.All() {
			if a.cfg.Enabled(d.Name) {
				names = append(names, d.Name)
			}
		}
		if len(names) == 0 {
			return nil, pricing.Errorf(pricing.Invalid, "no provider is enabled in %s; enable one ([providers.NAME] enabled = true) or name it with --provider (%s)", a.cfg, strings.Join(registry.Names(), ", "))
		}
	}
	var jobs []refresh.Job
	for _, name := range names {
		d, ok := registry.Lookup(name)
		if !ok {
			return nil, usageError{fmt.Errorf("--provider %q: unknown provider; known: %s", name, strings.Join(registry.Names(), ", "))}
		}
		p, err := newProvider(d, a.cfg.Providers.Sections()[name])
		if err != nil {
			return nil, a.cfg.ProviderError(name, err) // the section's key and line, or the adapter's own "name: …"
		}
		if err := a.configureChild(p); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		jobs = append(jobs, refresh.Job{Name: name, Provider: p, Timeout: a.cfg.Timeout(name), Redact: a.redactor().Error, QuotaEvery: a.quotaEvery(name)})
	}
	return jobs, nil
}

// runRefresh refreshes jobs, showing their progress on stderr as the adapters report
// it (progress.go), then prints the results.
func (a *app) runRefresh(ctx context.Context, jobs []refresh.Job) error {
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Name
	}
	pv := a.newRefreshProgress(names)
	for i := range jobs {
		name := jobs[i].Name
		jobs[i].Progress = func(p providers.Progress) { pv.report(name, p) }
	}
	results := refresh.RunAll(ctx, st, jobs, a.cfg.Refresh.Parallel, a.now, func(r refresh.Result) {
		pv.finished(r)
		for _, w := range r.Warnings {
			a.log.Warn(w, "provider", r.Provider)
		}
		for part, e := range r.Failed {
			a.log.Warn("part of the refresh failed; its last good prices stay current", "provider", r.Provider, "part", part, "error", e)
		}
	})
	pv.close()
	if err := a.writeRefreshResults(results); err != nil {
		return err
	}
	var failed []string
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, r.Provider)
		}
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		return fmt.Errorf("refresh failed for %s (their last good prices are kept)", strings.Join(failed, ", "))
	}
	return nil
}

func (a *app) writeRefreshResults(results []refresh.Result) error {
	switch a.output {
	case "json":
		return writeJSON(a.stdout, results)
	case "csv":
		recs := make([][]string, len(results))
		for i, r := range results {
			recs[i] = []string{r.Provider, fmt.Sprint(r.OffersSeen), fmt.Sprint(r.PricesChanged), fmt.Sprint(r.OffersClosed), num(r.Duration.Seconds(), 3), r.Error}
		}
		return writeCSV(a.stdout, []string{"provider", "offers_seen", "prices_changed", "offers_closed", "duration_s", "error"}, recs)
	}
	t := &table{headers: []string{"PROVIDER", "OFFERS", "CHANGED", "CLOSED", "DURATION", "ERROR"}}
	for _, r := range results {
		errText := r.Error
		if errText == "" && len(r.Failed) > 0 {
			var parts []string
			for p := range r.Failed {
				parts = append(parts, p)
			}
			slices.Sort(parts)
			errText = "partial: failed " + strings.Join(parts, ", ")
		}
		if a.verbose && strings.Contains(errText, "\n") {
			a.log.Debug("refresh error in full", "provider", r.Provider, "error", errText)
		}
		t.add(r.Provider, fmt.Sprint(r.OffersSeen), fmt.Sprint(r.PricesChanged), fmt.Sprint(r.OffersClosed), r.Duration.Round(time.Millisecond).String(), oneLine(errText))
	}
	return t.write(a.stdout, a.tty)
}

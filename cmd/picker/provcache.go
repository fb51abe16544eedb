package main

import (
	"context"
	"slices"
	"sync"
)

// provCache keeps the provider rows (providerRows) while the store's data version is
// unchanged: every refresh, failed ones included, and every seed adds a refresh_runs
// row, whose newest id is the version (store.DataVersion), so the rows cannot go stale.
// The Ask page shows the providers' freshness on every view, the empty form included,
// and recomputing it cost 145 ms at 100k offers, under every page view (issue 30).
type provCache struct {
	mu      sync.Mutex
	version int64
	rows    []providerRow
	reads   int // times the rows were computed (tests)
}

// cachedProviderRows is providerRows from the cache when the data version has not
// moved; each caller gets its own copy of the slice.
func (a *app) cachedProviderRows(ctx context.Context) ([]providerRow, error) {
	st, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	v, err := st.DataVersion(ctx)
	if err != nil {
		return nil, err
	}
	c := &a.provCache
	c.mu.Lock()
	if c.rows != nil && c.version == v {
		rows := slices.Clone(c.rows)
		c.mu.Unlock()
		return rows, nil
	}
	c.mu.Unlock()
	rows, err := a.providerRows(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.version, c.rows = v, rows
	c.reads++
	c.mu.Unlock()
	return slices.Clone(rows), nil
}

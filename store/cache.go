package store

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/pickergpu/picker/pricing"
)

// offerCache holds Offers results while the database's current offers are unchanged,
// so a long-running reader (the daemon's API) answers repeated queries from memory.
//
// Validity: every write of current offers (WriteSnapshot, WriteSnapshots, seeding)
// inserts a refresh_runs row in the same transaction, and Prune only deletes offers
// that are not current; so the newest run id is a version of the current offers,
// whichever process wrote them. Each cached query first reads that id (one primary
// key lookup) and drops the cache when it moved.
type offerCache struct {
	maxOffers int // bound on the offers held across all entries

	mu      sync.Mutex
	version int64
	held    int
	entries map[string][]pricing.Offer // read-only once stored
}

// CacheOffers (call it before using s concurrently) makes Offers serve repeated queries from memory until the next write
// of any provider (by this process or another), holding at most maxOffers offers
// across all cached queries. Callers get their own copy of a cached result. The
// daemon turns it on; one-shot commands don't need it.
func (s *Store) CacheOffers(maxOffers int) {
	if maxOffers <= 0 {
		s.cache = nil
		return
	}
	s.cache = &offerCache{maxOffers: maxOffers, entries: map[string][]pricing.Offer{}}
}

func (s *Store) dataVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM refresh_runs").Scan(&v)
	return v, s.dbError("data version", err)
}

func (c *offerCache) offers(ctx context.Context, s *Store, q Query) ([]pricing.Offer, error) {
	v, err := s.dataVersion(ctx)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%#v", q)
	c.mu.Lock()
	if c.version != v {
		clear(c.entries)
		c.version, c.held = v, 0
	}
	hit, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return slices.Clone(hit), nil
	}
	out, err := s.queryOffers(ctx, q)
	if err != nil || len(out) > c.maxOffers {
		return out, err
	}
	// The query may have read a newer snapshot than version v; storing it under v
	// only costs a miss, since the next query reads the newer version.
	kept := slices.Clone(out)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != v {
		return out, nil
	}
	for k, e := range c.entries {
		if c.held+len(kept) <= c.maxOffers {
			break
		}
		delete(c.entries, k)
		c.held -= len(e)
	}
	if old, dup := c.entries[key]; dup {
		c.held -= len(old)
	}
	c.entries[key] = kept
	c.held += len(kept)
	return out, nil
}

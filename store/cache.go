package store

import (
	"container/list"
	"context"
	"fmt"
	"strconv"
	"sync"

	"golang.org/x/sync/singleflight"
)

// offerCache holds query results while the database's current offers are unchanged, so
// a long-running reader (the daemon's API) answers repeated queries from memory.
//
// Validity: every write of current offers (WriteSnapshot, WriteSnapshots, seeding)
// inserts a refresh_runs row in the same transaction, and Prune only deletes offers
// that are not current; so the newest run id is a version of the current offers,
// whichever process wrote them. Each cached query first reads that id (one primary
// key lookup) and drops the cache when it moved.
//
// Entries are keyed by the whole query (and, for recommend's shape reads, the shape and
// need), so different queries never share or overwrite an entry; they are evicted least
// recently used first when the offers held pass maxOffers (about 250 bytes each) or the
// entries pass maxEntries. A result larger than half of maxOffers is served but not
// kept: one full listing must not flush every small recommend entry. Concurrent misses
// of one key (at one version) run the read once (singleflight).
type offerCache struct {
	maxOffers, maxEntries int

	mu      sync.Mutex
	version int64
	held    int
	lru     *list.List               // of *cacheEntry, most recent first
	entries map[string]*list.Element // key -> element of lru
	flight  singleflight.Group
}

type cacheEntry struct {
	key  string
	val  any // []pricing.Offer or []shapeOffer; read-only once stored
	size int // offers held
}

// CacheOffers (call it before using s concurrently) makes Offers and ReadShapes serve
// repeated queries from memory until the next write of any provider (by this process or
// another), holding at most maxOffers offers across all cached results. Callers get their
// own copy of a cached result. The daemon turns it on; one-shot commands don't need it.
func (s *Store) CacheOffers(maxOffers int) {
	if maxOffers <= 0 {
		s.cache = nil
		return
	}
	s.cache = &offerCache{maxOffers: maxOffers, maxEntries: 4096, lru: list.New(), entries: map[string]*list.Element{}}
}

func (s *Store) dataVersion(ctx context.Context) (int64, error) {
	var v int64
	err := pooled{s}.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM refresh_runs").Scan(&v)
	return v, s.dbError("data version", err)
}

// queryKey identifies a Query for the cache.
func queryKey(q Query) string { return fmt.Sprintf("%#v", q) }

func fmtKey(shape int64, limit int, maxPrice float64) string {
	return strconv.FormatInt(shape, 10) + "|" + strconv.Itoa(limit) + "|" + strconv.FormatFloat(maxPrice, 'g', -1, 64)
}

func (c *offerCache) get(v int64, key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != v {
		c.lru.Init()
		clear(c.entries)
		c.version, c.held = v, 0
	}
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*cacheEntry).val, true
	}
	return nil, false
}

func (c *offerCache) put(v int64, key string, val any, size int) {
	if size > c.maxOffers/2 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != v {
		return // a newer version was seen meanwhile; this result may be stale
	}
	if el, ok := c.entries[key]; ok {
		c.held -= el.Value.(*cacheEntry).size
		c.lru.Remove(el)
	}
	for c.lru.Len() > 0 && (c.held+size > c.maxOffers || c.lru.Len() >= c.maxEntries) {
		el := c.lru.Back()
		e := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.entries, e.key)
		c.held -= e.size
	}
	c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, val: val, size: size})
	c.held += size
}

// cached returns read()'s result for key at data version v, from memory when held;
// without a cache it just reads. Callers must not modify the result.
func cached[T any](s *Store, v int64, key string, read func() ([]T, error)) ([]T, error) {
	c := s.cache
	if c == nil {
		return read()
	}
	if val, ok := c.get(v, key); ok {
		return val.([]T), nil
	}
	fk := strconv.FormatInt(v, 10) + "#" + key
	val, err, _ := c.flight.Do(fk, func() (any, error) {
		out, err := read()
		if err == nil {
			c.put(v, key, out, len(out))
		}
		return out, err
	})
	if err != nil {
		return nil, err
	}
	return val.([]T), nil
}

// DataVersion is the version of the current offers (see offerCache): it changes with
// every write of any provider's offers, by any process. Callers that keep results
// derived from offers (the daemon's recommendations) key them by it.
func (s *Store) DataVersion(ctx context.Context) (int64, error) { return s.dataVersion(ctx) }

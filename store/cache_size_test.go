package store

import (
	"context"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

// A write leaves the connection's page cache at SQLite's default, a large one (which
// rebuilds the indexes, dropForBulk) too, after a commit and after a failed write alike:
// the daemon's readers never hold a larger cache.
func TestBigWriteRestoresCacheSize(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		n       int
		corrupt bool // a bad offer at the end fails the write after the cache was grown
	}{
		{"small", 10, false},
		{"big", bulkMinNew, false},
		{"big failed", bulkMinNew, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			s.db.SetMaxOpenConns(1) // the write's connection is the one asked below
			offers := syntheticOffers("p", tt.n, at(0))
			if tt.corrupt {
				offers[len(offers)-1].Provider = "other"
			}
			_, err := s.WriteSnapshot(ctx, "p", WriteInput{Offers: offers, Finished: at(0)})
			if tt.corrupt != (err != nil) || (err != nil && pricing.ErrorCode(err) != pricing.Invalid) {
				t.Fatalf("write: %v", err)
			}
			var kib int
			if err := s.db.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&kib); err != nil {
				t.Fatal(err)
			}
			if kib != -defaultCacheKiB {
				t.Errorf("cache_size after write = %d; want %d", kib, -defaultCacheKiB)
			}
		})
	}
}

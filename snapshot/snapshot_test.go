package snapshot

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDate(t *testing.T) {
	recs, err := csv.NewReader(bytes.NewReader(CSV())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs)-1 != 2482 {
		t.Errorf("rows: got %d, want 2482", len(recs)-1)
	}
	// The newest source_date in shared/data/gpu_offers_snapshot.csv (sort -t, -k12 on it).
	if got, want := Date(), time.Date(2026, 7, 30, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Date: got %v, want %v", got, want)
	}
	// CSV hands out a copy.
	b := CSV()
	b[0] = 'X'
	if CSV()[0] == 'X' {
		t.Error("CSV shares its bytes")
	}
}

// TestEmbeddedMatchesShared guards against the embedded copy drifting from the data
// directory it was copied from (skipped where that directory is absent).
func TestEmbeddedMatchesShared(t *testing.T) {
	shared, err := os.ReadFile(filepath.Join("..", "..", "shared", "data", FileName))
	if err != nil {
		t.Skip("shared data not present:", err)
	}
	if !bytes.Equal(shared, snapshotCSV) {
		t.Errorf("snapshot/%s differs from shared/data/%s: copy it again", FileName, FileName)
	}
}

package store

import (
	"os"

	"github.com/pickergpu/picker/pricing"
)

// readOnlyDSN is how a process that cannot write the database (another user, a
// read-only mount) opens it, by the reader rules in README's daemon section:
//
//   - When the WAL's shared-memory file (-shm) exists, a writer is running or left
//     commits in the WAL: the database is opened mode=ro without immutable, so SQLite
//     reads the WAL through the existing -shm (its read-only shared-memory support)
//     and sees every commit, consistently. immutable=1 there ignored the WAL: stale
//     prices, and torn pages ("database disk image is malformed") once the writer
//     checkpointed under the reader (issue 30).
//   - When there is no -shm but a WAL with content, the commits in it can be read by
//     nobody who cannot create the -shm: refused, saying so.
//   - When neither exists, the file holds every commit and nobody has it open for
//     writing: immutable=1 reads it without creating the -shm this process could not
//     create. A writer that starts later writes to a new WAL, which this open, made for
//     one command, does not see.
func readOnlyDSN(path string) (string, error) {
	base := "file:" + path + "?mode=ro&_pragma=busy_timeout(5000)"
	if _, err := os.Stat(path + "-shm"); err == nil {
		return base, nil
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return "", pricing.Errorf(pricing.Unavailable, "database %s: its WAL (%s-wal) holds commits that this user cannot read without creating %s-shm in a directory it cannot write; run picker as the database's owner, or let the owner's picker finish (it checkpoints on close)", path, path, path)
	}
	return base + "&immutable=1", nil
}

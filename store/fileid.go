package store

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/pickergpu/picker/pricing"
)

// fileCheck is what Ping compares the database file against: its identity when the
// store opened it (os.SameFile: device and inode on unix), and picker's header. A file
// replaced (renamed over) or overwritten in place while the daemon runs left /healthz
// at 200 "integrity ok" until the next refresh's quick check (issue 30): SQLite serves
// pages from its cache and from the file it opened, so a read of the schema version
// alone does not notice.
type fileCheck struct {
	once sync.Once
	fi   os.FileInfo
	// marked: the file's header has carried picker's application_id (a new database's
	// header reaches the main file at its first checkpoint); from then on it must.
	marked atomic.Bool
}

// sqliteMagic opens every SQLite database file (fileformat2.html, "The Database Header").
var sqliteMagic = []byte("SQLite format 3\x00")

// checkFile reports an error when path is no longer the file the store opened, or its
// header is not a SQLite database, or no longer carries picker's application_id (bytes
// 68-71, big endian) once it has. It costs a stat and a 100-byte read.
func (s *Store) checkFile() error {
	s.fcheck.once.Do(func() { s.fcheck.fi, _ = os.Stat(s.path) })
	fi, err := os.Stat(s.path)
	switch {
	case err != nil:
		return pricing.Errorf(pricing.Unavailable, "database %s: %v (removed or moved while open)", s.path, err)
	case s.fcheck.fi != nil && !os.SameFile(fi, s.fcheck.fi):
		return pricing.Errorf(pricing.Unavailable, "database %s was replaced by another file while open; restart to read the new one", s.path)
	}
	f, err := os.Open(s.path)
	if err != nil {
		return pricing.Errorf(pricing.Unavailable, "database %s: %v", s.path, err)
	}
	defer f.Close()
	var hdr [100]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return pricing.Errorf(pricing.Internal, "database %s was overwritten while open: its header cannot be read (%v)", s.path, err)
	}
	if !bytes.Equal(hdr[:16], sqliteMagic) {
		return pricing.Errorf(pricing.Internal, "database %s was overwritten while open: it is no longer a SQLite database", s.path)
	}
	switch id := binary.BigEndian.Uint32(hdr[68:72]); {
	case id == ApplicationID:
		s.fcheck.marked.Store(true)
	case id != 0 || s.fcheck.marked.Load():
		return pricing.Errorf(pricing.Internal, "database %s was overwritten while open: application_id %#x is not picker's", s.path, id)
	}
	return nil
}

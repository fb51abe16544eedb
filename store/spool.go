package store

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"

	"github.com/pickergpu/picker/pricing"
)

// Spool holds a streamed refresh's offers on disk, part by part as the provider hands
// them over (providers.Streamer), until WriteSpool writes them in one transaction. The
// fetch (minutes against the real AWS) holds neither this process's write slot nor
// SQLite's write lock, so the daemon's other providers write meanwhile; and neither the
// adapter nor the refresh holds every offer at once (issue 17: 90k AWS offers in under
// 100 MiB). A Spool is not safe for concurrent use: Streamer calls emit one part at a
// time. Close removes its file.
type Spool struct {
	provider string
	f        *os.File
	unlinked bool // the file's name is already removed
	w        *bufio.Writer
	buf      []byte // a part's encoding, reused
	n        int
	listing  map[string]*obsListing
	err      error // the first write error: every later Add returns it
}

// obsListing is what a refresh's offers say of one region's observed times, before the
// refresh time is known: the one explicit time its offers carry (if any), whether some
// carry none (observed at the refresh time), and whether explicit times differ.
type obsListing struct {
	explicit    int64
	hasExplicit bool
	hasUnset    bool
	mixed       bool
}

func (l *obsListing) add(o *pricing.Offer) {
	if o.ObservedAt.IsZero() {
		l.hasUnset = true
		return
	}
	t := unix(o.ObservedAt)
	switch {
	case !l.hasExplicit:
		l.explicit, l.hasExplicit = t, true
	case l.explicit != t:
		l.mixed = true
	}
}

// addListings notes offers in m, per region.
func addListings(m map[string]*obsListing, offers []pricing.Offer) {
	for i := range offers {
		l := m[offers[i].Region]
		if l == nil {
			l = &obsListing{}
			m[offers[i].Region] = l
		}
		l.add(&offers[i])
	}
}

// resolve is the region's listing once the refresh time at is known: whether every
// offer listed there was observed at one time, and that time.
func (l *obsListing) resolve(at int64) (observed int64, uniform bool) {
	switch {
	case l.mixed:
		return 0, false
	case l.hasExplicit && l.hasUnset:
		return l.explicit, l.explicit == at
	case l.hasExplicit:
		return l.explicit, true
	}
	return at, true
}

// NewSpool starts a spool for provider's streamed refresh in the system's temporary
// directory.
func (s *Store) NewSpool(provider string) (*Spool, error) {
	if provider == "" {
		return nil, pricing.Errorf(pricing.Invalid, "spool: provider name is empty")
	}
	f, err := os.CreateTemp("", "picker-spool-"+provider+"-*")
	if err != nil {
		return nil, pricing.Errorf(pricing.Unavailable, "spool %s refresh: %w", provider, err)
	}
	// Unlinked at once where the system allows it (not Windows): the open file stays
	// readable and a crash leaves nothing behind.
	unlinked := os.Remove(f.Name()) == nil
	w := bufio.NewWriterSize(f, 64<<10)
	return &Spool{provider: provider, f: f, unlinked: unlinked, w: w, listing: map[string]*obsListing{}}, nil
}

// Add appends one part's offers; its signature is a providers.Streamer's emit. The
// offers are checked when WriteSpool writes them, as WriteSnapshot checks its own.
func (sp *Spool) Add(offers []pricing.Offer) error {
	if sp.err != nil {
		return sp.err
	}
	if len(offers) == 0 {
		return nil
	}
	// A part on disk: its payload's length (uvarint), then pricing.AppendOffers.
	sp.buf = pricing.AppendOffers(sp.buf[:0], offers)
	_, err := sp.w.Write(binary.AppendUvarint(nil, uint64(len(sp.buf))))
	if err == nil {
		_, err = sp.w.Write(sp.buf)
	}
	if err != nil {
		sp.err = pricing.Errorf(pricing.Unavailable, "spool %s refresh to %s: %w", sp.provider, sp.f.Name(), err)
		return sp.err
	}
	addListings(sp.listing, offers)
	sp.n += len(offers)
	return nil
}

// Len is the number of offers spooled.
func (sp *Spool) Len() int { return sp.n }

// Close removes the spool's file. It is safe to call more than once.
func (sp *Spool) Close() error {
	if sp.f == nil {
		return nil
	}
	err := sp.f.Close()
	if !sp.unlinked {
		err = errors.Join(err, os.Remove(sp.f.Name()))
	}
	sp.f = nil
	return err
}

// WriteSpool writes a spooled refresh of provider exactly as WriteSnapshot writes the
// same offers (the same per-offer code, one transaction that takes the write slot only
// now); in.Offers must be empty, in.Regions, Started and Finished are as for
// WriteSnapshot. The spool is read back one part at a time.
func (s *Store) WriteSpool(ctx context.Context, provider string, sp *Spool, in WriteInput) (WriteResult, error) {
	if len(in.Offers) > 0 {
		return WriteResult{Provider: provider}, pricing.Errorf(pricing.Invalid, "write %s spool: offers given besides the spool", provider)
	}
	if sp.provider != provider {
		return WriteResult{Provider: provider}, pricing.Errorf(pricing.Invalid, "write %s spool: the spool is %s's", provider, sp.provider)
	}
	if sp.err != nil {
		return WriteResult{Provider: provider}, sp.err
	}
	if sp.f == nil {
		return WriteResult{Provider: provider}, pricing.Errorf(pricing.Internal, "write %s spool: spool closed", provider)
	}
	if err := sp.w.Flush(); err != nil {
		return WriteResult{Provider: provider}, pricing.Errorf(pricing.Unavailable, "spool %s refresh to %s: %w", provider, sp.f.Name(), err)
	}
	res, _, err := s.writeSnapshots(ctx, []providerSource{{provider, sp, in}}, false)
	if err != nil {
		return WriteResult{Provider: provider}, err
	}
	return res[0], nil
}

func (sp *Spool) count() int { return sp.n }

func (sp *Spool) listings() map[string]*obsListing { return sp.listing }

// each decodes the spool part by part. Strings that repeat across offers are shared
// (pricing.OfferDecoder), so a part's offers cost their numbers only.
func (sp *Spool) each(ctx context.Context, fn func(*pricing.Offer) error) error {
	if _, err := sp.f.Seek(0, io.SeekStart); err != nil {
		return pricing.Errorf(pricing.Unavailable, "read %s spool: %w", sp.provider, err)
	}
	r := bufio.NewReaderSize(sp.f, 64<<10)
	var dec pricing.OfferDecoder // shares repeated strings across parts
	var payload []byte
	read := 0
	for read < sp.n {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := binary.ReadUvarint(r)
		if err == nil {
			if uint64(cap(payload)) < n {
				payload = make([]byte, n)
			}
			payload = payload[:n]
			_, err = io.ReadFull(r, payload)
		}
		var part []pricing.Offer
		if err == nil {
			part, err = dec.Decode(payload)
		}
		if err != nil {
			return pricing.Errorf(pricing.Unavailable, "read %s spool %s after %d offers: %w", sp.provider, sp.f.Name(), read, err)
		}
		for i := range part {
			if err := fn(&part[i]); err != nil {
				return err
			}
		}
		read += len(part)
	}
	// The file position is at the end: a later Add appends after the parts read.
	_, err := sp.f.Seek(0, io.SeekEnd)
	return err
}

// offerSource is what one provider's write reads: a snapshot's slice or a spool.
type offerSource interface {
	count() int
	// listings is, per region the offers list, what they say of its observed times.
	listings() map[string]*obsListing
	// each calls fn with every offer, in order; fn must not keep the pointer.
	each(ctx context.Context, fn func(*pricing.Offer) error) error
}

// sliceSource is a WriteSnapshot's offers.
type sliceSource []pricing.Offer

func (s sliceSource) count() int { return len(s) }

func (s sliceSource) listings() map[string]*obsListing {
	m := map[string]*obsListing{}
	addListings(m, s)
	return m
}

func (s sliceSource) each(_ context.Context, fn func(*pricing.Offer) error) error {
	for i := range s {
		if err := fn(&s[i]); err != nil {
			return err
		}
	}
	return nil
}

// providerSource is one provider's write: its offers and the rest of its WriteInput.
type providerSource struct {
	provider string
	src      offerSource
	in       WriteInput
}

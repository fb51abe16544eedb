package fetchproc

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// Protocol is the version of the request and the frame stream. picker and picker-fetch
// from different builds that speak different versions fail with a message that says
// to install matching ones, never with a garbled stream. Additions that both sides can
// do without are asked for in the request instead (Progress): an older child ignores a
// request field it does not know, and a child sends an added frame kind only when
// asked, so an older parent (whose reader refuses unknown kinds as garbled) never sees
// one.
const Protocol = 1

// Program is the name of the fetch program.
const Program = "picker-fetch"

// request is what picker writes to picker-fetch's stdin, as JSON: the provider's decoded
// config section and what the child needs to log as picker does.
type request struct {
	Protocol int `json:"protocol"`
	// Config is the section, in the JSON form of the adapter's Config type (both sides
	// share the type, from the adapter's light package).
	Config json.RawMessage `json:"config"`
	// Secrets are the values picker's redactor masks (config.Secrets): the child's log
	// lines pass the same redaction.
	Secrets []string `json:"secrets,omitempty"`
	// Progress asks for progress frames (the adapter's providers.Progress reports), sent
	// between the parts as the fetch goes.
	Progress bool `json:"progress,omitempty"`
	// Quotas asks the fetch to read the account's quotas too (providers.WithQuotaRead),
	// sent back in a quota frame (quota.go).
	Quotas bool `json:"quotas,omitempty"`
	// Market asks the fetch to read spot bands and storage prices too
	// (providers.WithMarketRead), sent back in the summary (market.go).
	Market bool `json:"market,omitempty"`
}

// The frame stream on picker-fetch's stdout: frames of one kind byte, the payload's
// length (uvarint) and the payload. A part's payload is its offers in pricing's binary
// layout (pricing.AppendOffers); the summary's, the error's and a progress report's are
// JSON.
const (
	kindPart     = 'P'
	kindSummary  = 'S'
	kindError    = 'E'
	kindProgress = 'G' // only when the request asks for it
	// maxPayload bounds a frame so that garbage read as a length cannot make picker
	// allocate gigabytes.
	maxPayload = 1 << 30
	// maxProgressPayload bounds a progress frame: a few counters and a part's name.
	maxProgressPayload = 16 << 10
)

// frame is one decoded frame: a part of the offers, a progress report, or the final
// summary, or the final error.
type frame struct {
	Offers   []pricing.Offer
	Progress *providers.Progress
	Quotas   *wireQuotas
	Summary  *summary
	Err      *wireError
}

// summary is the rest of the Snapshot, sent once every part is.
type summary struct {
	Regions  []string             `json:"regions,omitempty"`
	Failed   map[string]wireError `json:"failed,omitempty"`
	Warnings []string             `json:"warnings,omitempty"`
	// Market is the spot-band and storage-price read (market.go); an older parent
	// ignores it.
	Market *wireMarket `json:"market,omitempty"`
}

// wireError is a pricing.Error across the process boundary: its code decides the exit
// code and HTTP status, Param the flag a message is about.
type wireError struct {
	Code    pricing.Code `json:"code"`
	Message string       `json:"message"`
	Param   string       `json:"param,omitempty"`
}

func toWire(err error) wireError {
	return wireError{Code: pricing.ErrorCode(err), Message: err.Error(), Param: pricing.ErrorParam(err)}
}

func (w wireError) err() error {
	code := w.Code
	if code == "" {
		code = pricing.Internal
	}
	return &pricing.Error{Code: code, Message: w.Message, Param: w.Param}
}

func (s *summary) snapshot() *providers.Snapshot {
	snap := &providers.Snapshot{Regions: s.Regions, Warnings: s.Warnings, Market: s.Market.report()}
	if len(s.Failed) > 0 {
		snap.Failed = make(map[string]error, len(s.Failed))
		for part, e := range s.Failed {
			snap.Failed[part] = e.err()
		}
	}
	return snap
}

func summarize(snap *providers.Snapshot) *summary {
	s := &summary{Regions: snap.Regions, Warnings: snap.Warnings, Market: marketToWire(snap.Market)}
	if len(snap.Failed) > 0 {
		s.Failed = make(map[string]wireError, len(snap.Failed))
		for part, e := range snap.Failed {
			s.Failed[part] = toWire(e)
		}
	}
	return s
}

// frameWriter writes frames; each is flushed, so picker sees a part as soon as it is
// complete.
type frameWriter struct {
	w   *bufio.Writer
	buf []byte
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

func (fw *frameWriter) write(f frame) error {
	var kind byte
	var doc any // the payload of a JSON frame
	switch {
	case f.Err != nil:
		kind, doc = kindError, f.Err
	case f.Summary != nil:
		kind, doc = kindSummary, f.Summary
	case f.Progress != nil:
		kind, doc = kindProgress, f.Progress
	case f.Quotas != nil:
		kind, doc = kindQuota, f.Quotas
	default:
		kind = kindPart
	}
	payload := fw.buf[:0]
	if doc != nil {
		b, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		payload = b
	} else {
		payload = pricing.AppendOffers(payload, f.Offers)
		fw.buf = payload[:0]
	}
	hdr := binary.AppendUvarint([]byte{kind}, uint64(len(payload)))
	if _, err := fw.w.Write(hdr); err != nil {
		return err
	}
	if _, err := fw.w.Write(payload); err != nil {
		return err
	}
	return fw.w.Flush()
}

// errGarbled is a stream that is not frames.
var errGarbled = errors.New("not a picker-fetch frame stream")

// frameReader reads frames; its decoder interns the offers' strings across parts.
type frameReader struct {
	r       *bufio.Reader
	payload []byte
	offers  pricing.OfferDecoder
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// read returns the next frame; io.EOF when the stream ended cleanly between frames,
// io.ErrUnexpectedEOF when it ended inside one, an error wrapping errGarbled for bytes
// that are not a frame.
func (fr *frameReader) read() (frame, error) {
	kind, err := fr.r.ReadByte()
	if err != nil {
		return frame{}, err
	}
	if kind != kindPart && kind != kindSummary && kind != kindError && kind != kindProgress && kind != kindQuota {
		return frame{}, fmt.Errorf("%w: frame kind %q", errGarbled, kind)
	}
	n, err := binary.ReadUvarint(fr.r)
	if err != nil {
		return frame{}, unexpected(err)
	}
	if n > maxPayload || (kind == kindProgress && n > maxProgressPayload) || (kind == kindQuota && n > maxQuotaPayload) {
		return frame{}, fmt.Errorf("%w: a %d-byte frame %q", errGarbled, n, kind)
	}
	if uint64(cap(fr.payload)) < n {
		fr.payload = make([]byte, n)
	}
	p := fr.payload[:n]
	if _, err := io.ReadFull(fr.r, p); err != nil {
		return frame{}, unexpected(err)
	}
	var f frame
	switch kind {
	case kindError:
		f.Err = &wireError{}
		err = json.Unmarshal(p, f.Err)
	case kindSummary:
		f.Summary = &summary{}
		err = json.Unmarshal(p, f.Summary)
	case kindProgress:
		f.Progress = &providers.Progress{}
		err = json.Unmarshal(p, f.Progress)
	case kindQuota:
		f.Quotas = &wireQuotas{}
		err = json.Unmarshal(p, f.Quotas)
	default:
		if err = checkPartCount(p); err == nil {
			f.Offers, err = fr.offers.Decode(p)
		}
	}
	if err != nil {
		return frame{}, fmt.Errorf("%w: frame %q: %v", errGarbled, kind, err)
	}
	return f, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

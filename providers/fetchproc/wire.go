package fetchproc

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/providers"
)

// Protocol is the version of the request and the frame stream. picker and picker-fetch
// from different builds that speak different versions fail with a message that says
// to install matching ones, never with a garbled stream.
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
}

// The frame stream on picker-fetch's stdout: frames of one kind byte, the payload's
// length (uvarint) and the payload. A part's payload is its offers in a fixed binary
// layout (appendOffer); the summary's and the error's are JSON. The codec is this file
// rather than encoding/gob because gob's package initialisation alone (0.3 ms) would be
// paid by every picker command, which is what picker-fetch exists to avoid.
const (
	kindPart    = 'P'
	kindSummary = 'S'
	kindError   = 'E'
	// maxPayload bounds a frame so that garbage read as a length cannot make picker
	// allocate gigabytes.
	maxPayload = 1 << 30
)

// frame is one decoded frame: a part of the offers, or the final summary, or the final
// error.
type frame struct {
	Offers  []pricing.Offer
	Summary *summary
	Err     *wireError
}

// summary is the rest of the Snapshot, sent once every part is.
type summary struct {
	Regions  []string             `json:"regions,omitempty"`
	Failed   map[string]wireError `json:"failed,omitempty"`
	Warnings []string             `json:"warnings,omitempty"`
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
	snap := &providers.Snapshot{Regions: s.Regions, Warnings: s.Warnings}
	if len(s.Failed) > 0 {
		snap.Failed = make(map[string]error, len(s.Failed))
		for part, e := range s.Failed {
			snap.Failed[part] = e.err()
		}
	}
	return snap
}

func summarize(snap *providers.Snapshot) *summary {
	s := &summary{Regions: snap.Regions, Warnings: snap.Warnings}
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
	payload := fw.buf[:0]
	switch {
	case f.Err != nil:
		kind = kindError
		b, err := json.Marshal(f.Err)
		if err != nil {
			return err
		}
		payload = b
	case f.Summary != nil:
		kind = kindSummary
		b, err := json.Marshal(f.Summary)
		if err != nil {
			return err
		}
		payload = b
	default:
		kind = kindPart
		payload = binary.AppendUvarint(payload, uint64(len(f.Offers)))
		for i := range f.Offers {
			payload = appendOffer(payload, &f.Offers[i])
		}
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

// frameReader reads frames. It interns the offers' strings (providers, regions, GPU
// models and instance types repeat across a provider's offers), so a large refresh
// holds one copy of each.
type frameReader struct {
	r       *bufio.Reader
	payload []byte
	strs    map[string]string
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), strs: map[string]string{}}
}

// read returns the next frame; io.EOF when the stream ended cleanly between frames,
// io.ErrUnexpectedEOF when it ended inside one, an error wrapping errGarbled for bytes
// that are not a frame.
func (fr *frameReader) read() (frame, error) {
	kind, err := fr.r.ReadByte()
	if err != nil {
		return frame{}, err
	}
	if kind != kindPart && kind != kindSummary && kind != kindError {
		return frame{}, fmt.Errorf("%w: frame kind %q", errGarbled, kind)
	}
	n, err := binary.ReadUvarint(fr.r)
	if err != nil {
		return frame{}, unexpected(err)
	}
	if n > maxPayload {
		return frame{}, fmt.Errorf("%w: a %d-byte frame", errGarbled, n)
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
	default:
		f.Offers, err = fr.offers(p)
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

// appendOffer appends o in the part layout: every field of pricing.Offer in order,
// strings as uvarint length and bytes, numbers as IEEE 754 bits, ObservedAt in
// time.Time's binary form. TestOfferCodecCoversEveryField fails when Offer gains a
// field this does not carry.
func appendOffer(b []byte, o *pricing.Offer) []byte {
	for _, s := range []string{o.Provider, o.Region, o.Zone, o.InstanceType, o.GPUModel} {
		b = appendString(b, s)
	}
	for _, f := range []float64{o.GPUCount, o.GPUMemGiB, o.GPUMemReportedGiB, o.VCPUs, o.RAMGiB} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	b = appendString(b, string(o.Purchase))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(o.PriceUSDHr))
	b = appendString(b, o.Currency)
	var tb [24]byte
	t, _ := o.ObservedAt.AppendBinary(tb[:0]) // fails only for a zone offset that is not whole minutes
	b = append(binary.AppendUvarint(b, uint64(len(t))), t...)
	return appendString(b, o.Source)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// offers decodes a part's payload.
func (fr *frameReader) offers(p []byte) ([]pricing.Offer, error) {
	d := decoder{p: p, strs: fr.strs}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(p)) { // every offer takes bytes: a bound on garbage
		d.err = fmt.Errorf("%d offers in %d bytes", n, len(p))
	}
	if d.err != nil {
		return nil, d.err
	}
	out := make([]pricing.Offer, n)
	for i := range out {
		o := &out[i]
		o.Provider, o.Region, o.Zone, o.InstanceType, o.GPUModel = d.str(), d.str(), d.str(), d.str(), d.str()
		o.GPUCount, o.GPUMemGiB, o.GPUMemReportedGiB, o.VCPUs, o.RAMGiB = d.float(), d.float(), d.float(), d.float(), d.float()
		o.Purchase = pricing.Purchase(d.str())
		o.PriceUSDHr = d.float()
		o.Currency = d.str()
		if t := d.bytes(); d.err == nil {
			d.err = o.ObservedAt.UnmarshalBinary(t)
		}
		o.Source = d.str()
		if d.err != nil {
			return nil, fmt.Errorf("offer %d: %w", i, d.err)
		}
	}
	if d.err == nil && len(d.p) > 0 {
		d.err = fmt.Errorf("%d bytes after the offers", len(d.p))
	}
	return out, d.err
}

// decoder reads a part's payload; the first error sticks.
type decoder struct {
	p    []byte
	strs map[string]string
	err  error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.err = errors.New("bad length")
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.p)) {
		d.err = errors.New("cut short")
	}
	if d.err != nil {
		return nil
	}
	b := d.p[:n]
	d.p = d.p[n:]
	return b
}

func (d *decoder) str() string {
	b := d.bytes()
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	d.strs[s] = s
	return s
}

func (d *decoder) float() float64 {
	if d.err == nil && len(d.p) < 8 {
		d.err = errors.New("cut short")
	}
	if d.err != nil {
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.p))
	d.p = d.p[8:]
	return v
}

package pricing

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The offers' binary layout: picker-fetch hands parts of a refresh to picker in it, and
// a streamed refresh spools them to disk in it (store.Spool). It is here rather than
// encoding/gob because gob's package initialisation alone (0.3 ms) would be paid by
// every picker command (issue 17), and one layout serves both ends.
//
// AppendOffers writes the count (uvarint), then per offer every field of Offer in order:
// strings as uvarint length and bytes, numbers as IEEE 754 bits (little endian),
// ObservedAt in time.Time's binary form, Source, Available as one byte, and the Host
// facts (numbers and strings as above, in Host's field order).
// TestOfferCodecCoversEveryField fails when Offer gains a field the layout does not carry.
func AppendOffers(b []byte, offers []Offer) []byte {
	b = binary.AppendUvarint(b, uint64(len(offers)))
	for i := range offers {
		b = appendOffer(b, &offers[i])
	}
	return b
}

func appendOffer(b []byte, o *Offer) []byte {
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
	b = appendString(b, o.Source)
	b = append(b, byte(o.Available))
	h := &o.Host
	for _, f := range []float64{h.Reliability, h.MaxCUDA} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	b = appendString(b, h.Driver)
	for _, f := range []float64{h.NetUpMbps, h.NetDownMbps, h.DiskGB} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return appendString(b, h.Verification)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// OfferDecoder reads AppendOffers' layout. It interns the offers' strings (providers,
// regions, GPU models and instance types repeat across a provider's offers), so a large
// refresh holds one copy of each. The zero value is ready to use.
type OfferDecoder struct {
	strs map[string]string
}

// Decode decodes one AppendOffers payload, all of it: bytes after the offers are an
// error, as is anything cut short.
func (od *OfferDecoder) Decode(p []byte) ([]Offer, error) {
	if od.strs == nil {
		od.strs = map[string]string{}
	}
	d := decoder{p: p, strs: od.strs}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(p)) { // every offer takes bytes: a bound on garbage
		d.err = fmt.Errorf("%d offers in %d bytes", n, len(p))
	}
	if d.err != nil {
		return nil, d.err
	}
	out := make([]Offer, n)
	for i := range out {
		o := &out[i]
		o.Provider, o.Region, o.Zone, o.InstanceType, o.GPUModel = d.str(), d.str(), d.str(), d.str(), d.str()
		o.GPUCount, o.GPUMemGiB, o.GPUMemReportedGiB, o.VCPUs, o.RAMGiB = d.float(), d.float(), d.float(), d.float(), d.float()
		o.Purchase = Purchase(d.str())
		o.PriceUSDHr = d.float()
		o.Currency = d.str()
		if t := d.bytes(); d.err == nil {
			d.err = o.ObservedAt.UnmarshalBinary(t)
		}
		o.Source = d.str()
		if o.Available = Availability(d.byte()); d.err == nil && o.Available > SoldOut {
			d.err = fmt.Errorf("availability %d", o.Available)
		}
		h := &o.Host
		h.Reliability, h.MaxCUDA, h.Driver = d.float(), d.float(), d.str()
		h.NetUpMbps, h.NetDownMbps, h.DiskGB, h.Verification = d.float(), d.float(), d.float(), d.str()
		if d.err != nil {
			return nil, fmt.Errorf("offer %d: %w", i, d.err)
		}
	}
	if d.err == nil && len(d.p) > 0 {
		d.err = fmt.Errorf("%d bytes after the offers", len(d.p))
	}
	return out, d.err
}

// decoder reads a payload; the first error sticks.
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

func (d *decoder) byte() byte {
	if d.err == nil && len(d.p) < 1 {
		d.err = errors.New("cut short")
	}
	if d.err != nil {
		return 0
	}
	v := d.p[0]
	d.p = d.p[1:]
	return v
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

package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// The offers image: every current offer of a small catalogue in one compact row
// (offers_image, 0005_offers_image.sql), rebuilt by every write transaction of current
// offers. A one-shot `picker recommend` on the 3k-offer embedded snapshot spent most of
// its read in SQLite's per-row work (about 3 µs a row through modernc.org/sqlite, ~730
// rows); one row and a decode in Go take a fraction of that (issue 17). ReadShapes and
// CountByGPU answer from it exactly as from the tables (the randomized tests compare
// both). Above imageMaxOffers current offers there is no image: rebuilding it would
// cost every refresh a read of the whole catalogue, and the shape reads are cheap
// there relative to the catalogue.
var imageMaxOffers = 25_000 // a variable for the tests

// imageFormat is the encoding's version (its first byte); an image in another format
// is ignored, so a newer picker's image never confuses an older one.
const imageFormat = 3 // 3: host facts (issue 29)

// imageVersionSQL is the data version an image must carry to be current: the newest
// successful run. Every write of current offers records one in its transaction, and
// failed runs change no offer, so they leave the image current. A write by a picker
// that keeps no image (an older build) moves it, and readers fall back to the tables.
const imageVersionSQL = "SELECT coalesce(max(id), 0) FROM refresh_runs WHERE status = 'ok'"

// writeImage rebuilds the image, at version (the newest successful run, which tx just
// recorded), inside tx, the write transaction that just changed the
// current offers (called last, before commit).
func writeImage(ctx context.Context, tx *sql.Tx, version int64) error {
	var n int
	// Counting stops past the limit: a 100k-offer catalogue's refresh pays for 25k
	// index entries, not 100k.
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM offers WHERE price IS NOT NULL LIMIT ?)", imageMaxOffers+1).Scan(&n); err != nil {
		return fmt.Errorf("offers image: %w", err)
	}
	if n > imageMaxOffers {
		_, err := tx.ExecContext(ctx, "DELETE FROM offers_image")
		return err
	}
	rows, err := tx.QueryContext(ctx, "SELECT shape_id, "+shapeOfferCols("offers")+" FROM offers WHERE price IS NOT NULL")
	if err != nil {
		return fmt.Errorf("offers image: %w", err)
	}
	defer rows.Close()
	offers := make([]shapeOffer, 0, n)
	for rows.Next() {
		so, err := scanShapeOffer(rows)
		if err != nil {
			return fmt.Errorf("offers image: %w", err)
		}
		offers = append(offers, so)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("offers image: %w", err)
	}
	slices.SortFunc(offers, func(a, b shapeOffer) int { return storeOrder(a.Offer, b.Offer) })
	_, err = tx.ExecContext(ctx, "INSERT OR REPLACE INTO offers_image (id, version, data) VALUES (1, ?, ?)", version, encodeImage(offers))
	return err
}

// encodeImage writes offers (facts as stored; in store order) as: the format byte; a
// string table (uvarint count, then uvarint length and bytes each); the shapes (count,
// then per shape and host CUDA class among its offers the shape's id, string-table indexes of provider, instance type, purchase and
// GPU model, and float64s GPU count, GPU memory, vCPUs, RAM, little endian); the
// distinct host facts (count, then per pricing.Host float64s reliability, max CUDA,
// network up, network down, disk, and string-table indexes of driver and verification);
// the offers (count, then per offer its shape's position in that list, its host's
// position in theirs, string-table indexes of region, zone, currency and source, the
// price as a float64 and the observed time as varint unix seconds). Shape facts once per
// shape keep a 3k-offer image near 70 KB; a catalogue of clouds has one host (none
// stated), a byte per offer.
func encodeImage(offers []shapeOffer) []byte {
	idx := map[string]uint64{}
	var table []string
	ref := func(s string) uint64 {
		i, ok := idx[s]
		if !ok {
			i = uint64(len(table))
			idx[s] = i
			table = append(table, s)
		}
		return i
	}
	// A shape's offers whose hosts' CUDA ceilings are of other classes are judged apart
	// (one may be excluded for it, recommend.CUDAClass), so they are apart in the image's
	// shapes: its reads group offers by them, as the tables' read groups by fit-fact set.
	type group struct {
		shape int64
		cuda  float64
	}
	shapePos := map[group]uint64{}
	hostPos := map[pricing.Host]uint64{}
	var shapes, hosts, body []byte
	for _, so := range offers {
		o := &so.Offer
		gk := group{so.shape, recommend.CUDAClass(o.Host.MaxCUDA)}
		pos, ok := shapePos[gk]
		if !ok {
			pos = uint64(len(shapePos))
			shapePos[gk] = pos
			shapes = binary.AppendUvarint(shapes, uint64(so.shape))
			for _, s := range []string{o.Provider, o.InstanceType, string(o.Purchase), o.GPUModel} {
				shapes = binary.AppendUvarint(shapes, ref(s))
			}
			for _, f := range []float64{o.GPUCount, o.GPUMemGiB, o.VCPUs, o.RAMGiB} {
				shapes = binary.LittleEndian.AppendUint64(shapes, math.Float64bits(f))
			}
		}
		hp, ok := hostPos[o.Host]
		if !ok {
			hp = uint64(len(hostPos))
			hostPos[o.Host] = hp
			h := &o.Host
			for _, f := range []float64{h.Reliability, h.MaxCUDA, h.NetUpMbps, h.NetDownMbps, h.DiskGB} {
				hosts = binary.LittleEndian.AppendUint64(hosts, math.Float64bits(f))
			}
			hosts = binary.AppendUvarint(binary.AppendUvarint(hosts, ref(h.Driver)), ref(h.Verification))
		}
		body = binary.AppendUvarint(binary.AppendUvarint(body, pos), hp)
		for _, s := range []string{o.Region, o.Zone, o.Currency, o.Source} {
			body = binary.AppendUvarint(body, ref(s))
		}
		body = binary.LittleEndian.AppendUint64(body, math.Float64bits(o.PriceUSDHr))
		body = binary.AppendVarint(body, o.ObservedAt.Unix())
	}
	out := []byte{imageFormat}
	out = binary.AppendUvarint(out, uint64(len(table)))
	for _, s := range table {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	out = binary.AppendUvarint(out, uint64(len(shapePos)))
	out = append(out, shapes...)
	out = binary.AppendUvarint(out, uint64(len(hostPos)))
	out = append(out, hosts...)
	out = binary.AppendUvarint(out, uint64(len(offers)))
	return append(out, body...)
}

var errImage = errors.New("offers image: malformed")

// imageData is a checked image: its string table, its shapes, and its offers still
// encoded. Reads walk the offers and build a pricing.Offer only for those they return
// (a few hundred of a few thousand): building every one cost a cold 3k-offer
// recommend 0.7 ms.
type imageData struct {
	table  []string
	shapes []imageShape
	hosts  []pricing.Host
	rows   []byte // the offers, encodeImage's per-offer records
	n      int
}

// imageShape is a shape of the image (a shape's offers of one host CUDA class): its
// id, string-table indexes (provider, instance type, purchase, GPU model) and facts as
// stored (GPU count, GPU memory, vCPUs, RAM).
type imageShape struct {
	id                             int64
	provider, instance, purchase   uint64
	gpu                            uint64
	count, mem, vcpus, ram, usable float64 // usable: the per-GPU memory offers report
	reported                       float64 // the stored memory when usable replaced it, else 0
}

// imageRow is one offer record: its shape's position in imageData.shapes, its host's in
// imageData.hosts, string-table indexes of region, zone, currency and source, its price
// and observed time.
type imageRow struct {
	shape, host                    int
	region, zone, currency, source uint64
	price                          float64
	seen                           int64
}

// decodeImage checks encodeImage's format whole (any inconsistency is errImage: the
// caller then reads the tables) and returns it ready to walk.
func decodeImage(b []byte) (*imageData, error) {
	if len(b) == 0 || b[0] != imageFormat {
		return nil, errImage
	}
	b = b[1:]
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	nt, ok := uv()
	if !ok || nt > uint64(len(b)) {
		return nil, errImage
	}
	d := &imageData{table: make([]string, nt)}
	for i := range d.table {
		l, ok := uv()
		if !ok || l > uint64(len(b)) {
			return nil, errImage
		}
		d.table[i], b = string(b[:l]), b[l:]
	}
	ns, ok := uv()
	if !ok || ns > uint64(len(b)) {
		return nil, errImage
	}
	d.shapes = make([]imageShape, ns)
	for i := range d.shapes {
		sh := &d.shapes[i]
		id, ok := uv()
		if !ok {
			return nil, errImage
		}
		sh.id = int64(id)
		for _, dst := range []*uint64{&sh.provider, &sh.instance, &sh.purchase, &sh.gpu} {
			if *dst, ok = uv(); !ok || *dst >= nt {
				return nil, errImage
			}
		}
		if len(b) < 32 {
			return nil, errImage
		}
		for _, dst := range []*float64{&sh.count, &sh.mem, &sh.vcpus, &sh.ram} {
			*dst, b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
		}
		u := pricing.Offer{GPUModel: d.table[sh.gpu], GPUMemGiB: sh.mem}.WithUsableMemory()
		sh.usable, sh.reported = u.GPUMemGiB, u.GPUMemReportedGiB
	}
	nh, ok := uv()
	if !ok || nh > uint64(len(b)) {
		return nil, errImage
	}
	d.hosts = make([]pricing.Host, nh)
	for i := range d.hosts {
		h := &d.hosts[i]
		if len(b) < 40 {
			return nil, errImage
		}
		for _, dst := range []*float64{&h.Reliability, &h.MaxCUDA, &h.NetUpMbps, &h.NetDownMbps, &h.DiskGB} {
			*dst, b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
		}
		for _, dst := range []*string{&h.Driver, &h.Verification} {
			v, ok := uv()
			if !ok || v >= nt {
				return nil, errImage
			}
			*dst = d.table[v]
		}
	}
	no, ok := uv()
	if !ok || no > uint64(len(b)) {
		return nil, errImage
	}
	d.rows, d.n = b, int(no)
	var r imageRow
	rest := d.rows
	for range d.n {
		if rest, ok = d.next(rest, &r); !ok {
			return nil, errImage
		}
	}
	if len(rest) != 0 {
		return nil, errImage
	}
	return d, nil
}

// next decodes the record at the start of b into r and returns what follows it.
func (d *imageData) next(b []byte, r *imageRow) ([]byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v >= uint64(len(d.shapes)) {
		return nil, false
	}
	r.shape, b = int(v), b[n:]
	v, n = binary.Uvarint(b)
	if n <= 0 || v >= uint64(len(d.hosts)) {
		return nil, false
	}
	r.host, b = int(v), b[n:]
	for _, dst := range []*uint64{&r.region, &r.zone, &r.currency, &r.source} {
		v, n := binary.Uvarint(b)
		if n <= 0 || v >= uint64(len(d.table)) {
			return nil, false
		}
		*dst, b = v, b[n:]
	}
	if len(b) < 8 {
		return nil, false
	}
	r.price, b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
	seen, n := binary.Varint(b)
	if n <= 0 {
		return nil, false
	}
	r.seen = seen
	return b[n:], true
}

// each calls fn with every record, in store order (decodeImage checked them all).
func (d *imageData) each(fn func(r *imageRow)) {
	var r imageRow
	b := d.rows
	for range d.n {
		b, _ = d.next(b, &r)
		fn(&r)
	}
}

// offer builds r's offer as the tables' reads return it (usable memory applied).
func (d *imageData) offer(r *imageRow) pricing.Offer {
	t, sh := d.table, &d.shapes[r.shape]
	return pricing.Offer{Provider: t[sh.provider], Region: t[r.region], Zone: t[r.zone], InstanceType: t[sh.instance],
		Purchase: pricing.Purchase(t[sh.purchase]), GPUModel: t[sh.gpu], Currency: t[r.currency], Source: t[r.source],
		GPUCount: sh.count, GPUMemGiB: sh.usable, GPUMemReportedGiB: sh.reported, VCPUs: sh.vcpus, RAMGiB: sh.ram,
		PriceUSDHr: r.price, ObservedAt: fromUnix(r.seen), Host: d.hosts[r.host]}
}

// imageCache keeps the decoded image of one data version, so the reads of one
// command (ReadShapes, then CountByGPU) and a daemon's requests decode it once.
type imageCache struct {
	mu      sync.Mutex
	version int64
	data    *imageData // read-only once stored
}

// UseImage turns reading the offers image on (the default) or off, so that reads go to
// the tables: the tests compare both paths, and it helps when debugging a read.
func (s *Store) UseImage(on bool) { s.noImage = !on }

// image returns the current offers from the image, with ok false when there is none
// or it is not current (the caller reads the tables). It is one statement: a
// consistent snapshot on its own.
func (s *Store) image(ctx context.Context) (img *imageData, ok bool, err error) {
	if s.noImage {
		return nil, false, nil
	}
	c := &s.img
	c.mu.Lock()
	defer c.mu.Unlock()
	// With nothing decoded yet (every one-shot command), one statement reads the
	// image; holding one, only its version is compared.
	var version int64
	var data []byte
	current := "FROM offers_image WHERE id = 1 AND version = (" + imageVersionSQL + ")"
	if c.data == nil {
		err = pooled{s}.QueryRowContext(ctx, "SELECT version, data "+current).Scan(&version, &data)
	} else {
		err = pooled{s}.QueryRowContext(ctx, "SELECT version, CASE WHEN version = ? THEN NULL ELSE data END "+current, c.version).Scan(&version, &data)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.dbError("offers image", err)
	}
	if c.data != nil && c.version == version {
		return c.data, true, nil
	}
	img, err = decodeImage(data)
	if err != nil {
		return nil, false, nil // unreadable: the tables answer
	}
	c.version, c.data = version, img
	return img, true, nil
}

// imageMatcher is q's filters over d's records, as shapeFilters and scanShapeOffers
// apply them to the tables: the shape filters (on the memory as stored) and the VRAM
// filters on the usable memory, decided once per shape, then the offer filters
// (region, price, the host's reliability).
func imageMatcher(d *imageData, q Query) (func(*imageRow) bool, error) {
	var pur string
	if p := strings.ToLower(string(q.Purchase)); p != "" && p != "any" {
		v, err := pricing.ParsePurchase(p)
		if err != nil {
			return nil, err
		}
		pur = string(v)
	}
	// in says whether a string-table entry is in a filter's list; nil accepts all.
	in := func(vals []string, norm func(string) string, eq func(a, b string) bool) func(uint64) bool {
		if len(vals) == 0 {
			return nil
		}
		set := make([]string, len(vals))
		for i, v := range vals {
			set[i] = norm(v)
		}
		return func(i uint64) bool {
			return slices.ContainsFunc(set, func(s string) bool { return eq(d.table[i], s) })
		}
	}
	exact := func(a, b string) bool { return a == b }
	provs := in(q.Providers, func(v string) string { return strings.ToLower(strings.TrimSpace(v)) }, exact)
	gpus := in(q.GPUModels, normGPU, asciiFoldEqual) // COLLATE NOCASE: ASCII letters fold
	regions := in(q.Regions, strings.TrimSpace, asciiFoldEqual)
	shapeOK := make([]bool, len(d.shapes))
	for i := range d.shapes {
		sh := &d.shapes[i]
		o := pricing.Offer{GPUCount: sh.count, GPUMemGiB: sh.usable}
		perDevice := sh.mem
		if sh.count < 1 {
			perDevice *= sh.count
		}
		switch {
		case provs != nil && !provs(sh.provider),
			gpus != nil && !gpus(sh.gpu),
			pur != "" && d.table[sh.purchase] != pur,
			q.MaxGPUs > 0 && !(sh.count <= q.MaxGPUs),
			q.ExcludeFractional && !(sh.count >= 1),
			q.MinVRAMGiB > 0 && (!(perDevice >= q.MinVRAMGiB) || o.MemPerDeviceGiB() < q.MinVRAMGiB),
			q.MinTotalVRAMGiB > 0 && (!(sh.count*sh.mem >= q.MinTotalVRAMGiB) || o.TotalGPUMemGiB() < q.MinTotalVRAMGiB),
			!q.classOK(d.table[sh.gpu], sh.count, sh.mem):
			continue
		}
		shapeOK[i] = true
	}
	var regionOK map[uint64]bool
	if regions != nil {
		regionOK = map[uint64]bool{}
	}
	return func(r *imageRow) bool {
		if !shapeOK[r.shape] || (q.MaxPriceUSDHr > 0 && !(r.price <= q.MaxPriceUSDHr)) {
			return false
		}
		if rel := d.hosts[r.host].Reliability; q.MinReliability > 0 && rel != 0 && !(rel >= q.MinReliability) {
			return false // as shapeFilters: a host that states no score passes
		}
		if regionOK != nil {
			ok, seen := regionOK[r.region]
			if !seen {
				ok = regions(r.region)
				regionOK[r.region] = ok
			}
			return ok
		}
		return true
	}, nil
}

func asciiFoldEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// readShapesImage is ReadShapes over the image (in store order): the same cheapest
// offer per shape, the same plan, the same further offers, in the same order.
func readShapesImage(d *imageData, q Query, plan ShapePlanner) ([]pricing.Offer, error) {
	match, err := imageMatcher(d, q)
	if err != nil {
		return nil, err
	}
	// The first matching record of a shape is its cheapest (store order).
	pos := make([]int, len(d.shapes)) // shape -> 1 + its index in reps; 0: none yet
	reps := []pricing.Offer{}         // never nil, as from the tables
	d.each(func(r *imageRow) {
		if pos[r.shape] == 0 && match(r) {
			reps = append(reps, d.offer(r))
			pos[r.shape] = len(reps)
		}
	})
	// As the tables' further read: up to Limit of each asked shape's matching offers at
	// most MaxPrice, cheapest first, the cheapest (already in reps) left out.
	return planRounds(reps, plan, func(asked, limits []int, after []pricing.Offer, bounds []float64) ([][]pricing.Offer, error) {
		type ask struct {
			k, limit int
			maxPrice float64
			after    pricing.Offer
			past     bool // the walk is past after
		}
		kOf := make(map[int]int, len(asked))
		for k, i := range asked {
			kOf[i] = k
		}
		asks := make([]*ask, len(d.shapes))
		for sh, p := range pos {
			if k, ok := kOf[p-1]; ok && p > 0 {
				asks[sh] = &ask{k: k, limit: limits[k], maxPrice: bounds[k], after: after[k]}
			}
		}
		out := make([][]pricing.Offer, len(asked))
		d.each(func(r *imageRow) {
			a := asks[r.shape]
			if a == nil || len(out[a.k]) >= a.limit || r.price > a.maxPrice || !match(r) {
				return
			}
			o := d.offer(r)
			if !a.past {
				a.past = storeOrder(o, a.after) > 0
			}
			if a.past {
				out[a.k] = append(out[a.k], o)
			}
		})
		return out, nil
	})
}

// countByGPUImage is CountByGPUCUDA over the image.
func countByGPUImage(d *imageData, q Query, models []string) (recommend.GPUCounts, error) {
	match, err := imageMatcher(d, q)
	if err != nil {
		return nil, err
	}
	out := recommend.GPUCounts{}
	d.each(func(r *imageRow) {
		if m := d.table[d.shapes[r.shape].gpu]; slices.Contains(models, m) && match(r) {
			out.Add(m, recommend.CUDAClass(d.hosts[r.host].MaxCUDA), 1)
		}
	})
	return out, nil
}

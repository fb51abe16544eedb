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
const imageFormat = 1

// imageVersionSQL is the data version an image must carry to be current: the newest
// successful run. Every write of current offers records one in its transaction, and
// failed runs change no offer, so they leave the image current. A write by a picker
// that keeps no image (an older build) moves it, and readers fall back to the tables.
const imageVersionSQL = "SELECT coalesce(max(id), 0) FROM refresh_runs WHERE status = 'ok'"

// writeImage rebuilds the image inside tx, the write transaction that just changed the
// current offers (called last, before commit).
func writeImage(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM offers WHERE price IS NOT NULL").Scan(&n); err != nil {
		return fmt.Errorf("offers image: %w", err)
	}
	if n > imageMaxOffers {
		_, err := tx.ExecContext(ctx, "DELETE FROM offers_image")
		return err
	}
	var version int64
	if err := tx.QueryRowContext(ctx, imageVersionSQL).Scan(&version); err != nil {
		return fmt.Errorf("offers image: %w", err)
	}
	rows, err := tx.QueryContext(ctx, "SELECT shape_id, "+offerColumns+" FROM offers WHERE price IS NOT NULL")
	if err != nil {
		return fmt.Errorf("offers image: %w", err)
	}
	defer rows.Close()
	offers := make([]shapeOffer, 0, n)
	for rows.Next() {
		var so shapeOffer
		o := &so.Offer
		var seen int64
		if err := rows.Scan(&so.shape, &o.Provider, &o.Region, &o.Zone, &o.InstanceType, &o.Purchase, &o.GPUModel, &o.GPUCount,
			&o.GPUMemGiB, &o.VCPUs, &o.RAMGiB, &o.Currency, &o.Source, &o.PriceUSDHr, &seen); err != nil {
			return fmt.Errorf("offers image: %w", err)
		}
		o.ObservedAt = fromUnix(seen)
		offers = append(offers, so)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("offers image: %w", err)
	}
	slices.SortFunc(offers, func(a, b shapeOffer) int { return storeOrder(a.Offer, b.Offer) })
	_, err = tx.ExecContext(ctx, "INSERT OR REPLACE INTO offers_image (id, version, data) VALUES (1, ?, ?)", version, encodeImage(offers))
	return err
}

// encodeImage writes offers (raw facts, as stored) as: the format byte; a string table
// (uvarint count, then uvarint length and bytes each); the offer count; per offer its
// shape id, eight string-table indexes (provider, region, zone, instance type,
// purchase, GPU model, currency, source), five float64s (GPU count, GPU memory, vCPUs,
// RAM, price; little endian) and the observed time (varint unix seconds).
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
	body := make([]byte, 0, len(offers)*64)
	for _, so := range offers {
		o := &so.Offer
		body = binary.AppendUvarint(body, uint64(so.shape))
		for _, s := range []string{o.Provider, o.Region, o.Zone, o.InstanceType, string(o.Purchase), o.GPUModel, o.Currency, o.Source} {
			body = binary.AppendUvarint(body, ref(s))
		}
		for _, f := range []float64{o.GPUCount, o.GPUMemGiB, o.VCPUs, o.RAMGiB, o.PriceUSDHr} {
			body = binary.LittleEndian.AppendUint64(body, math.Float64bits(f))
		}
		body = binary.AppendVarint(body, o.ObservedAt.Unix())
	}
	out := []byte{imageFormat}
	out = binary.AppendUvarint(out, uint64(len(table)))
	for _, s := range table {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	out = binary.AppendUvarint(out, uint64(len(offers)))
	return append(out, body...)
}

var errImage = errors.New("offers image: malformed")

// imageData is a checked image: its string table and its offers, still encoded. Reads
// walk the rows and build a pricing.Offer only for those they return (a few hundred
// of a few thousand): building every one cost a cold 3k-offer recommend 0.7 ms.
type imageData struct {
	table []string
	rows  []byte // the offers, encodeImage's per-offer records
	n     int
}

// imageRow is one decoded record: its shape, string-table indexes (provider, region,
// zone, instance type, purchase, GPU model, currency, source), numbers (GPU count,
// GPU memory as stored, vCPUs, RAM, price) and observed time.
type imageRow struct {
	shape int64
	str   [8]uint64
	num   [5]float64
	seen  int64
}

const (
	rowProvider = iota
	rowRegion
	rowZone
	rowInstance
	rowPurchase
	rowGPU
	rowCurrency
	rowSource
)

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
	if n <= 0 {
		return nil, false
	}
	r.shape, b = int64(v), b[n:]
	for j := range r.str {
		v, n := binary.Uvarint(b)
		if n <= 0 || v >= uint64(len(d.table)) {
			return nil, false
		}
		r.str[j], b = v, b[n:]
	}
	if len(b) < 8*len(r.num) {
		return nil, false
	}
	for j := range r.num {
		r.num[j], b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
	}
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
	t := d.table
	return pricing.Offer{Provider: t[r.str[rowProvider]], Region: t[r.str[rowRegion]], Zone: t[r.str[rowZone]], InstanceType: t[r.str[rowInstance]],
		Purchase: pricing.Purchase(t[r.str[rowPurchase]]), GPUModel: t[r.str[rowGPU]], Currency: t[r.str[rowCurrency]], Source: t[r.str[rowSource]],
		GPUCount: r.num[0], GPUMemGiB: r.num[1], VCPUs: r.num[2], RAMGiB: r.num[3], PriceUSDHr: r.num[4], ObservedAt: fromUnix(r.seen)}.WithUsableMemory()
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
// or it is not current (the caller reads the tables). db must be the connection (or
// transaction) of the caller's other reads.
func (s *Store) image(ctx context.Context, db queryer) (img *imageData, ok bool, err error) {
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
		err = queryRow(ctx, db, "SELECT version, data "+current).Scan(&version, &data)
	} else {
		err = queryRow(ctx, db, "SELECT version, CASE WHEN version = ? THEN NULL ELSE data END "+current, c.version).Scan(&version, &data)
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

// queryRow runs a one-row query on a queryer (a *sql.Conn, *sql.Tx or *sql.DB).
func queryRow(ctx context.Context, db queryer, query string, args ...any) rowScanner {
	rows, err := db.QueryContext(ctx, query, args...)
	return rowScanner{rows, err}
}

type rowScanner struct {
	rows *sql.Rows
	err  error
}

func (r rowScanner) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

// imageMatcher is q's filters over d's records, as shapeFilters and scanShapeOffers
// apply them to the tables: the shape filters (on the memory as stored), the offer
// filters (region, price), then the VRAM filters on the usable memory. The string
// filters are decided once per string-table entry.
func imageMatcher(d *imageData, q Query) (func(*imageRow) bool, error) {
	var pur string
	if p := strings.ToLower(string(q.Purchase)); p != "" && p != "any" {
		v, err := pricing.ParsePurchase(p)
		if err != nil {
			return nil, err
		}
		pur = string(v)
	}
	// in marks the table entries a filter accepts; nil accepts everything.
	in := func(vals []string, norm func(string) string, eq func(a, b string) bool) []bool {
		if len(vals) == 0 {
			return nil
		}
		set := make([]string, len(vals))
		for i, v := range vals {
			set[i] = norm(v)
		}
		ok := make([]bool, len(d.table))
		for i, t := range d.table {
			ok[i] = slices.ContainsFunc(set, func(s string) bool { return eq(t, s) })
		}
		return ok
	}
	exact := func(a, b string) bool { return a == b }
	provs := in(q.Providers, func(v string) string { return strings.ToLower(strings.TrimSpace(v)) }, exact)
	gpus := in(q.GPUModels, normGPU, asciiFoldEqual) // COLLATE NOCASE: ASCII letters fold
	regions := in(q.Regions, strings.TrimSpace, asciiFoldEqual)
	purs := in([]string{pur}, strings.TrimSpace, exact)
	if pur == "" {
		purs = nil
	}
	// The usable memory per GPU of each (GPU model, stored memory), looked up once.
	type gpuMem struct {
		model uint64
		mem   float64
	}
	usable := map[gpuMem]float64{}
	return func(r *imageRow) bool {
		count, raw, price := r.num[0], r.num[1], r.num[4]
		switch {
		case provs != nil && !provs[r.str[rowProvider]],
			gpus != nil && !gpus[r.str[rowGPU]],
			purs != nil && !purs[r.str[rowPurchase]],
			regions != nil && !regions[r.str[rowRegion]],
			q.MaxPriceUSDHr > 0 && !(price <= q.MaxPriceUSDHr),
			q.MaxGPUs > 0 && !(count <= q.MaxGPUs),
			q.ExcludeFractional && !(count >= 1):
			return false
		}
		if q.MinVRAMGiB <= 0 && q.MinTotalVRAMGiB <= 0 {
			return true
		}
		k := gpuMem{r.str[rowGPU], raw}
		mem, ok := usable[k]
		if !ok {
			mem = pricing.Offer{GPUModel: d.table[k.model], GPUMemGiB: raw}.WithUsableMemory().GPUMemGiB
			usable[k] = mem
		}
		o := pricing.Offer{GPUCount: count, GPUMemGiB: mem}
		if q.MinVRAMGiB > 0 {
			perDevice := raw
			if count < 1 {
				perDevice *= count
			}
			if !(perDevice >= q.MinVRAMGiB) || o.MemPerDeviceGiB() < q.MinVRAMGiB {
				return false
			}
		}
		if q.MinTotalVRAMGiB > 0 && (!(count*raw >= q.MinTotalVRAMGiB) || o.TotalGPUMemGiB() < q.MinTotalVRAMGiB) {
			return false
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
	pos := map[int64]int{}    // shape -> its index in reps
	reps := []pricing.Offer{} // never nil, as from the tables
	d.each(func(r *imageRow) {
		if _, seen := pos[r.shape]; !seen && match(r) {
			pos[r.shape] = len(reps)
			reps = append(reps, d.offer(r))
		}
	})
	needs, err := plan(reps)
	if err != nil {
		return nil, err
	}
	type ask struct {
		limit, taken int
		maxPrice     float64
	}
	asks := map[int64]*ask{}
	for sh, i := range pos {
		if i < len(needs) && needs[i].Limit > 1 {
			maxPrice := needs[i].MaxPrice
			if maxPrice <= 0 || math.IsInf(maxPrice, 1) {
				maxPrice = math.MaxFloat64
			}
			asks[sh] = &ask{limit: needs[i].Limit, maxPrice: maxPrice}
		}
	}
	out := reps
	if len(asks) > 0 {
		// As the tables' further read: up to limit of the shape's matching offers at
		// most maxPrice, cheapest first, the cheapest (already in reps) left out.
		d.each(func(r *imageRow) {
			a := asks[r.shape]
			if a == nil || a.taken >= a.limit || r.num[4] > a.maxPrice || !match(r) {
				return
			}
			if a.taken++; a.taken > 1 {
				out = append(out, d.offer(r))
			}
		})
	}
	if len(out) > len(reps) {
		out = slices.Clone(out)
		slices.SortFunc(out, storeOrder)
	}
	return out, nil
}

// countByGPUImage is CountByGPU over the image.
func countByGPUImage(d *imageData, q Query, models []string) (map[string]int, error) {
	match, err := imageMatcher(d, q)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	d.each(func(r *imageRow) {
		if m := d.table[r.str[rowGPU]]; slices.Contains(models, m) && match(r) {
			out[m]++
		}
	})
	return out, nil
}

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

// imageOffer is an offer of the image: as the tables' reads return it (usable memory
// applied), with its shape and the memory as stored, which the VRAM filters of a
// shape also test (shapeFilters).
type imageOffer struct {
	shapeOffer
	rawMemGiB float64
}

// decodeImage reads encodeImage's format. Any inconsistency is errImage: the caller
// then reads the tables.
func decodeImage(b []byte) ([]imageOffer, error) {
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
	table := make([]string, nt)
	for i := range table {
		l, ok := uv()
		if !ok || l > uint64(len(b)) {
			return nil, errImage
		}
		table[i], b = string(b[:l]), b[l:]
	}
	no, ok := uv()
	if !ok || no > uint64(len(b)) {
		return nil, errImage
	}
	out := make([]imageOffer, no)
	// The usable memory of each (GPU model, memory) pair, looked up once: LookupGPU
	// folds the name on every call.
	type gpuMem struct {
		model string
		mem   float64
	}
	usable := map[gpuMem]pricing.Offer{}
	var strs [8]string
	var nums [5]float64
	for i := range out {
		shape, ok := uv()
		if !ok {
			return nil, errImage
		}
		for j := range strs {
			k, ok := uv()
			if !ok || k >= nt {
				return nil, errImage
			}
			strs[j] = table[k]
		}
		if len(b) < 8*len(nums) {
			return nil, errImage
		}
		for j := range nums {
			nums[j] = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		}
		seen, n := binary.Varint(b)
		if n <= 0 {
			return nil, errImage
		}
		b = b[n:]
		o := pricing.Offer{Provider: strs[0], Region: strs[1], Zone: strs[2], InstanceType: strs[3], Purchase: pricing.Purchase(strs[4]),
			GPUModel: strs[5], Currency: strs[6], Source: strs[7],
			GPUCount: nums[0], GPUMemGiB: nums[1], VCPUs: nums[2], RAMGiB: nums[3], PriceUSDHr: nums[4], ObservedAt: fromUnix(seen)}
		k := gpuMem{o.GPUModel, o.GPUMemGiB}
		u, ok := usable[k]
		if !ok {
			u = pricing.Offer{GPUModel: o.GPUModel, GPUMemGiB: o.GPUMemGiB}.WithUsableMemory()
			usable[k] = u
		}
		o.GPUMemGiB, o.GPUMemReportedGiB = u.GPUMemGiB, u.GPUMemReportedGiB
		out[i] = imageOffer{shapeOffer{int64(shape), o}, nums[1]}
	}
	if len(b) != 0 {
		return nil, errImage
	}
	return out, nil
}

// imageCache keeps the decoded image of one data version, so the reads of one
// command (ReadShapes, then CountByGPU) and a daemon's requests decode it once.
type imageCache struct {
	mu      sync.Mutex
	version int64
	offers  []imageOffer // read-only once stored
}

// UseImage turns reading the offers image on (the default) or off, so that reads go to
// the tables: the tests compare both paths, and it helps when debugging a read.
func (s *Store) UseImage(on bool) { s.noImage = !on }

// image returns the current offers from the image, with ok false when there is none
// or it is not current (the caller reads the tables). db must be the connection (or
// transaction) of the caller's other reads.
func (s *Store) image(ctx context.Context, db queryer) (offers []imageOffer, ok bool, err error) {
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
	if c.offers == nil {
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
	if c.offers != nil && c.version == version {
		return c.offers, true, nil
	}
	offers, err = decodeImage(data)
	if err != nil {
		return nil, false, nil // unreadable: the tables answer
	}
	c.version, c.offers = version, offers
	return offers, true, nil
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

// imageMatcher is q's filters over image offers, as shapeFilters and scanShapeOffers
// apply them to the tables: the shape filters (on the stored memory), the offer
// filters (region, price), then the VRAM filters on the usable memory.
func imageMatcher(q Query) (func(*imageOffer) bool, error) {
	lower := func(vs []string, f func(string) string) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = f(v)
		}
		return out
	}
	provs := lower(q.Providers, func(v string) string { return strings.ToLower(strings.TrimSpace(v)) })
	gpus := lower(q.GPUModels, normGPU)
	regions := lower(q.Regions, strings.TrimSpace)
	var pur pricing.Purchase
	if p := strings.ToLower(string(q.Purchase)); p != "" && p != "any" {
		var err error
		if pur, err = pricing.ParsePurchase(p); err != nil {
			return nil, err
		}
	}
	// foldIn is SQLite's COLLATE NOCASE membership: ASCII letters fold, nothing else.
	foldIn := func(v string, set []string) bool {
		return slices.ContainsFunc(set, func(s string) bool { return asciiFoldEqual(v, s) })
	}
	return func(io *imageOffer) bool {
		o := &io.Offer
		switch {
		case len(provs) > 0 && !slices.Contains(provs, o.Provider),
			len(gpus) > 0 && !foldIn(o.GPUModel, gpus),
			pur != "" && o.Purchase != pur,
			len(regions) > 0 && !foldIn(o.Region, regions),
			q.MaxPriceUSDHr > 0 && !(o.PriceUSDHr <= q.MaxPriceUSDHr),
			q.MaxGPUs > 0 && !(o.GPUCount <= q.MaxGPUs),
			q.ExcludeFractional && !(o.GPUCount >= 1):
			return false
		}
		if q.MinVRAMGiB > 0 {
			raw := io.rawMemGiB
			if o.GPUCount < 1 {
				raw *= o.GPUCount
			}
			if !(raw >= q.MinVRAMGiB) || o.MemPerDeviceGiB() < q.MinVRAMGiB {
				return false
			}
		}
		if q.MinTotalVRAMGiB > 0 && (!(o.GPUCount*io.rawMemGiB >= q.MinTotalVRAMGiB) || o.TotalGPUMemGiB() < q.MinTotalVRAMGiB) {
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
func readShapesImage(img []imageOffer, q Query, plan ShapePlanner) ([]pricing.Offer, error) {
	match, err := imageMatcher(q)
	if err != nil {
		return nil, err
	}
	byShape := map[int64][]int{} // shape -> its matching offers' indexes, cheapest first
	var order []int64            // shapes by their cheapest offer, in store order
	for i := range img {
		if !match(&img[i]) {
			continue
		}
		sh := img[i].shape
		if _, seen := byShape[sh]; !seen {
			order = append(order, sh)
		}
		byShape[sh] = append(byShape[sh], i)
	}
	reps := make([]pricing.Offer, len(order))
	for i, sh := range order {
		reps[i] = img[byShape[sh][0]].Offer
	}
	needs, err := plan(reps)
	if err != nil {
		return nil, err
	}
	out := reps
	for i, n := range needs {
		if n.Limit <= 1 {
			continue
		}
		maxPrice := n.MaxPrice
		if maxPrice <= 0 || math.IsInf(maxPrice, 1) {
			maxPrice = math.MaxFloat64
		}
		idx := byShape[order[i]]
		for _, j := range idx[1:min(n.Limit, len(idx))] {
			if img[j].PriceUSDHr > maxPrice {
				break
			}
			out = append(out, img[j].Offer)
		}
	}
	if len(out) > len(reps) {
		out = slices.Clone(out)
		slices.SortFunc(out, storeOrder)
	}
	return out, nil
}

// countByGPUImage is CountByGPU over the image.
func countByGPUImage(img []imageOffer, q Query, models []string) (map[string]int, error) {
	match, err := imageMatcher(q)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for i := range img {
		if slices.Contains(models, img[i].GPUModel) && match(&img[i]) {
			out[img[i].GPUModel]++
		}
	}
	return out, nil
}

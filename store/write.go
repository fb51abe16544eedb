package store

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pickergpu/picker/pricing"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// WriteInput is one successful refresh of a provider.
type WriteInput struct {
	// Offers is everything the refresh found; all must be of the provider written.
	Offers []pricing.Offer
	// Regions the refresh covered completely. The provider's offers missing from
	// Offers are closed only in these regions, so a refresh that skipped or lost a
	// region leaves that region's last good prices current. Nil means every region;
	// an empty non-nil slice closes nothing.
	Regions []string
	// Started and Finished time the refresh. Finished is the refresh time: offers no
	// longer listed are closed then, and offers without an ObservedAt are observed
	// then. A zero Finished means now; a zero Started means Finished.
	Started, Finished time.Time
}

// WriteResult says what a write changed.
type WriteResult struct {
	Provider  string
	RunID     int64 // the refresh_runs row written in the same transaction
	Seen      int   // offers in the snapshot
	New       int   // offers never stored before
	Changed   int   // offers whose price changed (old interval closed, new one opened)
	Reopened  int   // closed offers listed again
	Unchanged int   // same price: only last_seen and the facts were updated
	Closed    int   // offers no longer listed (in the covered regions), now closed
}

// PricesChanged is the number of price intervals opened: new, changed and reopened
// offers. An unchanged snapshot rewritten gives 0.
func (r WriteResult) PricesChanged() int { return r.New + r.Changed + r.Reopened }

// ProviderWrite pairs a provider with its refresh, for WriteSnapshots.
type ProviderWrite struct {
	Provider string
	Input    WriteInput
}

// WriteSnapshot stores one provider's successful refresh as one transaction (the
// price intervals and the refresh run row together), so readers see the previous
// snapshot or this one, never a mix; any error rolls everything back and leaves the
// previous snapshot current.
//
// For each offer: a new one is inserted with an open price interval starting at its
// ObservedAt; a changed price (compared rounded to 1e-6 USD, so float noise from
// unit conversions is not a change) closes the open interval and opens a new one at
// the offer's ObservedAt, so intervals tile without gaps or overlaps; an unchanged
// price writes no price row and only moves last_seen forward and refreshes the facts;
// a closed offer listed again is reopened with a new interval. Offers of the provider
// that the snapshot no longer lists (within Regions, when set) are closed at the
// refresh time: their interval ends and their current price becomes NULL; nothing is
// deleted.
//
// An empty snapshot is refused (Invalid): providers report "no prices" as a failure,
// and writing it would close every offer.
func (s *Store) WriteSnapshot(ctx context.Context, provider string, snap WriteInput) (WriteResult, error) {
	res, err := s.WriteSnapshots(ctx, []ProviderWrite{{Provider: provider, Input: snap}})
	if err != nil {
		return WriteResult{Provider: provider}, err
	}
	return res[0], nil
}

// WriteSnapshots writes several providers' refreshes in ONE transaction, each as
// WriteSnapshot would: all land or none does. Seeding the embedded snapshot (refresh.EnsureSeeded) uses it so
// that a crash during the first run cannot leave a half-seeded database that looks
// seeded.
func (s *Store) WriteSnapshots(ctx context.Context, writes []ProviderWrite) ([]WriteResult, error) {
	res, _, err := s.writeSnapshots(ctx, sources(writes), false)
	return res, err
}

// sources are the writes' offers as offerSources.
func sources(writes []ProviderWrite) []providerSource {
	out := make([]providerSource, len(writes))
	for i, w := range writes {
		out[i] = providerSource{w.Provider, sliceSource(w.Input.Offers), w.Input}
	}
	return out
}

// WriteSnapshotsIfEmpty is WriteSnapshots on an empty database only (no offers and no
// runs), checked inside the same write transaction, so two processes starting on a
// fresh database seed it once. wrote is false when the database was not empty.
func (s *Store) WriteSnapshotsIfEmpty(ctx context.Context, writes []ProviderWrite) (res []WriteResult, wrote bool, err error) {
	return s.writeSnapshots(ctx, sources(writes), true)
}

func (s *Store) writeSnapshots(ctx context.Context, writes []providerSource, onlyIfEmpty bool) ([]WriteResult, bool, error) {
	for _, w := range writes {
		if w.provider == "" {
			return nil, false, pricing.Errorf(pricing.Invalid, "write snapshot: provider name is empty")
		}
		if w.src.count() == 0 {
			return nil, false, pricing.Errorf(pricing.Invalid, "write %s snapshot: no offers (refusing to close every offer of the provider)", w.provider)
		}
	}
	tx, release, err := s.beginWrite(ctx, "begin write")
	if err != nil {
		return nil, false, err
	}
	defer release()
	defer tx.Rollback() // no-op after Commit
	if onlyIfEmpty {
		empty, err := isEmpty(ctx, tx)
		if err != nil {
			return nil, false, s.dbError("check empty", err)
		}
		if !empty {
			return nil, false, nil
		}
	}
	// No write enlarges the page cache (a 16 MiB cache for large writes held a refresh of
	// 90k stored offers at 111-116 MiB peak RSS, 92-94 MiB without; and made no
	// difference in time once first refreshes rebuild the indexes (dropForBulk):
	// BenchmarkRefresh90k unchanged, 1pct and all within noise either way, issue 17).
	st, err := prepareWrite(ctx, tx)
	if err != nil {
		return nil, false, s.dbError("prepare write", err)
	}
	defer st.close()
	results := make([]WriteResult, 0, len(writes))
	for _, w := range writes {
		r, err := s.writeOne(ctx, tx, st, w)
		if err != nil {
			return nil, false, err
		}
		results = append(results, r)
	}
	// The image's version: the run this transaction recorded last, the newest one.
	if err := writeImage(ctx, tx, results[len(results)-1].RunID); err != nil {
		return nil, false, s.dbError("write offers image", err)
	}
	if err := writeFactsImage(ctx, tx, results[len(results)-1].RunID); err != nil { // facts.go
		return nil, false, s.dbError("write facts image", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, false, s.dbError("commit write", err)
	}
	return results, true, nil
}

// defaultCacheKiB is SQLite's default page cache, 2,000 KiB
// (https://www.sqlite.org/pragma.html#pragma_cache_size), which every write keeps.
const defaultCacheKiB = 2000

// writeStmts are prepared once per transaction: a 10k-offer snapshot runs each
// statement thousands of times.
type writeStmts struct {
	insertOffer, updateOffer, touchOffer, closeOffer *sql.Stmt
	insertOffers                                     *sql.Stmt // insertBatch rows
	openPrice, closePrice, insertShape               *sql.Stmt
	// shapes maps every stored shape to its id, read at the first need.
	shapes map[pricing.Shape]int64
}

// shapeID returns the id of o's shape, inserting the shape when new.
func (st *writeStmts) shapeID(ctx context.Context, tx *sql.Tx, o *pricing.Offer) (int64, error) {
	if st.shapes == nil {
		st.shapes = map[pricing.Shape]int64{}
		rows, err := tx.QueryContext(ctx, `SELECT id, provider, instance_type, purchase, gpu_model, gpu_count, gpu_mem_gib, vcpus, ram_gib FROM shapes`)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var sh pricing.Shape
			if err := rows.Scan(&id, &sh.Provider, &sh.InstanceType, &sh.Purchase, &sh.GPUModel, &sh.GPUCount, &sh.GPUMemGiB, &sh.VCPUs, &sh.RAMGiB); err != nil {
				return 0, err
			}
			st.shapes[sh] = id
		}
		if err := rows.Err(); err != nil {
			return 0, err
		}
	}
	sh := o.Shape()
	if id, ok := st.shapes[sh]; ok {
		return id, nil
	}
	var id int64
	err := st.insertShape.QueryRowContext(ctx, sh.Provider, sh.InstanceType, string(sh.Purchase), sh.GPUModel, sh.GPUCount, sh.GPUMemGiB, sh.VCPUs, sh.RAMGiB).Scan(&id)
	if err != nil {
		return 0, err
	}
	st.shapes[sh] = id
	return id, nil
}

func prepareWrite(ctx context.Context, tx *sql.Tx) (*writeStmts, error) {
	var st writeStmts
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&st.insertOffer, insertOffers(1)},
		{&st.insertOffers, insertOffers(insertBatch)},
		// Facts are refreshed on every listing: a better normalisation table or a
		// corrected spec should not wait for a price change to show.
		{&st.updateOffer, `UPDATE offers SET gpu_model = ?, gpu_count = ?, gpu_mem_gib = ?, vcpus = ?, ram_gib = ?,
			currency = ?, source = ?, shape_id = ?, ` + hostSet + `, price = ?, last_seen = ? WHERE id = ?`},
		{&st.touchOffer, `UPDATE offers SET gpu_model = ?, gpu_count = ?, gpu_mem_gib = ?, vcpus = ?, ram_gib = ?,
			currency = ?, source = ?, shape_id = ?, ` + hostSet + `, last_seen = max(last_seen, ?) WHERE id = ?`},
		{&st.insertShape, `INSERT INTO shapes (provider, instance_type, purchase, gpu_model, gpu_count, gpu_mem_gib, vcpus, ram_gib)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`},
		{&st.closeOffer, `UPDATE offers SET price = NULL WHERE id = ?`},
		{&st.openPrice, `INSERT INTO prices (offer_id, price, valid_from) VALUES (?, ?, ?)`},
		// max(): an interval never ends before it began, even if a source's date is
		// older than the stored one.
		{&st.closePrice, `UPDATE prices SET valid_to = max(?, valid_from) WHERE offer_id = ? AND valid_to IS NULL RETURNING valid_to`},
	} {
		s, err := tx.PrepareContext(ctx, p.query)
		if err != nil {
			st.close()
			return nil, err
		}
		*p.dst = s
	}
	return &st, nil
}

func (st *writeStmts) close() {
	for _, s := range []*sql.Stmt{st.insertOffer, st.insertOffers, st.updateOffer, st.touchOffer, st.closeOffer, st.openPrice, st.closePrice, st.insertShape} {
		if s != nil {
			s.Close()
		}
	}
}

type storedOffer struct {
	id       int64
	region   string
	price    sql.NullFloat64
	facts    offerFacts
	lastSeen int64
	seen     bool
}

// offerFacts are the stored columns a refresh overwrites besides the price and
// last_seen; an offer whose facts and price are unchanged is not rewritten.
type offerFacts struct {
	currency, source string
	shape            int64 // the GPU and instance facts (pricing.Shape)
	host             pricing.Host
}

// regionListing is what a snapshot says of one region: whether every offer it lists
// there was observed at one time (when it covers the region), and that time.
type regionListing struct {
	observed int64
	uniform  bool
}

// priceKey rounds to a millionth of a dollar: prices that differ by less are the
// same price, whatever float noise a conversion added.
func priceKey(p float64) int64 { return int64(math.Round(p * 1e6)) }

func (s *Store) writeOne(ctx context.Context, tx *sql.Tx, st *writeStmts, w providerSource) (WriteResult, error) {
	provider, in := w.provider, w.in
	res := WriteResult{Provider: provider, Seen: w.src.count()}
	finished := in.Finished
	if finished.IsZero() {
		finished = time.Now()
	}
	started := in.Started
	if started.IsZero() {
		started = finished
	}
	at := unix(finished)

	stored, err := s.readStored(ctx, tx, provider)
	if err != nil {
		return res, err
	}
	listed, err := s.prepareSeen(ctx, tx, provider, in.Regions, w.src.listings(), at, stored)
	if err != nil {
		return res, err
	}
	// Offers the provider has not stored are new: a first refresh rebuilds the indexes
	// from the start; a refresh that turns out to change most prices, after 1,024.
	bulk, err := newBulkIndexes(ctx, tx)
	if err == nil {
		err = bulk.consider(ctx, tx, w.src.count()-len(stored))
	}
	if err != nil {
		return res, s.dbError("write "+provider+" snapshot: drop indexes", err)
	}

	// New offers get ids above every stored one (bulk.rows is max(id)): their price
	// intervals open in one statement once they are all inserted.
	newAbove := bulk.rows
	ins := &newOffers{st: st, provider: provider, errf: s.dbError}
	i := 0
	err = w.src.each(ctx, func(o *pricing.Offer) error {
		if i%512 == 0 {
			if err := ctx.Err(); err != nil {
				return s.dbError("write "+provider+" snapshot", err)
			}
			if written := res.New + res.Changed + res.Reopened; i > 0 && written >= 1024 {
				if err := bulk.consider(ctx, tx, written*(res.Seen-i)/i); err != nil {
					return s.dbError("write "+provider+" snapshot: drop indexes", err)
				}
			}
		}
		i++
		// Checked here, not up front, so a bad offer mid-batch exercises the
		// rollback the tests rely on.
		if o.Provider != provider {
			return pricing.Errorf(pricing.Invalid, "write %s snapshot: offer %s belongs to provider %q", provider, o.Key(), o.Provider)
		}
		if err := o.Validate(); err != nil {
			return pricing.Errorf(pricing.Invalid, "write %s snapshot: %w", provider, err)
		}
		observed := at
		if !o.ObservedAt.IsZero() {
			observed = unix(o.ObservedAt)
		}
		k := o.Key()
		so := stored[k]
		if so != nil && so.seen {
			return listedTwice(provider, k)
		}
		shape, err := st.shapeID(ctx, tx, o)
		if err != nil {
			return s.dbError("write "+provider+" offer "+k.String(), err)
		}
		facts := append([]any{o.GPUModel, o.GPUCount, o.GPUMemGiB, o.VCPUs, o.RAMGiB, o.Currency, o.Source, shape}, hostArgs(o.Host)...)
		switch {
		case so == nil:
			// A new offer is not remembered (90k keys on a first refresh, issue 17): a
			// second listing of it fails the offers table's UNIQUE key instead. Its
			// price interval is opened with every other new offer's after the loop.
			if err := ins.add(ctx, o, observed, shape); err != nil {
				return err
			}
			res.New++
		case !so.price.Valid:
			_, err = st.openPrice.ExecContext(ctx, so.id, o.PriceUSDHr, observed)
			if err == nil {
				_, err = st.updateOffer.ExecContext(ctx, append(facts, o.PriceUSDHr, observed, so.id)...)
			}
			res.Reopened++
		case priceKey(so.price.Float64) != priceKey(o.PriceUSDHr):
			// The old price held until the new one was observed: close and open at the
			// same instant (clamped so the old interval never ends before it began).
			var closedAt int64
			err = st.closePrice.QueryRowContext(ctx, observed, so.id).Scan(&closedAt)
			if err == nil {
				_, err = st.openPrice.ExecContext(ctx, so.id, o.PriceUSDHr, closedAt)
			}
			if err == nil {
				_, err = st.updateOffer.ExecContext(ctx, append(facts, o.PriceUSDHr, closedAt, so.id)...)
			}
			res.Changed++
		default:
			// Same price: nothing to write when the facts are the same and the observed
			// time is already stored, or the region's seen row will carry it.
			f := offerFacts{o.Currency, o.Source, shape, o.Host}
			if f != so.facts || (observed > so.lastSeen && !listed[o.Region].uniform) {
				_, err = st.touchOffer.ExecContext(ctx, append(facts, observed, so.id)...)
			}
			res.Unchanged++
		}
		if err != nil {
			return s.dbError("write "+provider+" offer "+k.String(), err)
		}
		if so != nil {
			so.seen = true
		}
		return nil
	})
	if err == nil {
		err = ins.flush(ctx)
	}
	if err != nil {
		return res, err
	}
	if res.New > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO prices (offer_id, price, valid_from) SELECT id, price, last_seen FROM offers WHERE id > ?`, newAbove); err != nil {
			return res, s.dbError("write "+provider+" snapshot: open new offers' prices", err)
		}
	}

	for k, so := range stored {
		if so.seen || !so.price.Valid || (in.Regions != nil && !slices.Contains(in.Regions, so.region)) {
			continue
		}
		var closedAt int64
		err := st.closePrice.QueryRowContext(ctx, at, so.id).Scan(&closedAt)
		if err == nil {
			_, err = st.closeOffer.ExecContext(ctx, so.id)
		}
		if err != nil {
			return res, s.dbError("close "+provider+" offer "+k.String(), err)
		}
		res.Closed++
	}

	if err := bulk.rebuild(ctx, tx); err != nil {
		return res, s.dbError("write "+provider+" snapshot: rebuild indexes", err)
	}
	if err := refreshCheapest(ctx, tx, provider); err != nil {
		return res, s.dbError("record "+provider+" cheapest offers", err)
	}
	if err := classifyFacts(ctx, tx, provider); err != nil { // facts.go
		return res, s.dbError("record "+provider+" fit-fact sets", err)
	}
	for region, l := range listed {
		if !l.uniform {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO seen (provider, region, last_seen) VALUES (?, ?, ?)
			ON CONFLICT (provider, region) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen)`, provider, region, l.observed); err != nil {
			return res, s.dbError("record "+provider+" "+region+" listing", err)
		}
	}

	err = tx.QueryRowContext(ctx, `INSERT INTO refresh_runs (provider, started, finished, status, offers_seen, prices_changed, offers_closed)
		VALUES (?, ?, ?, 'ok', ?, ?, ?) RETURNING id`,
		provider, unix(started), at, res.Seen, res.PricesChanged(), res.Closed).Scan(&res.RunID)
	if err != nil {
		return res, s.dbError("record "+provider+" refresh", err)
	}
	return res, nil
}

// insertBatch is how many new offers one INSERT writes: per-statement overhead (the
// driver's and database/sql's, a few microseconds a call) was a tenth of a 90k-offer
// first refresh's CPU with one offer a statement (issue 17). 15 columns × 64 rows stays
// far below SQLite's 32,766 bound parameters (22 columns x 64 rows).
const insertBatch = 64

// offerColumnsIn are the columns a new offer's row is inserted with, in insertArgs' order.
const offerColumnsIn = `provider, region, zone, instance_type, purchase, gpu_model, gpu_count,
	gpu_mem_gib, vcpus, ram_gib, currency, source, price, last_seen, shape_id, ` + hostColumns

// insertOffers is the INSERT of n new offers.
func insertOffers(n int) string {
	row := "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " + strings.TrimSuffix(strings.Repeat("?, ", hostFields), ", ") + ")"
	return "INSERT INTO offers (" + offerColumnsIn + ") VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// newOffers batches a write's new offers into insertBatch-row INSERTs.
type newOffers struct {
	st       *writeStmts
	provider string
	errf     func(op string, err error) error
	args     []any
	keys     []pricing.Key
}

func (n *newOffers) add(ctx context.Context, o *pricing.Offer, observed, shape int64) error {
	n.args = append(n.args, o.Provider, o.Region, o.Zone, o.InstanceType, string(o.Purchase),
		o.GPUModel, o.GPUCount, o.GPUMemGiB, o.VCPUs, o.RAMGiB, o.Currency, o.Source, o.PriceUSDHr, observed, shape)
	n.args = append(n.args, hostArgs(o.Host)...)
	n.keys = append(n.keys, o.Key())
	if len(n.keys) == insertBatch {
		return n.flush(ctx)
	}
	return nil
}

// flush inserts the pending offers. When the batch breaks the offers' UNIQUE key (an
// offer listed twice), its rows are inserted one by one to name the offer.
func (n *newOffers) flush(ctx context.Context) error {
	if len(n.keys) == 0 {
		return nil
	}
	defer func() { n.args, n.keys = n.args[:0], n.keys[:0] }()
	stmt := n.st.insertOffers
	if len(n.keys) < insertBatch {
		stmt = nil
	}
	var err error
	if stmt != nil {
		_, err = stmt.ExecContext(ctx, n.args...)
	}
	if stmt == nil || sqliteExtCode(err) == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
		// A failed statement changed nothing: its rows go again, one by one.
		per := len(n.args) / len(n.keys)
		for i, k := range n.keys {
			_, err = n.st.insertOffer.ExecContext(ctx, n.args[i*per:(i+1)*per]...)
			if sqliteExtCode(err) == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
				return listedTwice(n.provider, k)
			}
			if err != nil {
				return n.errf("write "+n.provider+" offer "+k.String(), err)
			}
		}
		return nil
	}
	return n.errf("write "+n.provider+" offers", err)
}

// listedTwice is the error of a snapshot that lists an offer twice.
func listedTwice(provider string, k pricing.Key) error {
	return pricing.Errorf(pricing.Invalid, "write %s snapshot: offer %s listed twice", provider, k)
}

// readStored reads what the store holds of provider's offers, current or closed.
func (s *Store) readStored(ctx context.Context, tx *sql.Tx, provider string) (map[pricing.Key]*storedOffer, error) {
	stored := map[pricing.Key]*storedOffer{}
	strs := map[string]string{}
	// Strings are scanned as RawBytes and interned: regions, zones, instance types and
	// sources repeat across 100k offers, so this map (the refresh's largest) holds one
	// copy of each and the scan allocates none for the repeats.
	str := func(b sql.RawBytes) string {
		if v, ok := strs[string(b)]; ok {
			return v
		}
		v := string(b)
		strs[v] = v
		return v
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, region, zone, instance_type, purchase, price, currency, source,
		coalesce(shape_id, 0), last_seen, `+hostColumns+` FROM offers WHERE provider = ?`, provider)
	if err != nil {
		return nil, s.dbError("read "+provider+" offers", err)
	}
	defer rows.Close()
	var region, zone, typ, purchase, currency, source, driver sql.RawBytes
	for rows.Next() {
		so := &storedOffer{}
		h := &so.facts.host
		if err := rows.Scan(&so.id, &region, &zone, &typ, &purchase, &so.price, &currency, &source, &so.facts.shape, &so.lastSeen,
			&h.Reliability, &h.MaxCUDA, &driver, &h.NetUpMbps, &h.NetDownMbps, &h.DiskGB, &h.Verification); err != nil {
			return nil, s.dbError("read "+provider+" offers", err)
		}
		k := pricing.Key{Provider: provider, Region: str(region), Zone: str(zone), InstanceType: str(typ), Purchase: pricing.Purchase(str(purchase))}
		so.region, so.facts.currency, so.facts.source, h.Driver = k.Region, str(currency), str(source), str(driver)
		stored[k] = so
	}
	return stored, s.dbError("read "+provider+" offers", rows.Err())
}

// refreshCheapest copies the cheapest current offer of each of provider's shapes into
// its shapes row (0004_shape_cheapest.sql): one probe of offers_current_shape per shape.
// Only rows whose copy differs are written: a marketplace has a shape per offer, and a
// refresh that moves 10 % of 30k prices should not rewrite 30k shapes rows.
func refreshCheapest(ctx context.Context, tx *sql.Tx, provider string) error {
	cheapest := `(SELECT price, region, zone, currency, source, last_seen FROM offers WHERE id = (
			SELECT id FROM offers INDEXED BY offers_current_shape WHERE shape_id = shapes.id AND price IS NOT NULL
			ORDER BY price, region, zone LIMIT 1))`
	_, err := tx.ExecContext(ctx, `UPDATE shapes SET (c_price, c_region, c_zone, c_currency, c_source, c_last_seen) = `+cheapest+`
		WHERE provider = ? AND (c_price, c_region, c_zone, c_currency, c_source, c_last_seen) IS NOT `+cheapest, provider)
	return err
}

// prepareSeen decides, per region the snapshot lists, whether the seen table can carry
// its observed time (see 0003_shapes.sql): the snapshot covers the region (regions, nil
// for all) and observed every offer it lists there at one time, no earlier than the
// region's seen row. Where it cannot but a seen row exists, that row's time is first
// written into the region's current offers and the row dropped, so an offer's observed
// time stays exactly the newest time it was listed at.
func (s *Store) prepareSeen(ctx context.Context, tx *sql.Tx, provider string, regions []string, obs map[string]*obsListing, at int64, stored map[pricing.Key]*storedOffer) (map[string]regionListing, error) {
	listed := make(map[string]regionListing, len(obs))
	for region, o := range obs {
		observed, uniform := o.resolve(at)
		listed[region] = regionListing{observed: observed, uniform: uniform && (regions == nil || slices.Contains(regions, region))}
	}
	rows, err := tx.QueryContext(ctx, `SELECT region, last_seen FROM seen WHERE provider = ?`, provider)
	if err != nil {
		return nil, s.dbError("read "+provider+" listings", err)
	}
	seen := map[string]int64{}
	for rows.Next() {
		var region string
		var t int64
		if err := rows.Scan(&region, &t); err != nil {
			rows.Close()
			return nil, s.dbError("read "+provider+" listings", err)
		}
		seen[region] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.dbError("read "+provider+" listings", err)
	}
	for region, t := range seen {
		l, ok := listed[region]
		if !ok || (l.uniform && l.observed >= t) {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE offers SET last_seen = max(last_seen, ?) WHERE provider = ? AND region = ? AND price IS NOT NULL`,
			t, provider, region); err == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM seen WHERE provider = ? AND region = ?`, provider, region)
		}
		if err != nil {
			return nil, s.dbError("write "+provider+" "+region+" listing", err)
		}
		for _, so := range stored {
			if so.region == region && so.price.Valid {
				so.lastSeen = max(so.lastSeen, t)
			}
		}
	}
	return listed, nil
}

// RecordFailure records a failed refresh of provider: only its run row (with the
// error) is written, so the provider's last good prices stay current and `picker
// providers` can show the error and count consecutive failures.
func (s *Store) RecordFailure(ctx context.Context, provider string, started, finished time.Time, failure error) error {
	if provider == "" {
		return pricing.Errorf(pricing.Invalid, "record failure: provider name is empty")
	}
	if finished.IsZero() {
		finished = time.Now()
	}
	if started.IsZero() {
		started = finished
	}
	msg := "unknown error"
	if failure != nil {
		msg = failure.Error()
	}
	tx, release, err := s.beginWrite(ctx, "record "+provider+" failure")
	if err != nil {
		return err
	}
	defer release()
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO refresh_runs (provider, started, finished, status, error) VALUES (?, ?, ?, 'failed', ?)`,
		provider, unix(started), unix(finished), msg); err != nil {
		return s.dbError("record "+provider+" failure", err)
	}
	return s.dbError("record "+provider+" failure", tx.Commit())
}

// Prune deletes closed price intervals that ended before olderThan, then closed offers
// left with no price rows, then refresh runs that finished before olderThan (keeping
// each provider's newest run and newest success), in one transaction. Current prices are never pruned. It
// returns the number of price intervals deleted. The daemon runs it nightly with
// `[store] keep_history`.
func (s *Store) Prune(ctx context.Context, olderThan time.Time) (int64, error) {
	tx, release, err := s.beginWrite(ctx, "prune")
	if err != nil {
		return 0, err
	}
	defer release()
	defer tx.Rollback()
	r, err := tx.ExecContext(ctx, `DELETE FROM prices WHERE valid_to IS NOT NULL AND valid_to < ?`, unix(olderThan))
	if err != nil {
		return 0, s.dbError("prune prices", err)
	}
	n, _ := r.RowsAffected()
	if _, err := tx.ExecContext(ctx, `DELETE FROM offers WHERE price IS NULL
		AND NOT EXISTS (SELECT 1 FROM prices WHERE prices.offer_id = offers.id)`); err != nil {
		return 0, s.dbError("prune offers", err)
	}
	// Shapes no offer has any more (one pass over offers, not one per shape).
	if _, err := tx.ExecContext(ctx, `DELETE FROM shapes WHERE id NOT IN (SELECT shape_id FROM offers WHERE shape_id IS NOT NULL)`); err != nil {
		return 0, s.dbError("prune shapes", err)
	}
	// refresh_runs go with the history, except each provider's newest run and newest
	// success: `picker providers` and the daemon's start-up (is a refresh due?) read them.
	if _, err := tx.ExecContext(ctx, `DELETE FROM refresh_runs WHERE finished < ?
		AND id NOT IN (SELECT max(id) FROM refresh_runs GROUP BY provider)
		AND id NOT IN (SELECT max(id) FROM refresh_runs WHERE status = 'ok' GROUP BY provider)`, unix(olderThan)); err != nil {
		return 0, s.dbError("prune refresh runs", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, s.dbError("prune", err)
	}
	return n, nil
}

// sqliteExtCode returns the extended SQLite result code in err's chain, 0 when none.
func sqliteExtCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

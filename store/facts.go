package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"

	"github.com/pickergpu/picker/pricing"
	"github.com/pickergpu/picker/recommend"
)

// Fit-fact sets (0009_offer_facts.sql): shapes grouped by recommend.FactsKey, the facts
// recommend judges an offer by. Every write classifies the shapes it made and keeps each
// set's cheapest current offer; ReadShapes reads by set when the sets are the current
// rules' (factsReady), so a catalogue where every offer is its own shape (a marketplace)
// costs a recommend a few thousand rows, not one per offer.

// classifyFacts runs at the end of each provider's write, in its transaction: under
// other rules (or none yet) every shape is reclassified; then every shape without a
// class gets one, every current offer without a set takes its class's set for its CUDA
// ceiling (new sets inserted), and the provider's sets (all, after a reclassification)
// record their cheapest current offer.
func classifyFacts(ctx context.Context, tx *sql.Tx, provider string) error {
	var have sql.NullString
	if err := tx.QueryRowContext(ctx, "SELECT version FROM facts_meta").Scan(&have); err != nil {
		return err
	}
	version := recommend.FactsVersion()
	all := have.String != version
	var steps []string
	if all {
		steps = []string{
			"UPDATE offers SET facts_id = NULL WHERE facts_id IS NOT NULL",
			"UPDATE shapes SET class_id = NULL WHERE class_id IS NOT NULL",
			"DELETE FROM facts",
			"DELETE FROM fact_classes",
		}
	}
	for _, q := range steps {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if all {
		if _, err := tx.ExecContext(ctx, "UPDATE facts_meta SET version = ?", version); err != nil {
			return err
		}
	}
	if err := classifyShapes(ctx, tx); err != nil {
		return err
	}
	// Only rows whose copy or count differs are written.
	copied := `(SELECT price, region, zone, instance_type, vcpus, currency, source, last_seen, ` + hostColumns + `,
			(SELECT count(*) FROM offers INDEXED BY offers_current_facts WHERE facts_id = facts.id AND price IS NOT NULL)
		FROM (SELECT 1) LEFT JOIN offers ON offers.id = (
			SELECT id FROM offers INDEXED BY offers_current_facts WHERE facts_id = facts.id AND price IS NOT NULL
			ORDER BY price, region, zone, instance_type LIMIT 1))`
	cols := "(c_price, c_region, c_zone, c_instance_type, c_vcpus, c_currency, c_source, c_last_seen, " + factsHostCopy + ", c_count)"
	cheapest := "UPDATE facts SET " + cols + " = " + copied + " WHERE " + cols + " IS NOT " + copied
	var cheapestArgs []any
	if !all {
		cheapest += " AND provider = ?"
		cheapestArgs = []any{provider}
	}
	// A set is a class and a CUDA class of its offers' hosts (recommend.CUDAClass).
	inClass, classArgs := cudaClassSQL("o.host_max_cuda")
	ofOffer, offerArgs := cudaClassSQL("offers.host_max_cuda")
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO facts (class_id, max_cuda, provider, purchase, gpu_model, gpu_count, gpu_mem_gib, ram_gib)
			SELECT DISTINCT s.class_id, ` + inClass + `, s.provider, s.purchase, s.gpu_model, s.gpu_count, s.gpu_mem_gib, s.ram_gib
			FROM offers o INDEXED BY offers_facts_missing JOIN shapes s ON s.id = o.shape_id
			WHERE o.price IS NOT NULL AND o.facts_id IS NULL
			ON CONFLICT (class_id, max_cuda) DO NOTHING`, classArgs},
		{`UPDATE offers SET facts_id = (SELECT f.id FROM shapes s JOIN facts f ON f.class_id = s.class_id
			WHERE s.id = offers.shape_id AND f.max_cuda = ` + ofOffer + `)
			WHERE price IS NOT NULL AND facts_id IS NULL`, offerArgs},
		{cheapest, cheapestArgs},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return err
		}
	}
	return nil
}

// classifyShapes gives every shape without a class its class (recommend.FactsKey),
// inserting the classes that are new.
func classifyShapes(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, provider, instance_type, purchase, gpu_model, gpu_count, gpu_mem_gib, vcpus, ram_gib
		FROM shapes INDEXED BY shapes_class_missing WHERE class_id IS NULL`)
	if err != nil {
		return err
	}
	type pending struct {
		id int64
		sh pricing.Shape
	}
	var todo []pending
	for rows.Next() {
		var p pending
		sh := &p.sh
		if err := rows.Scan(&p.id, &sh.Provider, &sh.InstanceType, &sh.Purchase, &sh.GPUModel, &sh.GPUCount, &sh.GPUMemGiB, &sh.VCPUs, &sh.RAMGiB); err != nil {
			rows.Close()
			return err
		}
		todo = append(todo, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(todo) == 0 {
		return err
	}
	ids := map[string]int64{}
	getClass, err := tx.PrepareContext(ctx, `INSERT INTO fact_classes (key) VALUES (?)
		ON CONFLICT (key) DO UPDATE SET key = excluded.key RETURNING id`)
	if err != nil {
		return err
	}
	defer getClass.Close()
	setShape, err := tx.PrepareContext(ctx, "UPDATE shapes SET class_id = ? WHERE id = ?")
	if err != nil {
		return err
	}
	defer setShape.Close()
	for _, p := range todo {
		key := recommend.FactsKey(p.sh)
		id, ok := ids[key]
		if !ok {
			if err := getClass.QueryRowContext(ctx, key).Scan(&id); err != nil {
				return err
			}
			ids[key] = id
		}
		if _, err := setShape.ExecContext(ctx, id, p.id); err != nil {
			return err
		}
	}
	return nil
}

// factsReady reports whether the fit-fact sets are this picker's rules' and every
// current offer is in one: then ReadShapes reads by set.
func factsReady(ctx context.Context, db queryer) (bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT (SELECT version FROM facts_meta) = ? AND NOT EXISTS (
		SELECT 1 FROM offers INDEXED BY offers_facts_missing WHERE price IS NOT NULL AND facts_id IS NULL)`, recommend.FactsVersion())
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var ok sql.NullBool
	if rows.Next() {
		if err := rows.Scan(&ok); err != nil {
			return false, err
		}
	}
	return ok.Bool, rows.Err()
}

// groupTable names the table ReadShapes groups offers by (shapes or facts), the index
// that lists a group's current offers cheapest first, that index's group column and its
// store order after the price.
type groupTable struct {
	table, index, column, order string
	// copied are the columns of the cheapest offer's copy in the group's row from the
	// instance type to the RAM (offerCols' order).
	copied string
	// cursor is the further read's "after the last one read" condition over the JSON
	// ask j (shapeAsk's cursor: [group, max price, price, region, zone, instance type]).
	cursor string
	// hosts are the cheapest offer's host facts in the group's row, hostColumns' order
	// (shapes keep none: noHost, and ReadShapes reads by shape only where no current
	// offer states host facts).
	hosts string
}

var (
	byShape = groupTable{"shapes", "offers_current_shape", "shape_id", "price, region, zone",
		"s.instance_type, s.purchase, s.gpu_model, s.gpu_count, s.gpu_mem_gib, s.vcpus, s.ram_gib",
		"(price, region, zone) > (j.value ->> 2, j.value ->> 3, j.value ->> 4)", noHost}
	byFacts = groupTable{"facts", "offers_current_facts", "facts_id", "price, region, zone, instance_type",
		"s.c_instance_type, s.purchase, s.gpu_model, s.gpu_count, s.gpu_mem_gib, s.c_vcpus, s.ram_gib",
		"(price, region, zone, instance_type) > (j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5)",
		"s." + strings.ReplaceAll(factsHostCopy, ", ", ", s.")}
)

// cheapestPerFactsSQL is the first read by set: every set passing the shape filters
// (the facts table has the columns they name) with its cheapest current offer passing
// the offer filters. With no offer filter that is the copy the write keeps in the set's
// row.
func cheapestPerFactsSQL(q Query) (string, []any, error) { return cheapestSQL(q, byFacts) }

// groupOffersSQL is the further read (shapeOffersSQL) for groups g. Its limit is
// bound as "+?": SQLite 3.54 (modernc.org/sqlite v1.62.0) reads a bare "LIMIT ?"'s
// bound value while planning (sqlite3ExprIsInteger, which a unary plus stops), so each
// new limit expired the prepared statement and re-parsed it on its next step.
func groupOffersSQL(q Query, g groupTable) (string, []any, error) {
	_, _, ow, oa, err := shapeFilters(q)
	if err != nil {
		return "", nil, err
	}
	return "SELECT o." + g.column + ", " + shapeOfferCols("o") + ` FROM json_each(?) j JOIN offers o ON o.id IN (
		SELECT id FROM offers INDEXED BY ` + g.index + `
		WHERE ` + g.column + ` = j.value ->> 0 AND price IS NOT NULL AND price <= j.value ->> 1
			AND ` + g.cursor + and(ow) + `
		ORDER BY ` + g.order + ` LIMIT +?)`, oa, nil
}

// askCursor is a further read's JSON ask: the group, the price bound and the last
// offer read.
func askCursor(a shapeAsk) ([]byte, error) {
	return json.Marshal([]any{a.shape, a.maxPrice, a.after.PriceUSDHr, a.after.Region, a.after.Zone, a.after.InstanceType})
}

// writeFactsImage rebuilds the facts image (every set's cheapest current offer, as the
// first read without offer filters returns them) at version, inside tx, the write
// transaction that just recorded that run (called with writeImage).
func writeFactsImage(ctx context.Context, tx *sql.Tx, version int64) error {
	query, args, err := cheapestPerFactsSQL(Query{})
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var sets []shapeOffer
	for rows.Next() {
		so, err := scanShapeOffer(rows)
		if err != nil {
			return err
		}
		sets = append(sets, so)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	slices.SortFunc(sets, func(a, b shapeOffer) int { return offerOrder(&a.Offer, &b.Offer) })
	_, err = tx.ExecContext(ctx, "INSERT OR REPLACE INTO facts_image (id, version, data) VALUES (1, ?, ?)", version, encodeImage(sets))
	return err
}

// cheapestFromImage is the first read by set from the facts image, for a query with no
// offer filter; ok false when the image is not current or UseImage turned images off
// (the caller reads the table).
func (s *Store) cheapestFromImage(ctx context.Context, db queryer, q Query) (out []shapeOffer, ok bool, err error) {
	if s.noImage {
		return nil, false, nil
	}
	rows, err := db.QueryContext(ctx, "SELECT data FROM facts_image WHERE id = 1 AND version = ("+imageVersionSQL+")")
	if err != nil {
		return nil, false, err
	}
	var data []byte
	if rows.Next() {
		err = rows.Scan(&data)
	}
	rows.Close()
	if err != nil || data == nil {
		return nil, false, err
	}
	d, err := decodeImage(data)
	if err != nil {
		return nil, false, nil // unreadable: the table answers
	}
	match, err := imageMatcher(d, q)
	if err != nil {
		return nil, false, err
	}
	d.each(func(r *imageRow) {
		if match(r) {
			out = append(out, shapeOffer{shape: d.shapes[r.shape].id, Offer: d.offer(r)})
		}
	})
	return out, true, nil
}

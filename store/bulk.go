package store

import (
	"context"
	"database/sql"
)

// bulkMinNew is the fewest new offers a write must bring for dropForBulk to consider
// rebuilding the offers table's indexes.
var bulkMinNew = 10_000 // a var: tests lower it

// dropForBulk prepares a write that brings at least newOffers new offers (its offers
// minus those the provider already has stored). When that is at least bulkMinNew and at
// least as many as the offers table already holds (a first refresh of a large provider),
// the table's secondary indexes (every named index on offers; the UNIQUE key stays, it
// enforces the offer identity) are dropped inside the write's transaction and the
// returned rebuild recreates them, from their own stored CREATE statements, before the
// transaction reads them again: sorting N entries once per index is much cheaper than N
// random inserts into each of eight B-trees (issue 17: a 90k-offer first refresh spent
// a third of its time in sqlite3BtreeInsert). Readers never see the indexes missing:
// WAL readers read the last commit, and the transaction commits with them rebuilt. A
// smaller write (a 1 % change of 100k offers) keeps the indexes and rebuild does nothing.
func dropForBulk(ctx context.Context, tx *sql.Tx, newOffers int) (rebuild func() error, err error) {
	none := func() error { return nil }
	if newOffers < bulkMinNew {
		return none, nil
	}
	var rows int
	// max(id) is one probe, unlike count(*); pruning leaves count(*) below it, so this
	// errs towards keeping the indexes.
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM offers`).Scan(&rows); err != nil {
		return nil, err
	}
	if newOffers < rows {
		return none, nil
	}
	q, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'offers' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		return nil, err
	}
	var names, creates []string
	for q.Next() {
		var name, create string
		if err := q.Scan(&name, &create); err != nil {
			q.Close()
			return nil, err
		}
		names, creates = append(names, name), append(creates, create)
	}
	q.Close()
	if err := q.Err(); err != nil {
		return nil, err
	}
	for _, name := range names {
		if _, err := tx.ExecContext(ctx, `DROP INDEX "`+name+`"`); err != nil {
			return nil, err
		}
	}
	return func() error {
		for _, create := range creates {
			if _, err := tx.ExecContext(ctx, create); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

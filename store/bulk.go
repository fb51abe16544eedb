package store

import (
	"context"
	"database/sql"
)

// bulkMinNew is the fewest rows a write must be expected to write for bulkIndexes to
// rebuild the offers table's indexes.
var bulkMinNew = 10_000 // a var: tests lower it

// bulkIndexes drops the offers table's secondary indexes (every named index on offers;
// the UNIQUE key stays, it enforces the offer identity) inside a write's transaction
// when the write is expected to write more rows than a rebuild costs, and rebuilds them,
// from their own stored CREATE statements, before the transaction reads them again.
// Sorting N entries once per index is much cheaper than N random changes to each of
// eight B-trees: per row, keeping the indexes cost about 50 µs on a 90k-offer first
// refresh, rebuilding them about 9 µs (issue 17: a third of that refresh's time was
// sqlite3BtreeInsert). Readers never see the indexes missing: WAL readers read the last
// commit, and the transaction commits with them rebuilt. A write of few changes (1 % of
// 100k offers) keeps them.
type bulkIndexes struct {
	rows    int64    // rows in offers when the write began (max(id): one probe)
	creates []string // the dropped indexes' CREATE statements; nil while kept
}

func newBulkIndexes(ctx context.Context, tx *sql.Tx) (*bulkIndexes, error) {
	b := &bulkIndexes{}
	// max(id) is one probe, unlike count(*); pruning leaves count(*) below it, so this
	// errs towards keeping the indexes.
	err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM offers`).Scan(&b.rows)
	return b, err
}

// consider drops the indexes when expected more row writes are to come: at least
// bulkMinNew, and at least a quarter of the table (a rebuild costs about a fifth of
// keeping the indexes per row).
func (b *bulkIndexes) consider(ctx context.Context, tx *sql.Tx, expected int) error {
	if b.creates != nil || expected < bulkMinNew || int64(expected)*4 < b.rows {
		return nil
	}
	q, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'offers' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		return err
	}
	var names, creates []string
	for q.Next() {
		var name, create string
		if err := q.Scan(&name, &create); err != nil {
			q.Close()
			return err
		}
		names, creates = append(names, name), append(creates, create)
	}
	q.Close()
	if err := q.Err(); err != nil {
		return err
	}
	for _, name := range names {
		if _, err := tx.ExecContext(ctx, `DROP INDEX "`+name+`"`); err != nil {
			return err
		}
	}
	b.creates = creates
	return nil
}

// rebuild recreates the dropped indexes, if any.
func (b *bulkIndexes) rebuild(ctx context.Context, tx *sql.Tx) error {
	for _, create := range b.creates {
		if _, err := tx.ExecContext(ctx, create); err != nil {
			return err
		}
	}
	b.creates = nil
	return nil
}

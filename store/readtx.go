package store

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"sync"
)

// Statements prepared once per Store. database/sql prepares every QueryContext's text
// anew and SQLite parses it each time: the daemon's recommend path at 100k marketplace
// offers spent ~60 % of its further reads (moreShapeOffers) in SQLite's parser
// (_sqlite3RunParser under newStmt), running the same few statement texts on every
// request. A *sql.Stmt prepared on the pool keeps one driver statement per connection
// it ran on (database/sql's Stmt.css), and modernc.org/sqlite v1.62.0 keeps the
// prepared SQLite statement of a single-statement text in its driver statement
// (stmt.go: stmt.pstmt, "The cached SQLite statement handle"; reset, not finalized,
// when its rows close): a repeated text costs a bind and a step, no parse.
//
// The cache is bounded (maxStmts texts, least recently used closed first): the texts
// vary with a query's filters (one placeholder per region or GPU model named), and a
// long-running daemon must not hold a statement for every list length it ever saw.
// An evicted statement is closed once no caller is between taking it and running it;
// from then on database/sql keeps it alive for what still uses it (rows open on it,
// transaction statements derived from it: Stmt.Close's removeDep, QueryContext's and
// Tx.StmtContext's addDep) and finalizes it after.
const maxStmts = 128

type stmtCache struct {
	mu     sync.Mutex
	lru    *list.List // of *cachedStmt, most recent first
	m      map[string]*list.Element
	closed bool
}

type cachedStmt struct {
	query   string
	st      *sql.Stmt
	users   int  // callers holding it (withStmt)
	evicted bool // out of the cache: closed when users drops to 0
}

// withStmt runs use with s's statement for query, preparing it on first use.
func (s *Store) withStmt(ctx context.Context, query string, use func(*sql.Stmt)) error {
	c := &s.stmts
	c.mu.Lock()
	e := c.take(query)
	c.mu.Unlock()
	if e == nil {
		// Prepared outside the lock: a concurrent first use of the same text
		// prepares twice and keeps one.
		st, err := s.db.PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			st.Close()
			return errors.New("sql: database is closed")
		}
		if e = c.take(query); e != nil {
			st.Close()
		} else {
			e = c.add(query, st)
		}
		c.mu.Unlock()
	}
	use(e.st)
	c.mu.Lock()
	e.users--
	closeNow := e.evicted && e.users == 0
	c.mu.Unlock()
	if closeNow {
		e.st.Close()
	}
	return nil
}

// take returns query's entry, held (users), or nil. c.mu is held.
func (c *stmtCache) take(query string) *cachedStmt {
	el, ok := c.m[query]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	e := el.Value.(*cachedStmt)
	e.users++
	return e
}

// add caches st for query, held, evicting the least recently used past maxStmts.
// c.mu is held.
func (c *stmtCache) add(query string, st *sql.Stmt) *cachedStmt {
	if c.m == nil {
		c.lru, c.m = list.New(), map[string]*list.Element{}
	}
	for c.lru.Len() >= maxStmts {
		c.evict(c.lru.Back())
	}
	e := &cachedStmt{query: query, st: st, users: 1}
	c.m[query] = c.lru.PushFront(e)
	return e
}

// evict drops el from the cache, closing its statement unless a caller holds it (the
// last one closes it). c.mu is held.
func (c *stmtCache) evict(el *list.Element) {
	c.lru.Remove(el)
	e := el.Value.(*cachedStmt)
	delete(c.m, e.query)
	e.evicted = true
	if e.users == 0 {
		e.st.Close()
	}
}

// closeStmts closes every cached statement (Store.Close, before the pool).
func (s *Store) closeStmts() {
	c := &s.stmts
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for c.lru != nil && c.lru.Len() > 0 {
		c.evict(c.lru.Back())
	}
}

// pooled runs statements on the pool through s's prepared statements: a queryer for
// the reads that run outside a transaction (each one statement, a snapshot on its own).
type pooled struct{ s *Store }

func (p pooled) QueryContext(ctx context.Context, query string, args ...any) (rows *sql.Rows, err error) {
	if perr := p.s.withStmt(ctx, query, func(st *sql.Stmt) { rows, err = st.QueryContext(ctx, args...) }); perr != nil {
		return nil, perr
	}
	return rows, err
}

// QueryRowContext is QueryContext's first row. A text that cannot be prepared runs
// unprepared, and its Scan says why: a *sql.Row carrying an error is database/sql's
// to make.
func (p pooled) QueryRowContext(ctx context.Context, query string, args ...any) (row *sql.Row) {
	if err := p.s.withStmt(ctx, query, func(st *sql.Stmt) { row = st.QueryRowContext(ctx, args...) }); err != nil {
		return p.s.db.QueryRowContext(ctx, query, args...)
	}
	return row
}

// readTx is one read snapshot (ReadShapes' statements) running s's prepared
// statements.
//
// The transaction is database/sql's with ReadOnly set: modernc.org/sqlite v1.62.0
// (tx.go, newTx) then issues a plain (deferred) "begin", not the DSN's
// "begin immediate" (_txlock=immediate, dsnParams), so a reader neither takes nor
// waits for the write lock; SQLite takes the read snapshot at the first SELECT and
// holds it to the rollback, so a refresh committing meanwhile is seen entirely or not
// at all (TestReadShapesOneSnapshot). Tx.StmtContext (Go 1.26 database/sql, sql.go)
// reuses the driver statement the parent Stmt already prepared on the
// transaction's connection ("See if the statement has already been prepared on this
// connection, and reuse it if possible") and prepares it there only the first time.
type readTx struct {
	s     *Store
	tx    *sql.Tx
	stmts map[string]*sql.Stmt // this transaction's, by text
}

// beginRead starts a read snapshot; the caller ends it with end.
func (s *Store) beginRead(ctx context.Context) (*readTx, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	return &readTx{s: s, tx: tx}, nil
}

// end rolls the snapshot back (it wrote nothing), closing its statements.
func (r *readTx) end() { r.tx.Rollback() }

func (r *readTx) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := r.stmts[query]; ok {
		return st, nil
	}
	var st *sql.Stmt
	if err := r.s.withStmt(ctx, query, func(ps *sql.Stmt) { st = r.tx.StmtContext(ctx, ps) }); err != nil {
		return nil, err
	}
	if r.stmts == nil {
		r.stmts = map[string]*sql.Stmt{}
	}
	r.stmts[query] = st
	return st, nil
}

func (r *readTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := r.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext is QueryContext's first row (an unpreparable text: as pooled's).
func (r *readTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, err := r.stmt(ctx, query); err == nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.tx.QueryRowContext(ctx, query, args...)
}

// KeepConns keeps up to n idle connections open (database/sql closes all but two once
// they are idle: sql.DB.SetMaxIdleConns). A long-running reader serving n requests at
// once then reuses its connections, and with them the statements prepared on each,
// instead of opening a connection (SQLite parsing the schema again) and preparing its
// statements anew for every request past the second at a time. The daemon keeps its
// max_concurrent.
func (s *Store) KeepConns(n int) { s.db.SetMaxIdleConns(n) }

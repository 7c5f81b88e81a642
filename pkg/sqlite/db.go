// Package sqlite is the embedded adapter for the table, change-stream and queue
// ports: items, their change log, stream checkpoints and queue messages all live
// in one SQLite file (modernc.org/sqlite, pure Go) in WAL mode.
//
// Writes go through one connection owned by one goroutine, which commits the
// writes queued while it was busy together (each in its own savepoint), so
// the change log's sequence follows commit order; bulk writes insert a
// hundred rows per statement. WAL checkpoints run on a connection of their
// own (checkpoint.go). Reads use a separate pool with cached prepared
// statements and never wait for the writer.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// DB is one SQLite database file holding a table, its change log, stream
// checkpoints and any number of queues.
type DB struct {
	path   string
	reader *sql.DB
	writer *sql.DB

	// Writes: writeLoop alone uses wconn and stmts, taking requests from reqs.
	wconn    *sql.Conn
	stmts    *statements
	reqs     chan *writeReq
	loopDone chan struct{}
	cmu      sync.RWMutex // guards closed and sends on reqs
	closed   bool

	// now is the clock; tests replace it.
	now func() time.Time

	lastPurge time.Time // used by writeLoop only
	commits   int64     // used by writeLoop only
	ckpt      *checkpointer
	notify    notifier

	// readStmts caches the reader pool's prepared statements by SQL text.
	rsMu      sync.Mutex
	readStmts map[string]*sql.Stmt
}

const schema = `
CREATE TABLE IF NOT EXISTS items (
	pk TEXT NOT NULL,
	sk TEXT NOT NULL,
	gsi1pk TEXT,
	gsi1sk TEXT,
	gsi2pk TEXT,
	gsi2sk TEXT,
	data BLOB,
	counters TEXT,
	version INTEGER NOT NULL,
	expires_at INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_gsi1 ON items (gsi1pk, gsi1sk, pk, sk) WHERE gsi1pk IS NOT NULL AND gsi1sk IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_gsi2 ON items (gsi2pk, gsi2sk, pk, sk) WHERE gsi2pk IS NOT NULL AND gsi2sk IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_expiry ON items (expires_at) WHERE expires_at > 0;
CREATE TABLE IF NOT EXISTS changes (
	seq INTEGER PRIMARY KEY,
	kind TEXT NOT NULL,
	old BLOB,
	new BLOB,
	at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
	consumer TEXT PRIMARY KEY,
	checkpoint TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
	seq INTEGER PRIMARY KEY,
	id TEXT NOT NULL,
	queue TEXT NOT NULL,
	body BLOB NOT NULL,
	visible_at INTEGER NOT NULL,
	receive_count INTEGER NOT NULL DEFAULT 0,
	sent_at INTEGER NOT NULL,
	receipt TEXT
);
CREATE INDEX IF NOT EXISTS messages_visible ON messages (queue, visible_at, seq);
`

// readers is the size of the read pool.
const readers = 4

// DefaultBusyTimeout is how long a write waits for a lock another
// connection holds before it fails with SQLITE_BUSY.
const DefaultBusyTimeout = 10 * time.Second

// Options tune a database; zero values take the defaults.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection (another process on the same file) before it fails with
	// SQLITE_BUSY; default DefaultBusyTimeout, at least a millisecond.
	BusyTimeout time.Duration
}

// Open opens (creating if needed) the database file at path and its schema.
func Open(path string) (*DB, error) {
	return OpenWith(path, Options{})
}

// OpenWith is Open with options.
func OpenWith(path string, o Options) (*DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open sqlite %q: path must be non-empty and contain no '?' or '#'", path)
	}
	busy := o.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	params := fmt.Sprintf("?_pragma=busy_timeout(%d)", max(busy.Milliseconds(), 1)) +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
		"&_pragma=foreign_keys(OFF)&_pragma=cache_size(-16000)"
	// The writer never checkpoints; the checkpointer does (checkpoint.go).
	writer, err := sql.Open("sqlite", path+params+"&_txlock=immediate&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		return nil, fmt.Errorf("open sqlite %q: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	db := &DB{path: path, writer: writer, now: time.Now}
	if err := db.init(context.Background(), params); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) init(ctx context.Context, params string) error {
	if _, err := db.writer.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create schema in %q: %w", db.path, err)
	}
	conn, err := db.writer.Conn(ctx)
	if err != nil {
		return fmt.Errorf("open writer connection to %q: %w", db.path, err)
	}
	db.wconn = conn
	if db.stmts, err = prepare(ctx, conn); err != nil {
		return fmt.Errorf("prepare statements on %q: %w", db.path, err)
	}
	reader, err := sql.Open("sqlite", db.path+params+"&_pragma=query_only(1)")
	if err != nil {
		return fmt.Errorf("open sqlite reader %q: %w", db.path, err)
	}
	reader.SetMaxOpenConns(readers)
	reader.SetMaxIdleConns(readers)
	db.reader = reader
	if db.ckpt, err = startCheckpointer(db.path, params); err != nil {
		return err
	}
	db.reqs = make(chan *writeReq, maxGroup)
	db.loopDone = make(chan struct{})
	go db.writeLoop()
	return nil
}

// Close waits for queued writes, then closes the database.
func (db *DB) Close() error {
	db.cmu.Lock()
	if db.closed {
		db.cmu.Unlock()
		return nil
	}
	db.closed = true
	if db.reqs != nil {
		close(db.reqs)
	}
	db.cmu.Unlock()
	if db.loopDone != nil {
		<-db.loopDone
	}
	var errs []error
	db.rsMu.Lock()
	for _, stmt := range db.readStmts {
		errs = append(errs, stmt.Close())
	}
	db.readStmts = nil
	db.rsMu.Unlock()
	if db.ckpt != nil {
		errs = append(errs, db.ckpt.close())
	}
	if db.stmts != nil {
		errs = append(errs, db.stmts.close())
	}
	if db.wconn != nil {
		errs = append(errs, db.wconn.Close())
	}
	if db.reader != nil {
		errs = append(errs, db.reader.Close())
	}
	if db.writer != nil {
		errs = append(errs, db.writer.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sqlite %q: %w", db.path, err)
	}
	return nil
}

// maxReadStmts bounds the reader statement cache. The adapter's reads have
// about a hundred shapes (see buildQuery); past the bound a read is prepared
// afresh each time instead of cached.
const maxReadStmts = 256

// query runs a read on the reader pool through a cached prepared statement
// (database/sql prepares it once per pooled connection), so a read does not
// parse its SQL again.
func (db *DB) query(ctx context.Context, text string, args ...any) (*sql.Rows, error) {
	stmt, err := db.readStmt(ctx, text)
	if err != nil {
		return nil, err
	}
	if stmt == nil {
		return db.reader.QueryContext(ctx, text, args...)
	}
	return stmt.QueryContext(ctx, args...)
}

// queryRow is query for a single row.
func (db *DB) queryRow(ctx context.Context, text string, args ...any) *sql.Row {
	stmt, err := db.readStmt(ctx, text)
	if err != nil || stmt == nil {
		return db.reader.QueryRowContext(ctx, text, args...)
	}
	return stmt.QueryRowContext(ctx, args...)
}

// readStmt returns the cached statement for text, preparing it on first use;
// nil when the cache is full.
func (db *DB) readStmt(ctx context.Context, text string) (*sql.Stmt, error) {
	db.rsMu.Lock()
	defer db.rsMu.Unlock()
	if stmt, ok := db.readStmts[text]; ok {
		return stmt, nil
	}
	if len(db.readStmts) >= maxReadStmts {
		return nil, nil
	}
	stmt, err := db.reader.PrepareContext(ctx, text)
	if err != nil {
		return nil, fmt.Errorf("prepare read on %q: %w", db.path, err)
	}
	if db.readStmts == nil {
		db.readStmts = make(map[string]*sql.Stmt)
	}
	db.readStmts[text] = stmt
	return stmt, nil
}

// errClosed reports a use of a closed DB.
var errClosed = errors.New("sqlite: database is closed")

// write runs fn inside an IMMEDIATE transaction on the writer connection:
// its writes commit when it returns nil and are undone otherwise.
//
// Writes are group-committed: one goroutine owns the writer connection and
// runs every write queued while it was busy in one transaction, each inside
// its own savepoint, so concurrent writers share one commit. Statements run
// without the caller's cancellation (a write is short and must end cleanly);
// a context already done is refused up front. A write the full filesystem
// refused returns a *diskspace.Error.
func (db *DB) write(ctx context.Context, fn func(ctx context.Context, w *writeTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &writeReq{ctx: context.WithoutCancel(ctx), fn: fn, done: make(chan struct{})}
	db.cmu.RLock()
	if db.closed {
		db.cmu.RUnlock()
		return errClosed
	}
	db.reqs <- req
	db.cmu.RUnlock()
	<-req.done
	return db.wrapFull(req.err)
}

// writeReq is one queued write and, once done is closed, its outcome.
type writeReq struct {
	ctx    context.Context
	fn     func(ctx context.Context, w *writeTx) error
	done   chan struct{}
	err    error
	sentTo []string
}

// maxGroup bounds how many writes share one commit.
const maxGroup = 256

// writeLoop owns the writer connection: it runs queued writes in groups until
// the request channel is closed and drained.
func (db *DB) writeLoop() {
	defer close(db.loopDone)
	for req := range db.reqs {
		// Let writers that are about to queue do so, so they share this
		// commit: without the yield most commits carry one write even with
		// several writers busy, since each arrives while the last commits.
		runtime.Gosched()
		batch := []*writeReq{req}
	drain:
		for len(batch) < maxGroup {
			select {
			case r, ok := <-db.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		db.runBatch(batch)
	}
}

// runBatch runs the queued writes in one transaction.
func (db *DB) runBatch(batch []*writeReq) {
	defer func() {
		for _, req := range batch {
			if req.err == nil {
				for _, q := range req.sentTo {
					db.notify.signal(q)
				}
			}
			close(req.done)
		}
	}()
	now := db.now()
	ctx := batch[0].ctx
	if len(batch) == 1 {
		w := &writeTx{db: db, s: db.stmts, now: now}
		batch[0].err = db.inTx(ctx, w, batch[0].fn)
		batch[0].sentTo = w.sentTo
	} else {
		db.runGroup(ctx, now, batch)
	}
	db.committed()
	db.maybePurge(ctx, now)
}

// runGroup runs several writes in one transaction, each in a savepoint so a
// failed one is undone alone.
func (db *DB) runGroup(ctx context.Context, now time.Time, batch []*writeReq) {
	if _, err := db.stmts.begin.ExecContext(ctx); err != nil {
		for _, req := range batch {
			req.err = fmt.Errorf("begin write on %q: %w", db.path, err)
		}
		return
	}
	for _, req := range batch {
		req.err = db.inSavepoint(now, req)
	}
	if _, err := db.stmts.commit.ExecContext(ctx); err != nil {
		_, _ = db.stmts.rollback.ExecContext(ctx)
		for _, req := range batch {
			if req.err == nil {
				req.err = fmt.Errorf("commit write on %q: %w", db.path, err)
			}
		}
	}
}

func (db *DB) inSavepoint(now time.Time, req *writeReq) error {
	if _, err := db.stmts.savepoint.ExecContext(req.ctx); err != nil {
		return fmt.Errorf("open savepoint on %q: %w", db.path, err)
	}
	w := &writeTx{db: db, s: db.stmts, now: now}
	err := w.run(req.ctx, req.fn)
	if err != nil {
		if _, rbErr := db.stmts.rollbackTo.ExecContext(req.ctx); rbErr != nil {
			err = errors.Join(err, fmt.Errorf("roll back savepoint on %q: %w", db.path, rbErr))
		}
	}
	if _, relErr := db.stmts.release.ExecContext(req.ctx); relErr != nil && err == nil {
		err = fmt.Errorf("release savepoint on %q: %w", db.path, relErr)
	}
	req.sentTo = w.sentTo
	return err
}

// inTx runs fn in one transaction on the writer connection (from writeLoop).
func (db *DB) inTx(ctx context.Context, w *writeTx, fn func(ctx context.Context, w *writeTx) error) error {
	if _, err := db.stmts.begin.ExecContext(ctx); err != nil {
		return fmt.Errorf("begin write on %q: %w", db.path, err)
	}
	if err := w.run(ctx, fn); err != nil {
		if _, rbErr := db.stmts.rollback.ExecContext(ctx); rbErr != nil {
			return errors.Join(err, fmt.Errorf("roll back write on %q: %w", db.path, rbErr))
		}
		return err
	}
	if _, err := db.stmts.commit.ExecContext(ctx); err != nil {
		_, _ = db.stmts.rollback.ExecContext(ctx)
		return fmt.Errorf("commit write on %q: %w", db.path, err)
	}
	return nil
}

// writeTx is the state of one write transaction.
type writeTx struct {
	db      *DB
	s       *statements
	now     time.Time
	sentTo  []string // queues that got messages, signalled after commit
	changes []any    // change records not yet inserted, 4 arguments each
}

// run applies fn and then inserts the change records it buffered.
func (w *writeTx) run(ctx context.Context, fn func(ctx context.Context, w *writeTx) error) error {
	if err := fn(ctx, w); err != nil {
		return err
	}
	return w.flushChanges(ctx)
}

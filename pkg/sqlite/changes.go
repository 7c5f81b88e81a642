package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Stream reads the change log; Change.ID and checkpoints are the change's
// sequence number in decimal.
type Stream struct{ db *DB }

// Checkpoints stores stream consumers' checkpoints in the database.
type Checkpoints struct{ db *DB }

var (
	_ store.Stream      = (*Stream)(nil)
	_ store.Checkpoints = (*Checkpoints)(nil)
)

// Stream returns the table's change stream.
func (db *DB) Stream() *Stream { return &Stream{db: db} }

// Checkpoints returns the consumers' checkpoint store.
func (db *DB) Checkpoints() *Checkpoints { return &Checkpoints{db: db} }

// errInvalidCheckpoint reports a checkpoint this database did not produce.
var errInvalidCheckpoint = errors.New("invalid checkpoint")

// maxRead bounds one Read.
const maxRead = 10000

// appendChange records one change in the write's transaction. Changes are
// buffered and inserted a hundred rows per statement (flushChanges), which
// the write's owner calls before it commits.
func (w *writeTx) appendChange(ctx context.Context, kind store.ChangeKind, old, new *store.Item) error {
	w.changes = append(w.changes, string(kind), encodeImage(old), encodeImage(new), w.now.UnixNano())
	if len(w.changes) >= 4*bulkRows {
		return w.flushChanges(ctx)
	}
	return nil
}

// flushChanges inserts the buffered change records, in order.
func (w *writeTx) flushChanges(ctx context.Context) error {
	for len(w.changes) > 0 {
		n := min(len(w.changes)/4, bulkRows)
		stmt, err := w.bulkStmt(ctx, bulkChanges, n)
		if err != nil {
			return err
		}
		if _, err := stmt.ExecContext(ctx, w.changes[:4*n]...); err != nil {
			return fmt.Errorf("append %d changes: %w", n, err)
		}
		w.changes = w.changes[4*n:]
	}
	w.changes = nil
	return nil
}

// Read returns up to max changes after checkpoint, in commit order.
func (s *Stream) Read(ctx context.Context, checkpoint string, max int) ([]store.Change, string, error) {
	after, err := parseCheckpoint(checkpoint)
	if err != nil {
		return nil, "", fmt.Errorf("read changes: %w", err)
	}
	if max <= 0 || max > maxRead {
		max = maxRead
	}
	rows, err := s.db.query(ctx,
		`SELECT seq, kind, old, new, at FROM changes WHERE seq > ? ORDER BY seq LIMIT ?`, after, max)
	if err != nil {
		return nil, "", fmt.Errorf("read changes after %d: %w", after, err)
	}
	defer rows.Close()
	var changes []store.Change
	next := checkpoint
	for rows.Next() {
		c, seq, err := scanChange(rows)
		if err != nil {
			return nil, "", fmt.Errorf("read changes after %d: %w", after, err)
		}
		changes = append(changes, c)
		next = strconv.FormatInt(seq, 10)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("read changes after %d: %w", after, err)
	}
	return changes, next, nil
}

func scanChange(rows *sql.Rows) (store.Change, int64, error) {
	var (
		seq, at  int64
		kind     string
		old, new []byte
	)
	if err := rows.Scan(&seq, &kind, &old, &new, &at); err != nil {
		return store.Change{}, 0, err
	}
	c := store.Change{ID: strconv.FormatInt(seq, 10), Kind: store.ChangeKind(kind), At: time.Unix(0, at).UTC()}
	var err error
	if c.Old, err = decodeImage(old); err != nil {
		return store.Change{}, 0, fmt.Errorf("change %d old image: %w", seq, err)
	}
	if c.New, err = decodeImage(new); err != nil {
		return store.Change{}, 0, fmt.Errorf("change %d new image: %w", seq, err)
	}
	return c, seq, nil
}

func parseCheckpoint(checkpoint string) (int64, error) {
	if checkpoint == "" {
		return 0, nil
	}
	seq, err := strconv.ParseInt(checkpoint, 10, 64)
	if err != nil || seq < 0 {
		return 0, fmt.Errorf("%w %q: want a sequence number", errInvalidCheckpoint, checkpoint)
	}
	return seq, nil
}

// PruneChanges drops every change up to and including checkpoint, except the
// newest change of all, which stays so that sequence numbers never restart.
// Call it with a checkpoint every consumer has passed.
func (db *DB) PruneChanges(ctx context.Context, before string) error {
	seq, err := parseCheckpoint(before)
	if err != nil {
		return fmt.Errorf("prune changes: %w", err)
	}
	err = db.write(ctx, func(ctx context.Context, w *writeTx) error {
		_, err := w.s.pruneChanges.ExecContext(ctx, seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("prune changes up to %d: %w", seq, err)
	}
	return nil
}

// Load returns the consumer's checkpoint, or "" when none is saved.
func (c *Checkpoints) Load(ctx context.Context, consumer string) (string, error) {
	var checkpoint string
	err := c.db.queryRow(ctx, `SELECT checkpoint FROM checkpoints WHERE consumer = ?`, consumer).Scan(&checkpoint)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("load checkpoint of %q: %w", consumer, err)
	}
	return checkpoint, nil
}

// Save records the consumer's checkpoint.
func (c *Checkpoints) Save(ctx context.Context, consumer, checkpoint string) error {
	if consumer == "" {
		return errors.New("save checkpoint: consumer is empty")
	}
	err := c.db.write(ctx, func(ctx context.Context, w *writeTx) error {
		_, err := w.s.saveCheckpoint.ExecContext(ctx, consumer, checkpoint)
		return err
	})
	if err != nil {
		return fmt.Errorf("save checkpoint of %q: %w", consumer, err)
	}
	return nil
}

// Expired items are purged in batches at most once per purgeEvery, after a
// write; each purge records a REMOVE change, as DynamoDB's TTL deletion does.
const (
	purgeEvery = time.Minute
	purgeBatch = 500
)

// maybePurge runs a purge when one is due. It is called by writeLoop, after
// a commit; a failed purge is logged and retried at the next interval.
func (db *DB) maybePurge(ctx context.Context, now time.Time) {
	if now.Sub(db.lastPurge) < purgeEvery {
		return
	}
	db.lastPurge = now
	if _, err := db.purgeLocked(ctx, now); err != nil {
		slog.WarnContext(ctx, "purge expired items", "db", db.path, "err", err)
	}
}

// purgeLocked deletes up to purgeBatch expired items in one transaction.
func (db *DB) purgeLocked(ctx context.Context, now time.Time) (int, error) {
	w := &writeTx{db: db, s: db.stmts, now: now}
	n := 0
	err := db.inTx(ctx, w, func(ctx context.Context, w *writeTx) error {
		var err error
		n, err = w.purge(ctx)
		return err
	})
	return n, err
}

func (w *writeTx) purge(ctx context.Context) (int, error) {
	rows, err := w.s.expiredItems.QueryContext(ctx, w.now.Unix(), purgeBatch)
	if err != nil {
		return 0, fmt.Errorf("find expired items: %w", err)
	}
	var items []store.Item
	for rows.Next() {
		item, err := scanItem(rows)
		if err != nil {
			rows.Close()
			return 0, fmt.Errorf("find expired items: %w", err)
		}
		items = append(items, item)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, fmt.Errorf("find expired items: %w", err)
	}
	for i := range items {
		if err := w.remove(ctx, &items[i]); err != nil {
			return 0, err
		}
	}
	return len(items), nil
}

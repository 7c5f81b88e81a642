package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Bulk writes (Table.Create, Queue.Send) insert up to bulkRows rows per
// statement: one statement of a hundred rows costs far less than a hundred
// statements of one (binding, stepping and resetting through database/sql).
const bulkRows = 100

// bulkKind names a multi-row INSERT.
type bulkKind int

const (
	bulkItems    bulkKind = iota // items, ON CONFLICT DO NOTHING, RETURNING the inserted keys
	bulkChanges                  // change records
	bulkMessages                 // queue messages
)

// bulkSQL returns the multi-row INSERT of kind for n rows.
func bulkSQL(kind bulkKind, n int) string {
	var head, row, tail string
	switch kind {
	case bulkItems:
		head, row, tail = `INSERT INTO items (`+itemColumns+`) VALUES `, `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			` ON CONFLICT (pk, sk) DO NOTHING RETURNING pk, sk`
	case bulkChanges:
		head, row = `INSERT INTO changes (kind, old, new, at) VALUES `, `(?, ?, ?, ?)`
	case bulkMessages:
		head, row = `INSERT INTO messages (id, queue, body, visible_at, sent_at) VALUES `, `(?, ?, ?, ?, ?)`
	}
	var b strings.Builder
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(tail)
	return b.String()
}

// bulkStmt returns the writer's prepared multi-row INSERT of kind for n rows
// (1 ≤ n ≤ bulkRows), preparing it on first use. Only writeLoop calls it.
func (w *writeTx) bulkStmt(ctx context.Context, kind bulkKind, n int) (*sql.Stmt, error) {
	key := [2]int{int(kind), n}
	if stmt, ok := w.s.bulk[key]; ok {
		return stmt, nil
	}
	stmt, err := w.db.wconn.PrepareContext(ctx, bulkSQL(kind, n))
	if err != nil {
		return nil, fmt.Errorf("prepare %d-row insert: %w", n, err)
	}
	w.s.bulk[key] = stmt
	w.s.all = append(w.s.all, stmt)
	return stmt, nil
}

// create inserts the items that do not exist yet, with their INSERT change
// records, a hundred rows per statement, and returns how many it created.
func (w *writeTx) create(ctx context.Context, items []store.Item) (int, error) {
	created := 0
	for start := 0; start < len(items); start += bulkRows {
		n, err := w.createRows(ctx, items[start:min(start+bulkRows, len(items))])
		created += n
		if err != nil {
			return created, err
		}
	}
	return created, nil
}

func (w *writeTx) createRows(ctx context.Context, items []store.Item) (int, error) {
	rows := make([]store.Item, len(items))
	args := make([]any, 0, 10*len(items))
	for i, item := range items {
		rows[i] = normalize(item)
		rows[i].Version = 1
		args = append(args, itemArgs(rows[i])...)
	}
	inserted, err := w.insertReturning(ctx, len(rows), args)
	if err != nil {
		return 0, err
	}
	if len(inserted) == len(rows) {
		// Every row was new (a row that conflicts returns nothing).
		return len(rows), w.appendChanges(ctx, rows)
	}
	// Some keys exist, or repeat within the batch: record the inserted rows,
	// then take the others one by one (an expired item is replaced).
	var fresh, rest []store.Item
	for _, item := range rows {
		key := [2]string{item.PK, item.SK}
		if inserted[key] {
			fresh = append(fresh, item)
			delete(inserted, key) // a repeat of the key is not the inserted row
		} else {
			rest = append(rest, item)
		}
	}
	if err := w.appendChanges(ctx, fresh); err != nil {
		return 0, err
	}
	created := len(fresh)
	for _, item := range rest {
		ok, err := w.insertNew(ctx, item)
		if err != nil {
			return created, err
		}
		if !ok {
			continue
		}
		if err := w.appendChange(ctx, store.Insert, nil, &item); err != nil {
			return created, err
		}
		created++
	}
	return created, nil
}

// insertReturning runs the multi-row insert of n items and returns the keys
// it inserted.
func (w *writeTx) insertReturning(ctx context.Context, n int, args []any) (map[[2]string]bool, error) {
	stmt, err := w.bulkStmt(ctx, bulkItems, n)
	if err != nil {
		return nil, err
	}
	res, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("insert %d items: %w", n, err)
	}
	defer res.Close()
	inserted := make(map[[2]string]bool, n)
	for res.Next() {
		var pk, sk string
		if err := res.Scan(&pk, &sk); err != nil {
			return nil, fmt.Errorf("insert %d items: %w", n, err)
		}
		inserted[[2]string{pk, sk}] = true
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("insert %d items: %w", n, err)
	}
	return inserted, nil
}

// appendChanges records an INSERT change for each created item, in order.
func (w *writeTx) appendChanges(ctx context.Context, created []store.Item) error {
	for i := range created {
		if err := w.appendChange(ctx, store.Insert, nil, &created[i]); err != nil {
			return err
		}
	}
	return nil
}

// send inserts the messages, a hundred per statement.
func (w *writeTx) send(ctx context.Context, name string, msgs []queue.Outgoing) error {
	now := w.now.UnixMilli()
	for start := 0; start < len(msgs); start += bulkRows {
		chunk := msgs[start:min(start+bulkRows, len(msgs))]
		stmt, err := w.bulkStmt(ctx, bulkMessages, len(chunk))
		if err != nil {
			return err
		}
		args := make([]any, 0, 5*len(chunk))
		for _, m := range chunk {
			args = append(args, randomHex(16), name, m.Body, now+m.Delay.Milliseconds(), now)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("insert %d messages: %w", len(chunk), err)
		}
	}
	w.sentTo = append(w.sentTo, name)
	return nil
}

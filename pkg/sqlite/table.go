package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Table is the store.Table on the database's items table. Every write also
// appends its change record to the change log in the same transaction.
type Table struct{ db *DB }

var _ store.Table = (*Table)(nil)

// Table returns the database's table.
func (db *DB) Table() *Table { return &Table{db: db} }

// Key and item size limits, the same as DynamoDB's so that an item that fits
// locally fits in the cloud too.
const (
	maxPKBytes   = 2048
	maxSKBytes   = 1024
	maxItemBytes = 400 * 1024
)

// createChunk is how many items Create writes per transaction.
const createChunk = 4000

// Get returns the item with the key, or store.ErrNotFound.
func (t *Table) Get(ctx context.Context, pk, sk string) (store.Item, error) {
	row := t.db.queryRow(ctx, `SELECT `+itemColumns+` FROM items WHERE pk = ? AND sk = ?`, pk, sk)
	item, err := scanItem(row)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && expired(item, t.db.now().Unix())) {
		return store.Item{}, fmt.Errorf("get %q/%q: %w", pk, sk, store.ErrNotFound)
	}
	if err != nil {
		return store.Item{}, fmt.Errorf("get %q/%q: %w", pk, sk, err)
	}
	return item, nil
}

// Put writes the whole item if cond holds and returns it as stored.
func (t *Table) Put(ctx context.Context, item store.Item, cond store.Cond) (store.Item, error) {
	if err := validateItem(item); err != nil {
		return store.Item{}, fmt.Errorf("put: %w", err)
	}
	var stored store.Item
	err := t.db.write(ctx, func(ctx context.Context, w *writeTx) error {
		var err error
		stored, err = w.put(ctx, item, cond)
		return err
	})
	if err != nil {
		return store.Item{}, fmt.Errorf("put %q/%q: %w", item.PK, item.SK, err)
	}
	return stored, nil
}

// Create writes each item that does not exist yet and returns how many it
// created. Items are written in transactions of a few thousand.
func (t *Table) Create(ctx context.Context, items []store.Item) (int, error) {
	for i, item := range items {
		if err := validateItem(item); err != nil {
			return 0, fmt.Errorf("create: item %d: %w", i, err)
		}
	}
	created := 0
	for start := 0; start < len(items); start += createChunk {
		chunk := items[start:min(start+createChunk, len(items))]
		err := t.db.write(ctx, func(ctx context.Context, w *writeTx) error {
			n, err := w.create(ctx, chunk)
			created += n
			return err
		})
		if err != nil {
			return created, fmt.Errorf("create items %d..%d: %w", start, start+len(chunk)-1, err)
		}
	}
	return created, nil
}

// Delete removes the item if cond holds; a missing item with cond Always is
// not an error.
func (t *Table) Delete(ctx context.Context, pk, sk string, cond store.Cond) error {
	if err := validateKey(pk, sk); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	err := t.db.write(ctx, func(ctx context.Context, w *writeTx) error {
		return w.delete(ctx, pk, sk, cond)
	})
	if err != nil {
		return fmt.Errorf("delete %q/%q: %w", pk, sk, err)
	}
	return nil
}

// Add adds deltas to the item's counters, creating the item when missing, and
// returns it as stored. With a guard, the guarded counter must end ≤ Max.
func (t *Table) Add(ctx context.Context, pk, sk string, deltas map[string]int64, guard *store.Guard) (store.Item, error) {
	if err := validateKey(pk, sk); err != nil {
		return store.Item{}, fmt.Errorf("add: %w", err)
	}
	var stored store.Item
	err := t.db.write(ctx, func(ctx context.Context, w *writeTx) error {
		var err error
		stored, err = w.add(ctx, pk, sk, deltas, guard)
		return err
	})
	if err != nil {
		return store.Item{}, fmt.Errorf("add to %q/%q: %w", pk, sk, err)
	}
	return stored, nil
}

// current returns the live item with the key, or nil. An expired item found
// on the way is purged (with its REMOVE change) and reported missing.
func (w *writeTx) current(ctx context.Context, pk, sk string) (*store.Item, error) {
	item, err := scanItem(w.s.getItem.QueryRowContext(ctx, pk, sk))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read item: %w", err)
	}
	if expired(item, w.now.Unix()) {
		return nil, w.remove(ctx, &item)
	}
	return &item, nil
}

func (w *writeTx) put(ctx context.Context, item store.Item, cond store.Cond) (store.Item, error) {
	old, err := w.current(ctx, item.PK, item.SK)
	if err != nil {
		return store.Item{}, err
	}
	if err := checkCond(old, cond); err != nil {
		return store.Item{}, err
	}
	stored := normalize(item)
	stored.Version = versionOf(old) + 1
	return stored, w.upsert(ctx, old, stored)
}

func (w *writeTx) delete(ctx context.Context, pk, sk string, cond store.Cond) error {
	old, err := w.current(ctx, pk, sk)
	if err != nil {
		return err
	}
	if err := checkCond(old, cond); err != nil {
		return err
	}
	if old == nil {
		return nil
	}
	return w.remove(ctx, old)
}

func (w *writeTx) add(ctx context.Context, pk, sk string, deltas map[string]int64, guard *store.Guard) (store.Item, error) {
	old, err := w.current(ctx, pk, sk)
	if err != nil {
		return store.Item{}, err
	}
	stored := store.Item{PK: pk, SK: sk}
	if old != nil {
		stored = *old
	}
	stored.Counters = maps.Clone(stored.Counters)
	if stored.Counters == nil {
		stored.Counters = make(map[string]int64, len(deltas))
	}
	for name, d := range deltas {
		stored.Counters[name] += d
	}
	if guard != nil && stored.Counters[guard.Counter] > guard.Max {
		return store.Item{}, fmt.Errorf("guard %s ≤ %d: %w", guard.Counter, guard.Max, store.ErrConditionFailed)
	}
	stored = normalize(stored)
	stored.Version = versionOf(old) + 1
	return stored, w.upsert(ctx, old, stored)
}

// insertNew inserts the item unless a live one has its key.
func (w *writeTx) insertNew(ctx context.Context, item store.Item) (bool, error) {
	args := itemArgs(item)
	res, err := w.s.insertItem.ExecContext(ctx, args...)
	if err != nil {
		return false, fmt.Errorf("insert item %q/%q: %w", item.PK, item.SK, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	// Present: only an expired item may be replaced (current purges it).
	old, err := w.current(ctx, item.PK, item.SK)
	if err != nil || old != nil {
		return false, err
	}
	if _, err := w.s.insertItem.ExecContext(ctx, args...); err != nil {
		return false, fmt.Errorf("insert item %q/%q: %w", item.PK, item.SK, err)
	}
	return true, nil
}

// upsert stores item over old (nil when missing) and records the change.
func (w *writeTx) upsert(ctx context.Context, old *store.Item, item store.Item) error {
	if _, err := w.s.upsertItem.ExecContext(ctx, itemArgs(item)...); err != nil {
		return fmt.Errorf("write item: %w", err)
	}
	kind := store.Modify
	if old == nil {
		kind = store.Insert
	}
	return w.appendChange(ctx, kind, old, &item)
}

// remove deletes the item and records the change.
func (w *writeTx) remove(ctx context.Context, old *store.Item) error {
	if _, err := w.s.deleteItem.ExecContext(ctx, old.PK, old.SK); err != nil {
		return fmt.Errorf("delete item: %w", err)
	}
	return w.appendChange(ctx, store.Remove, old, nil)
}

func checkCond(old *store.Item, cond store.Cond) error {
	var ok bool
	switch cond.Kind {
	case store.Always:
		ok = true
	case store.IfNotExists:
		ok = old == nil
	case store.IfExists:
		ok = old != nil
	case store.IfVersion:
		ok = old != nil && old.Version == cond.Version
	default:
		return fmt.Errorf("unknown condition kind %d", cond.Kind)
	}
	if !ok {
		return fmt.Errorf("%s (stored version %d): %w", condName(cond), versionOf(old), store.ErrConditionFailed)
	}
	return nil
}

func condName(cond store.Cond) string {
	switch cond.Kind {
	case store.IfNotExists:
		return "if not exists"
	case store.IfExists:
		return "if exists"
	case store.IfVersion:
		return fmt.Sprintf("if version %d", cond.Version)
	}
	return "always"
}

func versionOf(item *store.Item) int64 {
	if item == nil {
		return 0
	}
	return item.Version
}

func expired(item store.Item, nowUnix int64) bool {
	return item.ExpiresAt > 0 && item.ExpiresAt < nowUnix
}

// normalize drops empty Data and Counters, so a stored item reads back equal.
func normalize(item store.Item) store.Item {
	if len(item.Data) == 0 {
		item.Data = nil
	}
	if len(item.Counters) == 0 {
		item.Counters = nil
	}
	return item
}

func validateKey(pk, sk string) error {
	switch {
	case pk == "" || sk == "":
		return errors.New("pk and sk must be non-empty")
	case len(pk) > maxPKBytes:
		return fmt.Errorf("pk is %d bytes, more than %d", len(pk), maxPKBytes)
	case len(sk) > maxSKBytes:
		return fmt.Errorf("sk is %d bytes, more than %d", len(sk), maxSKBytes)
	}
	return nil
}

func validateItem(item store.Item) error {
	if err := validateKey(item.PK, item.SK); err != nil {
		return err
	}
	if len(item.Data) > 0 && !json.Valid(item.Data) {
		return fmt.Errorf("item %q/%q: data is not valid JSON", item.PK, item.SK)
	}
	if item.ExpiresAt < 0 {
		return fmt.Errorf("item %q/%q: expires_at %d is negative", item.PK, item.SK, item.ExpiresAt)
	}
	size := len(item.PK) + len(item.SK) + len(item.GSI1PK) + len(item.GSI1SK) +
		len(item.GSI2PK) + len(item.GSI2SK) + len(item.Data)
	for name := range item.Counters {
		size += len(name) + 8
	}
	if size > maxItemBytes {
		return fmt.Errorf("item %q/%q: %d bytes, more than %d", item.PK, item.SK, size, maxItemBytes)
	}
	return nil
}

func itemArgs(item store.Item) []any {
	var counters any
	if len(item.Counters) > 0 {
		counters = encodeCounters(item.Counters)
	}
	var data any
	if len(item.Data) > 0 {
		data = []byte(item.Data)
	}
	return []any{item.PK, item.SK, nullable(item.GSI1PK), nullable(item.GSI1SK),
		nullable(item.GSI2PK), nullable(item.GSI2SK), data, counters, item.Version, item.ExpiresAt}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

type scanner interface{ Scan(dest ...any) error }

func scanItem(row scanner) (store.Item, error) {
	var (
		item                   store.Item
		g1pk, g1sk, g2pk, g2sk sql.NullString
		data                   []byte
		counters               sql.NullString
	)
	err := row.Scan(&item.PK, &item.SK, &g1pk, &g1sk, &g2pk, &g2sk, &data, &counters, &item.Version, &item.ExpiresAt)
	if err != nil {
		return store.Item{}, err
	}
	item.GSI1PK, item.GSI1SK, item.GSI2PK, item.GSI2SK = g1pk.String, g1sk.String, g2pk.String, g2sk.String
	if len(data) > 0 {
		item.Data = json.RawMessage(data)
	}
	if counters.Valid && counters.String != "" {
		var err error
		if item.Counters, err = decodeCounters(counters.String); err != nil {
			return store.Item{}, fmt.Errorf("decode counters of %q/%q: %w", item.PK, item.SK, err)
		}
	}
	return item, nil
}

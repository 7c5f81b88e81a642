// Package store defines the table port: a single-table key-value store of items
// addressed by a partition key and a sort key, with conditional writes, atomic
// counters, prefix/range queries over the base table and two global secondary
// indexes, transactions, and a change stream. SQLite (local) and DynamoDB (cloud)
// implement it; storetest holds the contract suite both pass.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// ErrNotFound reports that no item has the requested key.
var ErrNotFound = errors.New("store: item not found")

// ErrConditionFailed reports that a write's condition did not hold; nothing was written.
var ErrConditionFailed = errors.New("store: condition failed")

// ErrInvalidCursor reports a page cursor the table did not hand out
// (garbage, truncated, or for another index): the caller's mistake.
var ErrInvalidCursor = errors.New("store: invalid cursor")

// ErrTooManyOps reports a transaction larger than MaxTransactOps.
var ErrTooManyOps = errors.New("store: too many operations in one transaction")

// MaxTransactOps is the largest transaction every adapter supports (DynamoDB's limit).
const MaxTransactOps = 100

// Index names a view of the table to query.
type Index string

// The indexes every adapter provides.
const (
	Primary Index = ""     // pk + sk
	GSI1    Index = "gsi1" // gsi1pk + gsi1sk
	GSI2    Index = "gsi2" // gsi2pk + gsi2sk
)

// Item is one row of the single table. Data is the entity body, opaque to the
// table; Counters are numeric attributes that Add changes atomically.
type Item struct {
	PK     string `json:"pk"`
	SK     string `json:"sk"`
	GSI1PK string `json:"gsi1pk,omitempty"`
	GSI1SK string `json:"gsi1sk,omitempty"`
	GSI2PK string `json:"gsi2pk,omitempty"`
	GSI2SK string `json:"gsi2sk,omitempty"`
	// Data is the JSON-encoded entity. Nil for counter-only items.
	Data json.RawMessage `json:"data,omitempty"`
	// Counters hold named integers changed by Add; a Put replaces them.
	Counters map[string]int64 `json:"counters,omitempty"`
	// Version is maintained by the table: 1 on creation, +1 on every write
	// (Put or Add). A Put's own Version field is ignored except by IfVersion.
	Version int64 `json:"version"`
	// ExpiresAt is a Unix time in seconds after which the item may be deleted
	// (DynamoDB TTL); 0 means never.
	ExpiresAt int64 `json:"expires_at,omitempty"`
}

// CondKind selects the condition a write must satisfy.
type CondKind int

// Conditions on the current state of the item a write addresses.
const (
	Always      CondKind = iota // no condition
	IfNotExists                 // the item must not exist
	IfExists                    // the item must exist
	IfVersion                   // the item must exist with Version == Cond.Version
)

// Cond is a write condition.
type Cond struct {
	Kind    CondKind
	Version int64 // for IfVersion
}

// Guard bounds an Add: after applying the deltas, Counter must be ≤ Max.
// When the guard fails nothing changes and Add returns ErrConditionFailed.
type Guard struct {
	Counter string
	Max     int64
}

// Query selects items by partition key and an optional sort-key constraint.
// Prefix, when set, restricts sort keys to those starting with it; From and To
// (inclusive, either may be empty) bound the sort-key range. Results come in
// sort-key order (descending when Desc), at most Limit per page (0 = adapter
// default, ≤ 1000), continuing after Cursor (opaque, from a previous Page).
type Query struct {
	Index  Index
	PK     string
	Prefix string
	From   string
	To     string
	Desc   bool
	Limit  int
	Cursor string
}

// InRange reports whether sort key sk lies in the query's sort-key range
// (Prefix, From, To): where a cursor of this query can point. Adapters
// refuse a cursor outside it with ErrInvalidCursor, so a cursor of another
// query is an error, never a silent first page.
func (q Query) InRange(sk string) bool {
	return sk != "" && strings.HasPrefix(sk, q.Prefix) &&
		(q.From == "" || sk >= q.From) && (q.To == "" || sk <= q.To)
}

// Page is one page of a query. Cursor is empty on the last page.
type Page struct {
	Items  []Item
	Cursor string
}

// OpKind names the kind of one transaction operation.
type OpKind int

// Transaction operation kinds.
const (
	OpPut    OpKind = iota // put Item under Cond
	OpDelete               // delete Item.PK/Item.SK under Cond
	OpAdd                  // add Deltas to Item.PK/Item.SK counters (creating it), under Guard if set
	OpCheck                // require Cond on Item.PK/Item.SK; writes nothing
)

// Op is one operation of a transaction.
type Op struct {
	Kind   OpKind
	Item   Item
	Cond   Cond
	Deltas map[string]int64
	Guard  *Guard
}

// Table is the port every adapter implements. All methods are safe for
// concurrent use. Conditional failures return ErrConditionFailed (wrapped),
// missing items ErrNotFound.
type Table interface {
	// Get returns the item with the key, or ErrNotFound.
	Get(ctx context.Context, pk, sk string) (Item, error)
	// Put writes the whole item if cond holds and returns it as stored
	// (with its new Version).
	Put(ctx context.Context, item Item, cond Cond) (Item, error)
	// Create writes each item that does not exist yet and leaves existing ones
	// untouched; it returns how many it created. Used for idempotent fan-out.
	Create(ctx context.Context, items []Item) (int, error)
	// Delete removes the item if cond holds. Deleting a missing item with
	// cond Always is not an error.
	Delete(ctx context.Context, pk, sk string, cond Cond) error
	// Add atomically adds deltas to the item's counters, creating the item
	// (with no Data) when missing, and returns the item as stored.
	Add(ctx context.Context, pk, sk string, deltas map[string]int64, guard *Guard) (Item, error)
	// Query returns one page of items.
	Query(ctx context.Context, q Query) (Page, error)
	// Transact applies every op or none. A failed condition or guard returns
	// an error wrapping ErrConditionFailed.
	Transact(ctx context.Context, ops []Op) error
}

// ChangeKind says what a change did to an item.
type ChangeKind string

// Change kinds, named as DynamoDB Streams names them.
const (
	Insert ChangeKind = "INSERT"
	Modify ChangeKind = "MODIFY"
	Remove ChangeKind = "REMOVE"
)

// Change is one record of the change stream: the item's image before and after
// a write. Old is nil for an insert, New for a remove. ID is unique per change
// (the stream sequence number) and stable across redeliveries.
type Change struct {
	ID   string
	Kind ChangeKind
	Old  *Item
	New  *Item
	At   time.Time
}

// Stream reads the table's change stream in commit order from an opaque
// checkpoint ("" = from the beginning). It returns at most max changes and the
// checkpoint to resume after them; with nothing new it returns no changes and
// a checkpoint that resumes where this read started.
type Stream interface {
	Read(ctx context.Context, checkpoint string, max int) (changes []Change, next string, err error)
}

// Checkpoints persist a stream consumer's position, so a restarted consumer
// resumes where it left off (at-least-once: it may see the last batch again).
type Checkpoints interface {
	// Load returns the consumer's saved checkpoint, or "" when none is saved.
	Load(ctx context.Context, consumer string) (string, error)
	// Save records the consumer's checkpoint, replacing the previous one.
	Save(ctx context.Context, consumer, checkpoint string) error
}

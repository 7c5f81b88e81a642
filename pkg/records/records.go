// Package records is the single-table data model of every stored shape.
//
// It is the single-table data model: the one place that knows
// how every entity of gauntlet is laid out as store items (partition key,
// sort key, the two global secondary indexes, counters and TTL). The same
// layout serves SQLite locally and DynamoDB in the cloud; callers never build
// a key themselves.
//
// Key scheme (pk | sk):
//
//	WS#<ws>                     | WS                       workspace
//	WS#<ws>                     | BILLING                  billing status
//	WS#<ws>                     | USER#<user>              user
//	WS#<ws>                     | SECRET#workspace#<NAME>  secret record metadata (never a value)
//	WS#<ws>                     | SECRET#personal#<user>#<NAME>
//	WS#<ws>                     | BENCH#<key>              benchmark (sync status, ready version)
//	WS#<ws>                     | SYNCSTATE#<key>          last sync + refresh state; gsi1 BENCHMARKS | <last synced>#<ws>#<key> (benchindex.go)
//	WS#<ws>                     | IDEM#<key>               idempotency key → run id (TTL)
//	TOKEN#<sha256 hex>          | TOKEN                    API token → user, workspace
//	BENCH#<ws>#<key>            | VER#<version>            manifest version (header, no tasks)
//	BENCH#<ws>#<key>            | BOARD                    leaderboard head (generation, parts; boards.go)
//	BENCH#<ws>#<key>            | BOARD#<gen>#<metric>#…   leaderboard part: some rows of one ranked group
//	BENCH#<ws>#<key>            | BOARDSEQ                 leaderboard watermark counter "seq"
//	BENCH#<ws>#<key>#V#<version>| TASK#<name>              task of a manifest version
//	RUN#<run>                   | RUN                      run
//	RUN#<run>                   | AGENT#<nn>               run agent (nn = zero-padded index)
//	RUN#<run>                   | TALLY                    run counters (done, passed, tokens, …)
//	RUN#<run>                   | TALLY#<nn>               agent counters
//	RUN#<run>                   | GATE                     run concurrency counter "active"
//	RUN#<run>                   | METRICS                  run metrics (recomputed from results)
//	RUN#<run>                   | METRICS#CAT#<gen>#<part> per-category scores spilled from a large METRICS
//	RUN#<run>                   | METRICS#TASKS#<n>#<part> per-task tallies of a finished run's agents (n: results covered)
//	RUN#<run>                   | SLOT#<slot>              slot (<agent>/<task>/<attempt>)
//	RUN#<run>                   | RESULT#<slot>#G<gen>     attempt result of one generation
//	RUN#<run>                   | LOG#<unix nanos>#<hash>  run log line (TTL)
//	ACTIVE_RUNS                 | RUN#<run>                marker of a run not yet terminal
//	PLATFORM                    | SANDBOXES                global sandbox counter "active"
//
// Global secondary indexes (both sparse):
//
//	gsi1  WS#<ws>#RUNS          | <created>#<run>          runs of a workspace, by creation time
//	gsi1  RUN#<run>#ACTIVE      | <slot>                   slots launching or running (watchdog, stop)
//	gsi2  BENCH#<ws>#<key>#RUNS | <created>#<run>          runs of a benchmark, by creation time
//	gsi2  RUN#<run>#QUEUED      | <slot>                   slots waiting for dispatch (stop)
//
// Access patterns: a run page reads RUN#<run> by sort-key prefix (agents,
// tallies, results, logs); the run list reads gsi1 newest first; the
// leaderboard recompute reads gsi2 BENCH…#RUNS then each finished run's
// METRICS, and the per-task tallies of the runs that make the board; the
// watchdog reads ACTIVE_RUNS then gsi1 RUN#…#ACTIVE; stop reads gsi2
// RUN#…#QUEUED and gsi1 RUN#…#ACTIVE; dispatch reads one TASK item per slot
// (immutable, cacheable). Nothing scans.
//
// The Store is one repository per aggregate on that one key scheme: Runs
// (runs, agents, slots, results, tallies, gates, metrics, log lines),
// Benchmarks (benchmark records, sync state and sources, manifests and
// tasks, image builds, environment checks, the refresh index), Workspaces
// (workspaces and their index, users, tokens, billing, secret records,
// idempotency keys, operators) and Boards (leaderboards). Transactions that
// span aggregates (a run's creation checks its benchmark) are built from
// the Op constructors and applied with Store.Transact or Ops.Transact.
//
// Read-modify-write goes through Update-style methods that take a closure:
// they read the item, apply the closure, and write with an IfVersion
// condition, retrying a bounded number of times on a concurrent write.
// Benchmarks.UpdateSync does the same over a benchmark and its refresh
// state together, in one transaction.
package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// ErrNotFound reports a missing entity; it wraps store.ErrNotFound.
var ErrNotFound = store.ErrNotFound

// ErrConflict reports a write that conflicts with what is stored (for example
// an idempotency key reused with a different request).
var ErrConflict = errors.New("records: conflict")

// ErrContention reports an Update that lost to concurrent writers on every
// one of its attempts.
var ErrContention = errors.New("records: too much write contention")

// ErrNoChange, returned by an Update closure, ends the update without writing
// and without error: the caller gets the current value back.
var ErrNoChange = errors.New("records: no change")

// updateAttempts bounds the read-modify-write retries of Update.
const updateAttempts = 32

// Store is the data model on one table: one repository per aggregate, all
// on the one key scheme above. Each repository is what a stage may read and
// write of its aggregate; a consumer takes the few methods it calls as an
// interface it declares.
type Store struct {
	// Runs holds runs and what hangs off them: agents, slots, attempt
	// results, tallies, gates, metrics and log lines.
	Runs *Runs
	// Benchmarks holds benchmark records with their sync state and sources,
	// manifest versions and tasks, image builds, environment checks and
	// the refresh index.
	Benchmarks *Benchmarks
	// Workspaces holds workspaces (and their index), users, tokens,
	// billing, secret records, idempotency keys and platform operators.
	Workspaces *Workspaces
	// Boards holds leaderboards: heads, parts and watermarks.
	Boards *Boards

	tbl store.Table
}

// New returns a Store on the table.
func New(tbl store.Table) *Store {
	t := table{tbl: tbl}
	return &Store{Runs: &Runs{t}, Benchmarks: &Benchmarks{t}, Workspaces: &Workspaces{t}, Boards: &Boards{t}, tbl: tbl}
}

// Runs is the repository of runs: the run, its agents, slots, attempt
// results, counters, concurrency gates, metrics and log lines.
type Runs struct{ table }

// Benchmarks is the repository of benchmarks: records, sync state and
// sources, manifest versions and tasks, image builds, environment checks.
type Benchmarks struct{ table }

// Workspaces is the repository of workspaces: the workspace and its index,
// users, tokens, billing, secret records, idempotency keys and operators.
type Workspaces struct{ table }

// Boards is the repository of leaderboards.
type Boards struct{ table }

// table is what every repository shares: the table and the untyped JSON
// helpers that read and write on it.
type table struct {
	tbl store.Table
}

// Table returns the underlying table (for transactions built from the Op
// constructors of this package).
func (s *Store) Table() store.Table { return s.tbl }

// Transact applies the ops atomically, splitting nothing: callers keep their
// transactions within store.MaxTransactOps.
func (s *Store) Transact(ctx context.Context, ops []store.Op) error { return s.tbl.Transact(ctx, ops) }

// codec tells the generic helpers how one entity type maps to items.
type codec[T any] struct {
	name       string
	item       func(*T) (store.Item, error)
	setVersion func(*T, int64)
}

func encode(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return b, nil
}

func decode[T any](c codec[T], it store.Item) (T, error) {
	var v T
	if err := json.Unmarshal(it.Data, &v); err != nil {
		return v, fmt.Errorf("decode %s %s|%s: %w", c.name, it.PK, it.SK, err)
	}
	if c.setVersion != nil {
		c.setVersion(&v, it.Version)
	}
	return v, nil
}

func get[T any](ctx context.Context, tbl store.Table, c codec[T], pk, sk string) (T, error) {
	it, err := tbl.Get(ctx, pk, sk)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("get %s %s|%s: %w", c.name, pk, sk, err)
	}
	return decode(c, it)
}

// update is the bounded optimistic read-modify-write every Update method uses.
// fn runs once per try: a write that loses its version condition reads the
// item again and calls fn on what the competitor stored, so fn must decide
// everything it reports to its caller afresh on each call.
func update[T any](ctx context.Context, tbl store.Table, c codec[T], pk, sk string, fn func(*T) error) (T, error) {
	var zero T
	for range updateAttempts {
		it, err := tbl.Get(ctx, pk, sk)
		if err != nil {
			return zero, fmt.Errorf("update %s %s|%s: %w", c.name, pk, sk, err)
		}
		v, err := decode(c, it)
		if err != nil {
			return zero, err
		}
		if err := fn(&v); err != nil {
			if errors.Is(err, ErrNoChange) {
				return v, nil
			}
			return zero, err
		}
		next, err := c.item(&v)
		if err != nil {
			return zero, err
		}
		next.Counters, next.ExpiresAt = it.Counters, it.ExpiresAt
		stored, err := tbl.Put(ctx, next, store.Cond{Kind: store.IfVersion, Version: it.Version})
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		if err != nil {
			return zero, fmt.Errorf("update %s %s|%s: %w", c.name, pk, sk, err)
		}
		if c.setVersion != nil {
			c.setVersion(&v, stored.Version)
		}
		return v, nil
	}
	return zero, fmt.Errorf("update %s %s|%s: %w", c.name, pk, sk, ErrContention)
}

// put writes the entity under cond and returns it with its new version.
func put[T any](ctx context.Context, tbl store.Table, c codec[T], v T, cond store.Cond) (T, error) {
	it, err := c.item(&v)
	if err != nil {
		return v, err
	}
	stored, err := tbl.Put(ctx, it, cond)
	if err != nil {
		return v, fmt.Errorf("put %s %s|%s: %w", c.name, it.PK, it.SK, err)
	}
	if c.setVersion != nil {
		c.setVersion(&v, stored.Version)
	}
	return v, nil
}

// queryAll pages through a query and decodes every item.
func queryAll[T any](ctx context.Context, tbl store.Table, c codec[T], q store.Query) ([]T, error) {
	var out []T
	for {
		page, err := tbl.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("query %s %s %q: %w", c.name, q.PK, q.Prefix, err)
		}
		for _, it := range page.Items {
			v, err := decode(c, it)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		if page.Cursor == "" {
			return out, nil
		}
		q.Cursor = page.Cursor
	}
}

// queryPage returns one decoded page of a query and the cursor of the next.
func queryPage[T any](ctx context.Context, tbl store.Table, c codec[T], q store.Query) ([]T, string, error) {
	page, err := tbl.Query(ctx, q)
	if err != nil {
		return nil, "", fmt.Errorf("query %s %s %q: %w", c.name, q.PK, q.Prefix, err)
	}
	out := make([]T, 0, len(page.Items))
	for _, it := range page.Items {
		v, err := decode(c, it)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, page.Cursor, nil
}

// putOp builds a transaction Put of the entity under cond.
func putOp[T any](c codec[T], v T, cond store.Cond) (store.Op, error) {
	it, err := c.item(&v)
	if err != nil {
		return store.Op{}, err
	}
	return store.Op{Kind: store.OpPut, Item: it, Cond: cond}, nil
}

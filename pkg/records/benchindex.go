package records

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Items of the benchmark refresh index (added to the key scheme above):
//
//	WS#<ws>     | SYNCSTATE#<key>   sync state of a benchmark that has synced at least once
//	gsi1  BENCHMARKS | <last synced>#<ws>#<key>   every synced benchmark of every workspace, oldest sync first
//
// The index is sparse: a benchmark enters it when its first sync succeeds
// and leaves it when it is deleted. The scheduled refresh reads the range of
// the BENCHMARKS partition below a cutoff time, so finding the due
// benchmarks never scans the table. On DynamoDB the GSI is eventually
// consistent: a read may miss a benchmark that just became due (the next
// schedule finds it) or list one at its previous sync time (its refresh
// message then carries that time and the refresh sees it is not due).

// refreshIndexPK is the gsi1 partition of the refresh index.
const refreshIndexPK = "BENCHMARKS"

func syncStateSK(key string) string { return "SYNCSTATE#" + key }

// RefreshState is the refresh bookkeeping of a benchmark that has synced:
// when its task list last synced successfully and how its background
// refresh is going. It lives beside the benchmark record so a refresh never
// rewrites that record except to switch its ready version, and a failed
// refresh never touches its status.
type RefreshState struct {
	Workspace string `json:"workspace"`
	Key       string `json:"key"`
	// LastSynced is when the last sync or refresh succeeded (the index's
	// sort key).
	LastSynced time.Time `json:"last_synced"`
	// RefreshStarted is when the refresh that holds the lease claimed it;
	// zero when no refresh runs.
	RefreshStarted time.Time `json:"refresh_started,omitzero"`
	// RefreshUpdatedAt is the running refresh's last progress; the lease
	// runs from it.
	RefreshUpdatedAt time.Time `json:"refresh_updated_at,omitzero"`
	// RefreshSynced and RefreshTotal are the running refresh's progress.
	RefreshSynced int `json:"refresh_synced,omitempty"`
	RefreshTotal  int `json:"refresh_total,omitempty"`
	// RefreshError is why the last refresh failed; "" after a success.
	RefreshError string `json:"refresh_error,omitempty"`
	// RefreshFailedAt is when the last refresh failed.
	RefreshFailedAt time.Time `json:"refresh_failed_at,omitzero"`

	Version int64 `json:"-"`
}

// Refreshing reports whether a refresh holds the lease (started and not
// finished; the caller judges whether it expired).
func (st RefreshState) Refreshing() bool { return !st.RefreshStarted.IsZero() }

var syncStateCodec = codec[RefreshState]{
	name: "benchmark sync state",
	item: func(st *RefreshState) (store.Item, error) {
		data, err := encode(st)
		if err != nil {
			return store.Item{}, err
		}
		return store.Item{
			PK: wsPK(st.Workspace), SK: syncStateSK(st.Key), Data: data,
			GSI1PK: refreshIndexPK, GSI1SK: timeKey(st.LastSynced) + "#" + st.Workspace + "#" + st.Key,
		}, nil
	},
	setVersion: func(st *RefreshState, v int64) { st.Version = v },
}

// RefreshState returns the benchmark's refresh state; ErrNotFound before
// its first successful sync.
func (s *Benchmarks) RefreshState(ctx context.Context, ws, key string) (RefreshState, error) {
	return get(ctx, s.tbl, syncStateCodec, wsPK(ws), syncStateSK(key))
}

// DeleteRefreshState removes the benchmark from the refresh index; a
// missing state is not an error.
func (s *Benchmarks) DeleteRefreshState(ctx context.Context, ws, key string) error {
	if err := s.tbl.Delete(ctx, wsPK(ws), syncStateSK(key), store.Cond{}); err != nil {
		return fmt.Errorf("delete sync state of %s: %w", key, err)
	}
	return nil
}

// SyncedBefore returns the sync state of every benchmark, in every
// workspace, whose last successful sync is before cutoff, oldest first: a
// range read of the refresh index (eventually consistent on DynamoDB; see
// the index's comment).
func (s *Benchmarks) SyncedBefore(ctx context.Context, cutoff time.Time) ([]RefreshState, error) {
	// Sort keys are "<time>#<ws>#<key>": the bare cutoff time sorts after
	// every key of an earlier time and before every key of its own, so the
	// inclusive upper bound selects exactly the older ones.
	return queryAll(ctx, s.tbl, syncStateCodec, store.Query{Index: store.GSI1, PK: refreshIndexPK, To: timeKey(cutoff)})
}

// SyncState is a benchmark's sync state as a sync or refresh reads and
// changes it in one step: the benchmark record (status, progress, ready
// version) and its refresh bookkeeping (the refresh index entry).
type SyncState struct {
	Benchmark Benchmark
	// Refresh is the benchmark's refresh state; before its first successful
	// sync none is stored (Refresh.Version is 0) and Refresh is zero but
	// for Workspace and Key.
	Refresh RefreshState
}

// UpdateSync applies fn to the benchmark's sync state and writes back what
// fn changed — the benchmark record, its refresh state, or both — in one
// transaction that also requires the part fn left alone to be unchanged
// since it was read (a refresh state that was not stored still absent): a
// write lands only while everything fn read is still what is stored. A
// lost race reads both again and calls fn again, a bounded number of times
// (ErrContention after), so fn must decide afresh on each call. The
// benchmark must exist (ErrNotFound). fn may return ErrNoChange to write
// nothing; a closure that changes nothing writes nothing either. It returns
// the sync state as written.
func (s *Benchmarks) UpdateSync(ctx context.Context, ws, key string, fn func(*SyncState) error) (SyncState, error) {
	for range updateAttempts {
		st, err := s.readSync(ctx, ws, key)
		if err != nil {
			return SyncState{}, err
		}
		before, err := syncItems(&st)
		if err != nil {
			return SyncState{}, err
		}
		if err := fn(&st); err != nil {
			if errors.Is(err, ErrNoChange) {
				return st, nil
			}
			return SyncState{}, err
		}
		// fn may not move the items elsewhere: they keep their keys.
		st.Benchmark.Workspace, st.Benchmark.Key = ws, key
		st.Refresh.Workspace, st.Refresh.Key = ws, key
		after, err := syncItems(&st)
		if err != nil {
			return SyncState{}, err
		}
		ops, changed := syncOps(before, after, st)
		if !changed {
			return st, nil
		}
		err = s.tbl.Transact(ctx, ops)
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		if err != nil {
			return SyncState{}, fmt.Errorf("update sync state of benchmark %s: %w", key, err)
		}
		// Every write adds one to an item's version (1 on creation).
		for i, op := range ops {
			if op.Kind != store.OpPut {
				continue
			}
			if i == 0 {
				st.Benchmark.Version++
			} else {
				st.Refresh.Version++
			}
		}
		return st, nil
	}
	return SyncState{}, fmt.Errorf("update sync state of benchmark %s: %w", key, ErrContention)
}

// readSync reads the benchmark and its refresh state (a new one, version 0,
// when none is stored).
func (s *Benchmarks) readSync(ctx context.Context, ws, key string) (SyncState, error) {
	b, err := s.Benchmark(ctx, ws, key)
	if err != nil {
		return SyncState{}, err
	}
	st, err := s.RefreshState(ctx, ws, key)
	switch {
	case errors.Is(err, ErrNotFound):
		return SyncState{Benchmark: b, Refresh: RefreshState{Workspace: ws, Key: key}}, nil
	case err != nil:
		return SyncState{}, err
	}
	return SyncState{Benchmark: b, Refresh: st}, nil
}

// syncItems encodes the two items of a sync state.
func syncItems(st *SyncState) ([2]store.Item, error) {
	b, err := benchCodec.item(&st.Benchmark)
	if err != nil {
		return [2]store.Item{}, err
	}
	r, err := syncStateCodec.item(&st.Refresh)
	if err != nil {
		return [2]store.Item{}, err
	}
	return [2]store.Item{b, r}, nil
}

// syncOps builds UpdateSync's transaction from the items before and after
// fn: the benchmark's op first, then the refresh state's; a changed item
// is put, an unchanged one checked, each under the condition that it is
// still as read. changed is false when fn changed neither.
func syncOps(before, after [2]store.Item, st SyncState) (ops []store.Op, changed bool) {
	conds := [2]store.Cond{{Kind: store.IfVersion, Version: st.Benchmark.Version}, {Kind: store.IfNotExists}}
	if st.Refresh.Version > 0 {
		conds[1] = store.Cond{Kind: store.IfVersion, Version: st.Refresh.Version}
	}
	ops = make([]store.Op, 2)
	for i := range after {
		if sameItem(before[i], after[i]) {
			ops[i] = store.Op{Kind: store.OpCheck, Item: store.Item{PK: after[i].PK, SK: after[i].SK}, Cond: conds[i]}
			continue
		}
		ops[i] = store.Op{Kind: store.OpPut, Item: after[i], Cond: conds[i]}
		changed = true
	}
	return ops, changed
}

func sameItem(a, b store.Item) bool {
	return bytes.Equal(a.Data, b.Data) && a.GSI1PK == b.GSI1PK && a.GSI1SK == b.GSI1SK
}

package records

import (
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

// SyncState is the refresh bookkeeping of a benchmark that has synced:
// when its task list last synced successfully and how its background
// refresh is going. It lives beside the benchmark record so a refresh never
// rewrites that record except to switch its ready version, and a failed
// refresh never touches its status.
type SyncState struct {
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
func (st SyncState) Refreshing() bool { return !st.RefreshStarted.IsZero() }

var syncStateCodec = codec[SyncState]{
	name: "benchmark sync state",
	item: func(st *SyncState) (store.Item, error) {
		data, err := encode(st)
		if err != nil {
			return store.Item{}, err
		}
		return store.Item{
			PK: wsPK(st.Workspace), SK: syncStateSK(st.Key), Data: data,
			GSI1PK: refreshIndexPK, GSI1SK: timeKey(st.LastSynced) + "#" + st.Workspace + "#" + st.Key,
		}, nil
	},
	setVersion: func(st *SyncState, v int64) { st.Version = v },
}

// SyncState returns the benchmark's sync state; ErrNotFound before its
// first successful sync.
func (s *Store) SyncState(ctx context.Context, ws, key string) (SyncState, error) {
	return get(ctx, s.tbl, syncStateCodec, wsPK(ws), syncStateSK(key))
}

// UpdateSyncState applies fn to the stored sync state and writes it back
// (ErrNotFound when there is none).
func (s *Store) UpdateSyncState(ctx context.Context, ws, key string, fn func(*SyncState) error) (SyncState, error) {
	return update(ctx, s.tbl, syncStateCodec, wsPK(ws), syncStateSK(key), fn)
}

// DeleteSyncState removes the benchmark from the refresh index; a missing
// state is not an error.
func (s *Store) DeleteSyncState(ctx context.Context, ws, key string) error {
	if err := s.tbl.Delete(ctx, wsPK(ws), syncStateSK(key), store.Cond{}); err != nil {
		return fmt.Errorf("delete sync state of %s: %w", key, err)
	}
	return nil
}

// SyncedBefore returns the sync state of every benchmark, in every
// workspace, whose last successful sync is before cutoff, oldest first: a
// range read of the refresh index (eventually consistent on DynamoDB; see
// the index's comment).
func (s *Store) SyncedBefore(ctx context.Context, cutoff time.Time) ([]SyncState, error) {
	// Sort keys are "<time>#<ws>#<key>": the bare cutoff time sorts after
	// every key of an earlier time and before every key of its own, so the
	// inclusive upper bound selects exactly the older ones.
	return queryAll(ctx, s.tbl, syncStateCodec, store.Query{Index: store.GSI1, PK: refreshIndexPK, To: timeKey(cutoff)})
}

// UpdateBenchmarkSynced applies fn to the benchmark and its sync state and
// writes both in one transaction, each under a version condition, retrying
// a bounded number of times on a concurrent write. A benchmark without a
// sync state gets a new one (Workspace and Key set, the rest zero) that the
// transaction creates. fn may return ErrNoChange to write nothing.
func (s *Store) UpdateBenchmarkSynced(ctx context.Context, ws, key string, fn func(*Benchmark, *SyncState) error) (Benchmark, SyncState, error) {
	for range updateAttempts {
		b, st, stCond, err := s.readSynced(ctx, ws, key)
		if err != nil {
			return Benchmark{}, SyncState{}, err
		}
		if err := fn(&b, &st); err != nil {
			if errors.Is(err, ErrNoChange) {
				return b, st, nil
			}
			return Benchmark{}, SyncState{}, err
		}
		benchOp, err := putOp(benchCodec, b, store.Cond{Kind: store.IfVersion, Version: b.Version})
		if err != nil {
			return Benchmark{}, SyncState{}, err
		}
		stateOp, err := putOp(syncStateCodec, st, stCond)
		if err != nil {
			return Benchmark{}, SyncState{}, err
		}
		err = s.tbl.Transact(ctx, []store.Op{benchOp, stateOp})
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		if err != nil {
			return Benchmark{}, SyncState{}, fmt.Errorf("update benchmark %s and its sync state: %w", key, err)
		}
		// Transactions do not return the stored items; read the versions
		// back so callers can keep updating.
		return s.syncedAfterWrite(ctx, ws, key)
	}
	return Benchmark{}, SyncState{}, fmt.Errorf("update benchmark %s and its sync state: %w", key, ErrContention)
}

// readSynced reads the benchmark and its sync state (a new one when none
// is stored) and the condition that writing the state back needs.
func (s *Store) readSynced(ctx context.Context, ws, key string) (Benchmark, SyncState, store.Cond, error) {
	b, err := s.Benchmark(ctx, ws, key)
	if err != nil {
		return Benchmark{}, SyncState{}, store.Cond{}, err
	}
	st, err := s.SyncState(ctx, ws, key)
	switch {
	case errors.Is(err, ErrNotFound):
		return b, SyncState{Workspace: ws, Key: key}, store.Cond{Kind: store.IfNotExists}, nil
	case err != nil:
		return Benchmark{}, SyncState{}, store.Cond{}, err
	}
	return b, st, store.Cond{Kind: store.IfVersion, Version: st.Version}, nil
}

func (s *Store) syncedAfterWrite(ctx context.Context, ws, key string) (Benchmark, SyncState, error) {
	b, err := s.Benchmark(ctx, ws, key)
	if err != nil {
		return Benchmark{}, SyncState{}, err
	}
	st, err := s.SyncState(ctx, ws, key)
	if err != nil {
		return Benchmark{}, SyncState{}, err
	}
	return b, st, nil
}

package records

import (
	"context"
	"errors"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Transaction op constructors: the pipeline composes these into one
// store.Transact call so a state change, its counters and its log line land
// together or not at all.

// CreateRunOp creates the run (it must not exist) and its active marker.
func CreateRunOp(r run.Run) ([]store.Op, error) {
	op, err := putOp(runCodec, r, store.Cond{Kind: store.IfNotExists})
	if err != nil {
		return nil, err
	}
	marker := store.Op{Kind: store.OpPut, Item: store.Item{PK: activeRunsPK, SK: "RUN#" + r.ID}}
	return []store.Op{op, marker}, nil
}

// BenchmarkExistsOp checks, inside a transaction, that the workspace's
// benchmark record still exists: a run created against it must not outlive
// a concurrent delete.
func BenchmarkExistsOp(ws, key string) store.Op {
	return store.Op{Kind: store.OpCheck, Item: store.Item{PK: wsPK(ws), SK: "BENCH#" + key}, Cond: store.Cond{Kind: store.IfExists}}
}

// RunOp writes the run if its stored version is still r.Version.
func RunOp(r run.Run) (store.Op, error) {
	return putOp(runCodec, r, store.Cond{Kind: store.IfVersion, Version: r.Version})
}

// CreateAgentOp creates a run agent (it must not exist).
func CreateAgentOp(a run.Agent) (store.Op, error) {
	return putOp(agentCodec, a, store.Cond{Kind: store.IfNotExists})
}

// SlotOp writes the slot if its stored version is still s.Version.
func SlotOp(s run.Slot) (store.Op, error) {
	return putOp(slotCodec, s, store.Cond{Kind: store.IfVersion, Version: s.Version})
}

// ResultOp creates the attempt result; it fails if a result for the same
// run, slot and generation exists (the idempotency key of ingestion).
func ResultOp(r run.Result) (store.Op, error) {
	return putOp(resultCodec, r, store.Cond{Kind: store.IfNotExists})
}

// RunTallyOp adds the tally to the run's counters.
func RunTallyOp(runID string, t run.Tally) store.Op {
	return store.Op{Kind: store.OpAdd, Item: store.Item{PK: runPK(runID), SK: "TALLY"}, Deltas: t.Counters()}
}

// AgentTallyOp adds the tally to one agent's counters.
func AgentTallyOp(runID string, idx int, t run.Tally) store.Op {
	return store.Op{Kind: store.OpAdd, Item: store.Item{PK: runPK(runID), SK: agentTallySK(idx)}, Deltas: t.Counters()}
}

// RunGateOp adds delta to the run's concurrency counter; with max > 0 the
// result must stay ≤ max (the max_concurrent_attempts gate).
func RunGateOp(runID string, delta, max int64) store.Op {
	return gateOp(runPK(runID), "GATE", delta, max)
}

// GlobalGateOp adds delta to the platform-wide sandbox counter; with max > 0
// the result must stay ≤ max.
func GlobalGateOp(delta, max int64) store.Op {
	return gateOp(platformPK, sandboxesSK, delta, max)
}

func gateOp(pk, sk string, delta, max int64) store.Op {
	op := store.Op{Kind: store.OpAdd, Item: store.Item{PK: pk, SK: sk}, Deltas: map[string]int64{gateCounter: delta}}
	if max > 0 {
		op.Guard = &store.Guard{Counter: gateCounter, Max: max}
	}
	return op
}

// LogOp writes a run log line.
func LogOp(l LogLine) (store.Op, error) { return putOp(logCodec, l, store.Cond{}) }

// Ops collects op constructors' results and their first error, so a
// transaction can be assembled without an error check per line.
type Ops struct {
	ops []store.Op
	err error
}

// Add appends op unless an earlier constructor failed.
func (o *Ops) Add(op store.Op, err error) {
	if o.err != nil {
		return
	}
	if err != nil {
		o.err = err
		return
	}
	o.ops = append(o.ops, op)
}

// AddAll appends ops unless an earlier constructor failed.
func (o *Ops) AddAll(ops []store.Op, err error) {
	if o.err == nil && err != nil {
		o.err = err
	}
	if o.err == nil {
		o.ops = append(o.ops, ops...)
	}
}

// Append appends ops that cannot fail.
func (o *Ops) Append(ops ...store.Op) {
	if o.err == nil {
		o.ops = append(o.ops, ops...)
	}
}

// Transact applies the collected ops in one transaction.
func (o *Ops) Transact(ctx context.Context, s *Store) error {
	if o.err != nil {
		return o.err
	}
	return s.tbl.Transact(ctx, o.ops)
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// IsConditionFailed reports whether err is a failed write condition or guard.
func IsConditionFailed(err error) bool { return errors.Is(err, store.ErrConditionFailed) }

func (s table) putJSON(ctx context.Context, pk, sk string, v any) error {
	data, err := encode(v)
	if err != nil {
		return err
	}
	if _, err := s.tbl.Put(ctx, store.Item{PK: pk, SK: sk, Data: data}, store.Cond{}); err != nil {
		return fmt.Errorf("put %s|%s: %w", pk, sk, err)
	}
	return nil
}

func (s table) getJSON(ctx context.Context, pk, sk string, out any) error {
	it, err := s.tbl.Get(ctx, pk, sk)
	if err != nil {
		return fmt.Errorf("get %s|%s: %w", pk, sk, err)
	}
	if err := jsonUnmarshal(it.Data, out); err != nil {
		return fmt.Errorf("decode %s|%s: %w", pk, sk, err)
	}
	return nil
}

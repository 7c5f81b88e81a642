package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

func testTransactAllOrNothing(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	existing := mustPut(t, tb, store.Item{PK: p + "c", SK: "c", Data: data(t, "c")}, store.Cond{})
	gate := mustPut(t, tb, store.Item{PK: p + "gate", SK: "gate", Counters: map[string]int64{"running": 2}}, store.Cond{})
	newA := store.Op{Kind: store.OpPut, Item: store.Item{PK: p + "a", SK: "a", Data: data(t, "a")}, Cond: store.Cond{Kind: store.IfNotExists}}
	addB := store.Op{Kind: store.OpAdd, Item: store.Item{PK: p + "b", SK: "b"}, Deltas: map[string]int64{"n": 1}}
	tests := []struct {
		name    string
		failing store.Op
	}{
		{"stale version put", store.Op{Kind: store.OpPut, Item: store.Item{PK: p + "c", SK: "c", Data: data(t, "x")}, Cond: store.Cond{Kind: store.IfVersion, Version: 9}}},
		{"failed check", store.Op{Kind: store.OpCheck, Item: store.Item{PK: p + "c", SK: "c"}, Cond: store.Cond{Kind: store.IfNotExists}}},
		{"failed delete condition", store.Op{Kind: store.OpDelete, Item: store.Item{PK: p + "c", SK: "c"}, Cond: store.Cond{Kind: store.IfVersion, Version: 2}}},
		{"failed guard", store.Op{Kind: store.OpAdd, Item: store.Item{PK: p + "gate", SK: "gate"}, Deltas: map[string]int64{"running": 1}, Guard: &store.Guard{Counter: "running", Max: 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tb.Transact(t.Context(), []store.Op{newA, addB, tc.failing})
			wantConditionFailed(t, "Transact with "+tc.name, err)
			wantMissing(t, tb, p+"a", "a")
			wantMissing(t, tb, p+"b", "b")
			if diff := cmp.Diff(existing, mustGet(t, tb, p+"c", "c"), itemOpts); diff != "" {
				t.Errorf("failed Transact changed c (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(gate, mustGet(t, tb, p+"gate", "gate"), itemOpts); diff != "" {
				t.Errorf("failed Transact changed the gate (-want +got):\n%s", diff)
			}
		})
	}
}

func testTransactApplies(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	check := mustPut(t, tb, store.Item{PK: p + "run", SK: "run", Data: data(t, "running")}, store.Cond{})
	mustPut(t, tb, store.Item{PK: p + "old", SK: "old"}, store.Cond{})
	mustPut(t, tb, store.Item{PK: p + "gate", SK: "gate", Counters: map[string]int64{"running": 1}}, store.Cond{})
	ops := []store.Op{
		{Kind: store.OpCheck, Item: store.Item{PK: p + "run", SK: "run"}, Cond: store.Cond{Kind: store.IfVersion, Version: 1}},
		{Kind: store.OpPut, Item: store.Item{PK: p + "result", SK: "attempt#1", GSI1PK: p + "results", GSI1SK: "1", Data: data(t, "passed")}, Cond: store.Cond{Kind: store.IfNotExists}},
		{Kind: store.OpDelete, Item: store.Item{PK: p + "old", SK: "old"}, Cond: store.Cond{Kind: store.IfExists}},
		{Kind: store.OpAdd, Item: store.Item{PK: p + "gate", SK: "gate"}, Deltas: map[string]int64{"running": -1, "done": 1}, Guard: &store.Guard{Counter: "running", Max: 4}},
		{Kind: store.OpAdd, Item: store.Item{PK: p + "counts", SK: "counts"}, Deltas: map[string]int64{"passed": 1}},
	}
	if err := tb.Transact(t.Context(), ops); err != nil {
		t.Fatalf("Transact = %v", err)
	}
	want := map[[2]string]store.Item{
		{p + "run", "run"}:          check,
		{p + "result", "attempt#1"}: {PK: p + "result", SK: "attempt#1", GSI1PK: p + "results", GSI1SK: "1", Data: data(t, "passed"), Version: 1},
		{p + "gate", "gate"}:        {PK: p + "gate", SK: "gate", Counters: map[string]int64{"running": 0, "done": 1}, Version: 2},
		{p + "counts", "counts"}:    {PK: p + "counts", SK: "counts", Counters: map[string]int64{"passed": 1}, Version: 1},
	}
	for key, w := range want {
		if diff := cmp.Diff(w, mustGet(t, tb, key[0], key[1]), itemOpts); diff != "" {
			t.Errorf("%s/%s after Transact (-want +got):\n%s", key[0], key[1], diff)
		}
	}
	wantMissing(t, tb, p+"old", "old")
	if err := tb.Transact(t.Context(), nil); err != nil {
		t.Errorf("Transact(no ops) = %v, want nil", err)
	}
}

func testTransactLimits(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	var ops []store.Op
	for i := range store.MaxTransactOps + 1 {
		ops = append(ops, store.Op{Kind: store.OpPut, Item: store.Item{PK: fmt.Sprintf("%s%03d", p, i), SK: "sk"}})
	}
	if err := tb.Transact(t.Context(), ops); !errors.Is(err, store.ErrTooManyOps) {
		t.Errorf("Transact(%d ops) = %v, want ErrTooManyOps", len(ops), err)
	}
	wantMissing(t, tb, ops[0].Item.PK, "sk")
	if err := tb.Transact(t.Context(), ops[:store.MaxTransactOps]); err != nil {
		t.Errorf("Transact(%d ops) = %v, want nil", store.MaxTransactOps, err)
	}

	dup := []store.Op{
		{Kind: store.OpPut, Item: store.Item{PK: p + "dup", SK: "sk"}},
		{Kind: store.OpAdd, Item: store.Item{PK: p + "dup", SK: "sk"}, Deltas: map[string]int64{"n": 1}},
	}
	if err := tb.Transact(t.Context(), dup); err == nil || errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("Transact with two ops on one item = %v, want a validation error", err)
	}
	wantMissing(t, tb, p+"dup", "sk")
}

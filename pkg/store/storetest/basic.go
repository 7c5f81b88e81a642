package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

func testGetMissing(t *testing.T, tb store.Table, _ options) {
	wantMissing(t, tb, prefix(t)+"pk", "sk")
}

func testPutGet(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	item := store.Item{
		PK: p + "pk", SK: "sk#1",
		GSI1PK: p + "g1", GSI1SK: "a", GSI2PK: p + "g2", GSI2SK: "b",
		Data:      data(t, map[string]any{"name": "first", "n": 1}),
		Counters:  map[string]int64{"done": 3, "failed": -1},
		Version:   42, // ignored
		ExpiresAt: time.Now().Add(24 * time.Hour).Unix(),
	}
	stored := mustPut(t, tb, item, store.Cond{})
	want := item
	want.Version = 1
	if diff := cmp.Diff(want, stored, itemOpts); diff != "" {
		t.Errorf("Put returned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, mustGet(t, tb, item.PK, item.SK), itemOpts); diff != "" {
		t.Errorf("Get after Put (-want +got):\n%s", diff)
	}

	replaced := store.Item{PK: item.PK, SK: item.SK, Data: data(t, map[string]any{"name": "second"})}
	stored = mustPut(t, tb, replaced, store.Cond{})
	want = replaced
	want.Version = 2
	if diff := cmp.Diff(want, stored, itemOpts); diff != "" {
		t.Errorf("second Put returned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, mustGet(t, tb, item.PK, item.SK), itemOpts); diff != "" {
		t.Errorf("Get after second Put, which replaces counters and GSI keys (-want +got):\n%s", diff)
	}
}

func testConditions(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	tests := []struct {
		name     string
		existing bool
		cond     store.Cond
		wantErr  bool
	}{
		{"always on missing", false, store.Cond{Kind: store.Always}, false},
		{"always on existing", true, store.Cond{Kind: store.Always}, false},
		{"if not exists on missing", false, store.Cond{Kind: store.IfNotExists}, false},
		{"if not exists on existing", true, store.Cond{Kind: store.IfNotExists}, true},
		{"if exists on missing", false, store.Cond{Kind: store.IfExists}, true},
		{"if exists on existing", true, store.Cond{Kind: store.IfExists}, false},
		{"if version on missing", false, store.Cond{Kind: store.IfVersion, Version: 1}, true},
		{"if version matching", true, store.Cond{Kind: store.IfVersion, Version: 1}, false},
		{"if version stale", true, store.Cond{Kind: store.IfVersion, Version: 2}, true},
		{"if version zero", true, store.Cond{Kind: store.IfVersion, Version: 0}, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pk := fmt.Sprintf("%scase%d", p, i)
			var before store.Item
			if tc.existing {
				before = mustPut(t, tb, store.Item{PK: pk, SK: "sk", Data: data(t, "before")}, store.Cond{})
			}
			got, err := tb.Put(t.Context(), store.Item{PK: pk, SK: "sk", Data: data(t, "after")}, tc.cond)
			if tc.wantErr {
				wantConditionFailed(t, fmt.Sprintf("Put(cond %+v)", tc.cond), err)
				if tc.existing {
					if diff := cmp.Diff(before, mustGet(t, tb, pk, "sk"), itemOpts); diff != "" {
						t.Errorf("failed Put changed the item (-want +got):\n%s", diff)
					}
				} else {
					wantMissing(t, tb, pk, "sk")
				}
				return
			}
			if err != nil {
				t.Fatalf("Put(cond %+v) = %v, want success", tc.cond, err)
			}
			want := store.Item{PK: pk, SK: "sk", Data: data(t, "after"), Version: before.Version + 1}
			if diff := cmp.Diff(want, got, itemOpts); diff != "" {
				t.Errorf("Put(cond %+v) returned (-want +got):\n%s", tc.cond, diff)
			}
		})
	}
}

// testReplayIfNotExists: replaying a create, identical or conflicting, fails
// its condition and leaves the first write in place.
func testReplayIfNotExists(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	item := store.Item{PK: p + "run", SK: "run", Data: data(t, map[string]string{"status": "pending"})}
	first := mustPut(t, tb, item, store.Cond{Kind: store.IfNotExists})
	_, err := tb.Put(t.Context(), item, store.Cond{Kind: store.IfNotExists})
	wantConditionFailed(t, "identical replay of Put(IfNotExists)", err)
	conflicting := item
	conflicting.Data = data(t, map[string]string{"status": "queued"})
	_, err = tb.Put(t.Context(), conflicting, store.Cond{Kind: store.IfNotExists})
	wantConditionFailed(t, "conflicting replay of Put(IfNotExists)", err)
	if diff := cmp.Diff(first, mustGet(t, tb, item.PK, item.SK), itemOpts); diff != "" {
		t.Errorf("replays changed the item (-want +got):\n%s", diff)
	}
}

func testDelete(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	ctx := t.Context()
	if err := tb.Delete(ctx, p+"missing", "sk", store.Cond{}); err != nil {
		t.Errorf("Delete(missing, Always) = %v, want nil", err)
	}
	wantConditionFailed(t, "Delete(missing, IfExists)", tb.Delete(ctx, p+"missing", "sk", store.Cond{Kind: store.IfExists}))
	wantConditionFailed(t, "Delete(missing, IfVersion 1)", tb.Delete(ctx, p+"missing", "sk", store.Cond{Kind: store.IfVersion, Version: 1}))

	stored := mustPut(t, tb, store.Item{PK: p + "pk", SK: "sk", Data: data(t, 1)}, store.Cond{})
	wantConditionFailed(t, "Delete(IfVersion stale)", tb.Delete(ctx, p+"pk", "sk", store.Cond{Kind: store.IfVersion, Version: 7}))
	if diff := cmp.Diff(stored, mustGet(t, tb, p+"pk", "sk"), itemOpts); diff != "" {
		t.Errorf("failed Delete changed the item (-want +got):\n%s", diff)
	}
	if err := tb.Delete(ctx, p+"pk", "sk", store.Cond{Kind: store.IfVersion, Version: 1}); err != nil {
		t.Fatalf("Delete(IfVersion 1) = %v", err)
	}
	wantMissing(t, tb, p+"pk", "sk")
	if err := tb.Delete(ctx, p+"pk", "sk", store.Cond{}); err != nil {
		t.Errorf("second Delete(Always) = %v, want nil", err)
	}
}

func testCreate(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	var items []store.Item
	for i := range 30 {
		items = append(items, store.Item{PK: p + "slots", SK: fmt.Sprintf("slot#%02d", i), GSI1PK: p + "queued", GSI1SK: fmt.Sprintf("%02d", i), Data: data(t, i)})
	}
	existing := map[string]store.Item{}
	for _, item := range items[:10] {
		prior := item
		prior.Data = data(t, "prior")
		existing[item.SK] = mustPut(t, tb, prior, store.Cond{})
	}
	n, err := tb.Create(t.Context(), items)
	if err != nil || n != 20 {
		t.Fatalf("Create(30 items, 10 existing) = %d, %v; want 20, nil", n, err)
	}
	for _, item := range items {
		want, ok := existing[item.SK]
		if !ok {
			want = item
			want.Version = 1
		}
		if diff := cmp.Diff(want, mustGet(t, tb, item.PK, item.SK), itemOpts); diff != "" {
			t.Errorf("item %s after Create (-want +got):\n%s", item.SK, diff)
		}
	}
	if n, err := tb.Create(t.Context(), items); err != nil || n != 0 {
		t.Errorf("replayed Create = %d, %v; want 0, nil", n, err)
	}
	if n, err := tb.Create(t.Context(), nil); err != nil || n != 0 {
		t.Errorf("Create(nil) = %d, %v; want 0, nil", n, err)
	}
}

// testCreateMany creates more items than any adapter's batch size.
func testCreateMany(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	const count = 1200
	items := make([]store.Item, count)
	for i := range items {
		items[i] = store.Item{PK: p + "many", SK: fmt.Sprintf("%05d", i), Data: data(t, i)}
	}
	if n, err := tb.Create(t.Context(), items); err != nil || n != count {
		t.Fatalf("Create(%d items) = %d, %v; want %d, nil", count, n, err, count)
	}
	got, err := queryAll(t.Context(), tb, store.Query{PK: p + "many", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != count {
		t.Errorf("query after Create found %d items, want %d", len(got), count)
	}
}

func testAdd(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	ctx := t.Context()
	got, err := tb.Add(ctx, p+"run", "counters", map[string]int64{"passed": 1, "failed": 2}, nil)
	if err != nil {
		t.Fatalf("Add to missing item = %v", err)
	}
	want := store.Item{PK: p + "run", SK: "counters", Counters: map[string]int64{"passed": 1, "failed": 2}, Version: 1}
	if diff := cmp.Diff(want, got, itemOpts); diff != "" {
		t.Errorf("Add creating the item returned (-want +got):\n%s", diff)
	}
	got, err = tb.Add(ctx, p+"run", "counters", map[string]int64{"passed": 4, "failed": -2, "errored": 1}, nil)
	if err != nil {
		t.Fatalf("second Add = %v", err)
	}
	want = store.Item{PK: p + "run", SK: "counters", Counters: map[string]int64{"passed": 5, "failed": 0, "errored": 1}, Version: 2}
	if diff := cmp.Diff(want, got, itemOpts); diff != "" {
		t.Errorf("second Add returned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, mustGet(t, tb, p+"run", "counters"), itemOpts); diff != "" {
		t.Errorf("Get after Add (-want +got):\n%s", diff)
	}

	entity := mustPut(t, tb, store.Item{PK: p + "run", SK: "meta", GSI1PK: p + "g", GSI1SK: "x", Data: data(t, "keep")}, store.Cond{})
	got, err = tb.Add(ctx, p+"run", "meta", map[string]int64{"n": 1}, nil)
	if err != nil {
		t.Fatalf("Add to an entity = %v", err)
	}
	want = entity
	want.Counters = map[string]int64{"n": 1}
	want.Version = 2
	if diff := cmp.Diff(want, got, itemOpts); diff != "" {
		t.Errorf("Add must keep data and index keys (-want +got):\n%s", diff)
	}
}

func testAddGuard(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	ctx := t.Context()
	guard := &store.Guard{Counter: "running", Max: 2}
	for i := 1; i <= 2; i++ {
		if _, err := tb.Add(ctx, p+"gate", "gate", map[string]int64{"running": 1}, guard); err != nil {
			t.Fatalf("guarded Add %d = %v", i, err)
		}
	}
	_, err := tb.Add(ctx, p+"gate", "gate", map[string]int64{"running": 1, "other": 5}, guard)
	wantConditionFailed(t, "guarded Add past Max", err)
	want := store.Item{PK: p + "gate", SK: "gate", Counters: map[string]int64{"running": 2}, Version: 2}
	if diff := cmp.Diff(want, mustGet(t, tb, p+"gate", "gate"), itemOpts); diff != "" {
		t.Errorf("failed guard changed the item (-want +got):\n%s", diff)
	}
	// Releasing and a guard on a counter the deltas do not touch.
	if _, err := tb.Add(ctx, p+"gate", "gate", map[string]int64{"running": -1}, guard); err != nil {
		t.Errorf("guarded release = %v", err)
	}
	if _, err := tb.Add(ctx, p+"gate", "gate", map[string]int64{"other": 1}, &store.Guard{Counter: "running", Max: 0}); !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("Add guarded on untouched counter 1 ≤ 0 = %v, want ErrConditionFailed", err)
	}
	if _, err := tb.Add(ctx, p+"fresh", "gate", map[string]int64{"running": 3}, guard); !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("guarded Add creating an item past Max = %v, want ErrConditionFailed", err)
	}
	wantMissing(t, tb, p+"fresh", "gate")
}

func testTTL(t *testing.T, tb store.Table, o options) {
	o.require(t, TTL)
	p := prefix(t)
	now := time.Now()
	mustPut(t, tb, store.Item{PK: p + "pk", SK: "expired", ExpiresAt: now.Add(-time.Hour).Unix()}, store.Cond{})
	live := mustPut(t, tb, store.Item{PK: p + "pk", SK: "live", ExpiresAt: now.Add(time.Hour).Unix()}, store.Cond{})
	forever := mustPut(t, tb, store.Item{PK: p + "pk", SK: "zforever"}, store.Cond{})
	wantMissing(t, tb, p+"pk", "expired")
	got, err := queryAll(t.Context(), tb, store.Query{PK: p + "pk"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.Item{live, forever}, got, itemOpts); diff != "" {
		t.Errorf("Query must leave out the expired item (-want +got):\n%s", diff)
	}
}

func testValidation(t *testing.T, tb store.Table, o options) {
	p := prefix(t)
	ctx := t.Context()
	for _, item := range []store.Item{{PK: "", SK: "sk"}, {PK: p + "pk", SK: ""}} {
		if _, err := tb.Put(ctx, item, store.Cond{}); err == nil || errors.Is(err, store.ErrConditionFailed) {
			t.Errorf("Put(pk %q, sk %q) = %v, want a validation error", item.PK, item.SK, err)
		}
	}
	t.Run("size limits", func(t *testing.T) {
		o.require(t, SizeLimits)
		big := store.Item{PK: p + "big", SK: "sk", Data: data(t, strings.Repeat("x", 420*1024))}
		if _, err := tb.Put(ctx, big, store.Cond{}); err == nil || errors.Is(err, store.ErrConditionFailed) {
			t.Errorf("Put(420 KiB item) = %v, want a validation error", err)
		}
		wantMissing(t, tb, big.PK, big.SK)
		longSK := strings.Repeat("s", 1025)
		if _, err := tb.Put(ctx, store.Item{PK: p + "big", SK: longSK}, store.Cond{}); err == nil {
			t.Error("Put(1025-byte sort key) = nil, want a validation error")
		}
	})
}

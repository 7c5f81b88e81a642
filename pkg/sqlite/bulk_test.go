package sqlite

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// TestCreateBulkEdges: one Create spanning several multi-row statements,
// with keys repeated inside the call, existing live keys and an expired one,
// creates each new key once and records exactly those changes.
func TestCreateBulkEdges(t *testing.T) {
	db := openTemp(t)
	clock := &fakeClock{}
	db.now = clock.now
	tb := db.Table()
	ctx := t.Context()
	if _, err := tb.Put(ctx, store.Item{PK: "p", SK: "live", Data: json.RawMessage(`{"old":true}`)}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Put(ctx, store.Item{PK: "p", SK: "gone", ExpiresAt: time.Now().Add(time.Second).Unix()}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	_, start := readAll(t, db, "")
	clock.advance(10 * time.Second)

	var items []store.Item
	for i := range 2*bulkRows + 7 {
		items = append(items, store.Item{PK: "p", SK: fmt.Sprintf("n%04d", i), Data: json.RawMessage(`{"first":true}`)})
	}
	items[150] = store.Item{PK: "p", SK: "n0003", Data: json.RawMessage(`{"first":false}`)} // repeats item 3, in another statement
	items[5] = store.Item{PK: "p", SK: "n0004", Data: json.RawMessage(`{"first":false}`)}   // repeats item 4, in the same statement
	items = append(items, store.Item{PK: "p", SK: "live"}, store.Item{PK: "p", SK: "gone", Data: json.RawMessage(`{"new":true}`)})

	n, err := tb.Create(ctx, items)
	if wantN := 2*bulkRows + 7 - 2 + 1; err != nil || n != wantN {
		t.Fatalf("Create = %d, %v; want %d, nil", n, err, wantN)
	}
	for sk, want := range map[string]string{"n0003": `{"first":true}`, "n0004": `{"first":true}`, "live": `{"old":true}`, "gone": `{"new":true}`} {
		got, err := tb.Get(ctx, "p", sk)
		if err != nil || string(got.Data) != want {
			t.Errorf("Get(%s) = %s, %v; want %s", sk, got.Data, err, want)
		}
	}
	changes, _ := readAll(t, db, start)
	counts := map[string]int{}
	for _, k := range kinds(changes) {
		counts[k]++
	}
	for _, k := range []string{"INSERT n0000", "INSERT n0003", "INSERT n0004", "INSERT n0206", "REMOVE gone", "INSERT gone"} {
		if counts[k] != 1 {
			t.Errorf("%d changes %q, want 1", counts[k], k)
		}
	}
	if len(changes) != n+1 || counts["INSERT live"] != 0 {
		t.Errorf("%d changes (INSERT live %d), want %d (one per created item and the expired item's REMOVE)", len(changes), counts["INSERT live"], n+1)
	}
}

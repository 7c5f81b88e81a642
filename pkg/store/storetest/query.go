package storetest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// seedQuery writes 250 "item#NNN" items plus neighbours that no query of the
// pk's "item#" keys may return, and returns the partition key.
func seedQuery(t *testing.T, tb store.Table) string {
	p := prefix(t)
	pk := p + "pk"
	var items []store.Item
	for i := range 250 {
		items = append(items, store.Item{PK: pk, SK: fmt.Sprintf("item#%03d", i), Data: data(t, i)})
	}
	items = append(items,
		store.Item{PK: pk, SK: "item"}, store.Item{PK: pk, SK: "itemz"}, store.Item{PK: pk, SK: "a"},
		store.Item{PK: p + "pk2", SK: "item#000"}, store.Item{PK: p + "p", SK: "item#000"})
	if n, err := tb.Create(t.Context(), items); err != nil || n != len(items) {
		t.Fatalf("Create(%d items) = %d, %v", len(items), n, err)
	}
	return pk
}

func itemKeys(from, to int) []string {
	var keys []string
	for i := from; i <= to; i++ {
		keys = append(keys, fmt.Sprintf("item#%03d", i))
	}
	return keys
}

func reversed(keys []string) []string {
	out := slices.Clone(keys)
	slices.Reverse(out)
	return out
}

func testQuery(t *testing.T, tb store.Table, _ options) {
	pk := seedQuery(t, tb)
	tests := []struct {
		name string
		q    store.Query
		want []string
	}{
		{"prefix", store.Query{PK: pk, Prefix: "item#"}, itemKeys(0, 249)},
		{"prefix desc", store.Query{PK: pk, Prefix: "item#", Desc: true}, reversed(itemKeys(0, 249))},
		{"narrow prefix", store.Query{PK: pk, Prefix: "item#1"}, itemKeys(100, 199)},
		{"range", store.Query{PK: pk, From: "item#100", To: "item#149"}, itemKeys(100, 149)},
		{"range desc", store.Query{PK: pk, From: "item#100", To: "item#149", Desc: true}, reversed(itemKeys(100, 149))},
		{"from only", store.Query{PK: pk, From: "item#245"}, append(itemKeys(245, 249), "itemz")},
		{"to only", store.Query{PK: pk, To: "item#002"}, append([]string{"a", "item"}, itemKeys(0, 2)...)},
		{"no match", store.Query{PK: pk, Prefix: "nothing"}, nil},
		{"unknown pk", store.Query{PK: pk + "-none"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Limit = 1000
			got, err := queryAll(t.Context(), tb, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, sortKeys(got), itemOpts); diff != "" {
				t.Errorf("Query(%+v) sort keys (-want +got):\n%s", tc.q, diff)
			}
		})
	}
}

// testQueryPagination pages through 250 items a few at a time: no item is
// repeated or missed, in either direction.
func testQueryPagination(t *testing.T, tb store.Table, _ options) {
	pk := seedQuery(t, tb)
	tests := []struct {
		name string
		q    store.Query
		want []string
	}{
		{"pages of 7", store.Query{PK: pk, Prefix: "item#", Limit: 7}, itemKeys(0, 249)},
		{"pages of 7 desc", store.Query{PK: pk, Prefix: "item#", Limit: 7, Desc: true}, reversed(itemKeys(0, 249))},
		{"pages of 1 in a range", store.Query{PK: pk, From: "item#010", To: "item#019", Limit: 1}, itemKeys(10, 19)},
		{"exact pages", store.Query{PK: pk, Prefix: "item#", Limit: 50}, itemKeys(0, 249)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := queryAll(t.Context(), tb, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, sortKeys(got), itemOpts); diff != "" {
				t.Errorf("paged Query(%+v) sort keys (-want +got):\n%s", tc.q, diff)
			}
		})
	}
	t.Run("default limit", func(t *testing.T) {
		page, err := tb.Query(t.Context(), store.Query{PK: pk, Prefix: "item#"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) == 0 || len(page.Items) > 1000 || (len(page.Items) < 250) != (page.Cursor != "") {
			t.Errorf("Query with Limit 0: %d items, cursor %q; want 1..1000 items and a cursor iff more remain", len(page.Items), page.Cursor)
		}
	})
}

// gsiKey is an item's position in a GSI: its index sort key, then its base key.
type gsiKey struct{ IndexSK, PK, SK string }

// testGSI checks both indexes, their sparseness, ordering by index sort key
// and pagination across items with equal index sort keys.
func testGSI(t *testing.T, tb store.Table, _ options) {
	p := prefix(t)
	var items []store.Item
	var want1, want2 []gsiKey
	for i := range 40 {
		item := store.Item{PK: fmt.Sprintf("%srun#%02d", p, i), SK: "run", Data: data(t, i)}
		if i%4 != 3 { // every fourth item is not in GSI1
			item.GSI1PK, item.GSI1SK = p+"by-status", fmt.Sprintf("running#%02d", i/3) // ties of three
			want1 = append(want1, gsiKey{item.GSI1SK, item.PK, item.SK})
		}
		if i%5 == 0 {
			item.GSI2PK, item.GSI2SK = p+"by-bench", fmt.Sprintf("t#%02d", 40-i)
			want2 = append(want2, gsiKey{item.GSI2SK, item.PK, item.SK})
		}
		items = append(items, item)
	}
	items = append(items, store.Item{PK: p + "other", SK: "x", GSI1PK: p + "by-status-2", GSI1SK: "running#00"})
	if n, err := tb.Create(t.Context(), items); err != nil || n != len(items) {
		t.Fatalf("Create(%d items) = %d, %v", len(items), n, err)
	}
	key1 := func(it store.Item) gsiKey { return gsiKey{it.GSI1SK, it.PK, it.SK} }
	key2 := func(it store.Item) gsiKey { return gsiKey{it.GSI2SK, it.PK, it.SK} }
	tests := []struct {
		name string
		q    store.Query
		key  func(store.Item) gsiKey
		want []gsiKey
	}{
		{"gsi1 pages of 4", store.Query{Index: store.GSI1, PK: p + "by-status", Limit: 4}, key1, want1},
		{"gsi1 desc pages of 5", store.Query{Index: store.GSI1, PK: p + "by-status", Limit: 5, Desc: true}, key1, want1},
		{"gsi1 prefix", store.Query{Index: store.GSI1, PK: p + "by-status", Prefix: "running#1", Limit: 2}, key1, filterPrefix(want1, "running#1")},
		{"gsi2 sparse", store.Query{Index: store.GSI2, PK: p + "by-bench", Limit: 3}, key2, want2},
		{"gsi2 range", store.Query{Index: store.GSI2, PK: p + "by-bench", From: "t#10", To: "t#30"}, key2, filterRange(want2, "t#10", "t#30")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eventually(t, func() error {
				got, err := queryAll(t.Context(), tb, tc.q)
				if err != nil {
					return err
				}
				return checkIndexOrder(tc.q, tc.key, tc.want, got)
			})
		})
	}
}

// checkIndexOrder checks that got holds exactly want's items, each once, in
// index sort-key order. The order of items with equal index sort keys is not
// part of the contract (DynamoDB does not define it).
func checkIndexOrder(q store.Query, key func(store.Item) gsiKey, want []gsiKey, got []store.Item) error {
	keys := make([]gsiKey, len(got))
	for i, item := range got {
		keys[i] = key(item)
		if i == 0 {
			continue
		}
		order := strings.Compare(keys[i-1].IndexSK, keys[i].IndexSK)
		if (order > 0 && !q.Desc) || (order < 0 && q.Desc) {
			return fmt.Errorf("Query(%+v): %q before %q is out of order", q, keys[i-1].IndexSK, keys[i].IndexSK)
		}
	}
	byKey := func(a, b gsiKey) int {
		if c := strings.Compare(a.IndexSK, b.IndexSK); c != 0 {
			return c
		}
		if c := strings.Compare(a.PK, b.PK); c != 0 {
			return c
		}
		return strings.Compare(a.SK, b.SK)
	}
	want = slices.SortedFunc(slices.Values(want), byKey)
	slices.SortFunc(keys, byKey)
	if diff := cmp.Diff(want, keys); diff != "" {
		return fmt.Errorf("Query(%+v) items (-want +got):\n%s", q, diff)
	}
	return nil
}

func filterPrefix(keys []gsiKey, prefix string) []gsiKey {
	var out []gsiKey
	for _, k := range keys {
		if strings.HasPrefix(k.IndexSK, prefix) {
			out = append(out, k)
		}
	}
	return out
}

func filterRange(keys []gsiKey, from, to string) []gsiKey {
	var out []gsiKey
	for _, k := range keys {
		if k.IndexSK >= from && k.IndexSK <= to {
			out = append(out, k)
		}
	}
	return out
}

// testForeignCursor: a cursor is good only for the query that handed it
// out. One of another partition, index or sort-key range, and decodable
// garbage, are ErrInvalidCursor, never a page from wherever they point
// (the first page, for an empty position).
func testForeignCursor(t *testing.T, tb store.Table, _ options) {
	pk := seedQuery(t, tb)
	p := strings.TrimSuffix(pk, "pk")
	first, err := tb.Query(t.Context(), store.Query{PK: pk, Prefix: "item#", Limit: 3})
	if err != nil || first.Cursor == "" {
		t.Fatalf("Query(limit 3) = %d items, cursor %q, %v; want a cursor", len(first.Items), first.Cursor, err)
	}
	gsiItem := store.Item{PK: p + "g", SK: "x", GSI1PK: p + "by", GSI1SK: "k#1"}
	if _, err := tb.Create(t.Context(), []store.Item{gsiItem, {PK: p + "g2", SK: "x", GSI1PK: p + "by", GSI1SK: "k#2"}}); err != nil {
		t.Fatal(err)
	}
	var gsiCursor string
	eventually(t, func() error {
		page, err := tb.Query(t.Context(), store.Query{Index: store.GSI1, PK: p + "by", Limit: 1})
		if err != nil || page.Cursor == "" {
			return fmt.Errorf("GSI1 Query(limit 1) = %d items, cursor %q, %v; want a cursor", len(page.Items), page.Cursor, err)
		}
		gsiCursor = page.Cursor
		return nil
	})
	garbage := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name string
		q    store.Query
	}{
		{"another partition", store.Query{PK: p + "pk2", Prefix: "item#", Cursor: first.Cursor}},
		{"another prefix", store.Query{PK: pk, Prefix: "other#", Cursor: first.Cursor}},
		{"before the range", store.Query{PK: pk, From: "item#100", Cursor: first.Cursor}},
		{"another index", store.Query{Index: store.GSI1, PK: pk, Cursor: first.Cursor}},
		{"a GSI cursor on the base table", store.Query{PK: p + "by", Cursor: gsiCursor}},
		{"a GSI cursor of another partition", store.Query{Index: store.GSI1, PK: p + "other", Cursor: gsiCursor}},
		{"not base64", store.Query{PK: pk, Cursor: "not a cursor!"}},
		{"empty object", store.Query{PK: pk, Cursor: garbage("{}")}},
		{"null", store.Query{PK: pk, Cursor: garbage("null")}},
		{"an array", store.Query{PK: pk, Cursor: garbage(`["item#001"]`)}},
		{"unknown keys", store.Query{PK: pk, Cursor: garbage(`{"x":"item#001","y":"z"}`)}},
		{"sort key only", store.Query{PK: pk, Cursor: garbage(`{"s":"item#001","sk":"item#001"}`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, err := tb.Query(t.Context(), tc.q)
			if !errors.Is(err, store.ErrInvalidCursor) {
				t.Errorf("Query(%+v) = %d items, %v; want ErrInvalidCursor", tc.q, len(page.Items), err)
			}
		})
	}
	// The cursor still serves its own query.
	next, err := tb.Query(t.Context(), store.Query{PK: pk, Prefix: "item#", Limit: 3, Cursor: first.Cursor})
	if err != nil || len(next.Items) != 3 || next.Items[0].SK != "item#003" {
		t.Errorf("Query with its own cursor = %v, %v; want item#003..item#005", sortKeys(next.Items), err)
	}
}

// Package storetest is the contract suite for the table port, in the manner of
// testing/fstest.TestFS: every store.Table, store.Stream and store.Checkpoints
// adapter calls Run, RunStream and RunCheckpoints from its own tests, against
// a fresh or shared table. Each test writes only under its own random key
// prefix, so a table shared with other tests (an emulator) works.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Feature names a part of the contract an adapter may be unable to provide.
type Feature string

// Features that Skip can switch off.
const (
	// TTL: items whose ExpiresAt has passed are invisible to Get and Query.
	TTL Feature = "ttl"
	// SizeLimits: oversized keys and items are rejected (DynamoDB's limits).
	SizeLimits Feature = "size-limits"
)

// Option adjusts the suite for an adapter.
type Option func(*options)

type options struct {
	skip map[Feature]string
}

// Skip skips the tests of feature, reporting reason, for an adapter that
// cannot provide it. The skip shows in the test output, so the gap stays visible.
func Skip(feature Feature, reason string) Option {
	return func(o *options) { o.skip[feature] = reason }
}

func newOptions(opts []Option) options {
	o := options{skip: map[Feature]string{}}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func (o options) require(t *testing.T, feature Feature) {
	t.Helper()
	if reason, ok := o.skip[feature]; ok {
		t.Skipf("adapter does not support %s: %s", feature, reason)
	}
}

// Run runs the table contract. newTable returns the table under test; it is
// called once per test and may return the same shared table every time.
func Run(t *testing.T, newTable func(t *testing.T) store.Table, opts ...Option) {
	o := newOptions(opts)
	tests := []struct {
		name string
		run  func(t *testing.T, tb store.Table, o options)
	}{
		{"GetMissing", testGetMissing},
		{"PutGet", testPutGet},
		{"Conditions", testConditions},
		{"ReplayIfNotExists", testReplayIfNotExists},
		{"Delete", testDelete},
		{"Create", testCreate},
		{"CreateMany", testCreateMany},
		{"Add", testAdd},
		{"AddGuard", testAddGuard},
		{"RaceGuardedCounter", testRaceGuardedCounter},
		{"RaceIfVersionSingleShot", testRaceIfVersionSingleShot},
		{"RaceIfNotExistsSingleShot", testRaceIfNotExistsSingleShot},
		{"RaceReadModifyWrite", testRaceReadModifyWrite},
		{"Query", testQuery},
		{"QueryPagination", testQueryPagination},
		{"GSI", testGSI},
		{"ForeignCursor", testForeignCursor},
		{"TransactAllOrNothing", testTransactAllOrNothing},
		{"TransactApplies", testTransactApplies},
		{"TransactLimits", testTransactLimits},
		{"TTL", testTTL},
		{"Validation", testValidation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newTable(t), o)
		})
	}
}

// prefix returns a key prefix unique to this test run.
func prefix(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := strings.NewReplacer("/", "-", " ", "_", "#", "_").Replace(t.Name())
	return fmt.Sprintf("storetest-%s-%s#", name, hex.EncodeToString(b))
}

// data encodes v as compact JSON item data.
func data(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode data: %v", err)
	}
	return b
}

// itemOpts compare items regardless of nil versus empty Data and Counters.
var itemOpts = cmp.Options{cmpopts.EquateEmpty()}

func mustPut(t *testing.T, tb store.Table, item store.Item, cond store.Cond) store.Item {
	t.Helper()
	stored, err := tb.Put(t.Context(), item, cond)
	if err != nil {
		t.Fatalf("Put(%q/%q) = %v", item.PK, item.SK, err)
	}
	return stored
}

func mustGet(t *testing.T, tb store.Table, pk, sk string) store.Item {
	t.Helper()
	item, err := tb.Get(t.Context(), pk, sk)
	if err != nil {
		t.Fatalf("Get(%q/%q) = %v", pk, sk, err)
	}
	return item
}

func wantMissing(t *testing.T, tb store.Table, pk, sk string) {
	t.Helper()
	if item, err := tb.Get(t.Context(), pk, sk); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(%q/%q) = %+v, %v; want ErrNotFound", pk, sk, item, err)
	}
}

func wantConditionFailed(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("%s = %v, want ErrConditionFailed", what, err)
	}
}

// eventually retries check until it passes or 10 s pass, for adapters whose
// indexes or streams are eventually consistent; it reports the last failure.
func eventually(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Error(err)
			return
		}
		select {
		case <-t.Context().Done():
			t.Error(err)
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// queryAll follows cursors to the end and returns every item; it fails the
// check when a page is larger than the limit or the cursors never end.
func queryAll(ctx context.Context, tb store.Table, q store.Query) ([]store.Item, error) {
	var all []store.Item
	for pages := 0; ; pages++ {
		if pages > 10000 {
			return nil, fmt.Errorf("query %+v: cursors did not end after %d pages", q, pages)
		}
		page, err := tb.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("query %+v: %w", q, err)
		}
		if q.Limit > 0 && len(page.Items) > q.Limit {
			return nil, fmt.Errorf("query %+v: page of %d items, more than the limit", q, len(page.Items))
		}
		all = append(all, page.Items...)
		if page.Cursor == "" {
			return all, nil
		}
		q.Cursor = page.Cursor
	}
}

func sortKeys(items []store.Item) []string {
	keys := make([]string, len(items))
	for i, item := range items {
		keys[i] = item.SK
	}
	return keys
}

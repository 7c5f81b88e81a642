package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// fakeClock lets a test move the database's time forward.
type fakeClock struct{ offset atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

func readAll(t *testing.T, db *DB, checkpoint string) ([]store.Change, string) {
	t.Helper()
	changes, next, err := db.Stream().Read(t.Context(), checkpoint, 0)
	if err != nil {
		t.Fatalf("Read(%q) = %v", checkpoint, err)
	}
	return changes, next
}

func kinds(changes []store.Change) []string {
	var out []string
	for _, c := range changes {
		key := ""
		if c.New != nil {
			key = c.New.SK
		} else if c.Old != nil {
			key = c.Old.SK
		}
		out = append(out, string(c.Kind)+" "+key)
	}
	return out
}

// TestExpiredItemsPurged: an expired item is replaced as if missing, and its
// removal is recorded, lazily on a write or by the periodic purge.
func TestExpiredItemsPurged(t *testing.T) {
	db := openTemp(t)
	clock := &fakeClock{}
	db.now = clock.now
	tb := db.Table()
	ctx := t.Context()
	exp := time.Now().Add(30 * time.Second).Unix()
	for _, sk := range []string{"a", "b", "c"} {
		if _, err := tb.Put(ctx, store.Item{PK: "p", SK: sk, ExpiresAt: exp}, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	_, start := readAll(t, db, "")
	clock.advance(45 * time.Second) // expired, and the periodic purge not yet due

	if _, err := tb.Put(ctx, store.Item{PK: "p", SK: "a"}, store.Cond{Kind: store.IfNotExists}); err != nil {
		t.Errorf("Put(IfNotExists) over an expired item = %v, want success", err)
	}
	if n, err := tb.Create(ctx, []store.Item{{PK: "p", SK: "b"}}); err != nil || n != 1 {
		t.Errorf("Create over an expired item = %d, %v; want 1, nil", n, err)
	}
	clock.advance(purgeEvery) // the next write triggers the periodic purge
	if _, err := tb.Add(ctx, "p", "z", map[string]int64{"n": 1}, nil); err != nil {
		t.Fatal(err)
	}
	changes, _ := readAll(t, db, start)
	want := []string{"REMOVE a", "INSERT a", "REMOVE b", "INSERT b", "INSERT z", "REMOVE c"}
	if diff := cmp.Diff(want, kinds(changes)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	var left int
	if err := db.reader.QueryRow(`SELECT count(*) FROM items WHERE sk = 'c'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("expired row still stored: %d, %v", left, err)
	}
}

// TestStreamOrderAndPrune: the log is in commit order with IDs equal to the
// sequence; pruning keeps the newest record so sequences never restart.
func TestStreamOrderAndPrune(t *testing.T) {
	db := openTemp(t)
	tb := db.Table()
	for i := range 5 {
		if _, err := tb.Put(t.Context(), store.Item{PK: "p", SK: strconv.Itoa(i)}, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	changes, last := readAll(t, db, "")
	var ids []string
	for _, c := range changes {
		ids = append(ids, c.ID)
	}
	if diff := cmp.Diff([]string{"1", "2", "3", "4", "5"}, ids); diff != "" || last != "5" {
		t.Errorf("IDs (-want +got):\n%s\nnext = %q, want 5", diff, last)
	}
	if err := db.PruneChanges(t.Context(), last); err != nil {
		t.Fatal(err)
	}
	if changes, _ := readAll(t, db, ""); len(changes) != 1 || changes[0].ID != "5" {
		t.Errorf("Read after prune = %+v; want only the newest change, 5", changes)
	}
	if _, err := tb.Put(t.Context(), store.Item{PK: "p", SK: "new"}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if changes, _ := readAll(t, db, last); len(changes) != 1 || changes[0].ID != "6" {
		t.Errorf("change after prune = %+v, want one with ID 6", changes)
	}
	if _, _, err := db.Stream().Read(t.Context(), "not-a-checkpoint", 1); err == nil {
		t.Error("Read(invalid checkpoint) = nil error")
	}
}

// TestReopen: items, changes, checkpoints and messages survive a reopen.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	put, err := db.Table().Put(ctx, store.Item{PK: "p", SK: "s", Data: []byte(`{"x":1}`)}, store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := db.Queue("q", QueueOptions{})
	if err := q.Send(ctx, queue.Outgoing{Body: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoints().Save(ctx, "c", "1"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := db.Table().Put(ctx, store.Item{PK: "p", SK: "s"}, store.Cond{}); !errors.Is(err, errClosed) {
		t.Errorf("Put after Close = %v, want errClosed", err)
	}

	db = openPath(t, path)
	if got, err := db.Table().Get(ctx, "p", "s"); err != nil || !cmp.Equal(put, got) {
		t.Errorf("Get after reopen = %+v, %v; want %+v", got, err, put)
	}
	if cp, err := db.Checkpoints().Load(ctx, "c"); cp != "1" || err != nil {
		t.Errorf("Load after reopen = %q, %v", cp, err)
	}
	if changes, _ := readAll(t, db, ""); len(changes) != 1 {
		t.Errorf("%d changes after reopen, want 1", len(changes))
	}
	q, _ = db.Queue("q", QueueOptions{})
	if msgs, err := q.Receive(ctx, 10, time.Minute, 0); err != nil || len(msgs) != 1 {
		t.Errorf("Receive after reopen = %d, %v; want 1 message", len(msgs), err)
	}
}

func openPath(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestCreateChunks: a Create larger than one transaction creates every item
// with exactly one change each.
func TestCreateChunks(t *testing.T) {
	db := openTemp(t)
	items := make([]store.Item, 2*createChunk+17)
	for i := range items {
		items[i] = store.Item{PK: "run", SK: fmt.Sprintf("slot#%06d", i)}
	}
	if n, err := db.Table().Create(t.Context(), items); err != nil || n != len(items) {
		t.Fatalf("Create = %d, %v", n, err)
	}
	changes, _, err := db.Stream().Read(t.Context(), "", maxRead)
	if err != nil || len(changes) != len(items) {
		t.Errorf("Read = %d changes, %v; want %d", len(changes), err, len(items))
	}
}

func TestQueryCursorChecks(t *testing.T) {
	tb := openTemp(t).Table()
	for i := range 3 {
		item := store.Item{PK: "p", SK: strconv.Itoa(i), GSI1PK: "g", GSI1SK: "x"}
		if _, err := tb.Put(t.Context(), item, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := tb.Query(t.Context(), store.Query{PK: "p", Limit: 1})
	if err != nil || page.Cursor == "" {
		t.Fatalf("Query = %+v, %v", page, err)
	}
	tests := []struct {
		name string
		q    store.Query
	}{
		{"cursor from another index", store.Query{Index: store.GSI1, PK: "g", Cursor: page.Cursor}},
		{"garbage cursor", store.Query{PK: "p", Cursor: "!!"}},
		{"unknown index", store.Query{Index: "gsi9", PK: "p"}},
		{"empty pk", store.Query{}},
		{"negative limit", store.Query{PK: "p", Limit: -1}},
	}
	for _, tc := range tests {
		if _, err := tb.Query(t.Context(), tc.q); err == nil {
			t.Errorf("%s: Query(%+v) = nil error", tc.name, tc.q)
		}
	}
}

func TestQueueOptions(t *testing.T) {
	db := openTemp(t)
	tests := []struct {
		name    string
		queue   string
		opts    QueueOptions
		wantErr string
	}{
		{"plain", "slots", QueueOptions{}, ""},
		{"with dead letter", "slots", QueueOptions{MaxReceives: 3, DeadLetter: "slots-dlq"}, ""},
		{"bad name", "slots.fifo", QueueOptions{}, "name must match"},
		{"max receives without dead letter", "slots", QueueOptions{MaxReceives: 3}, "needs a dead-letter"},
		{"dead letter without max receives", "slots", QueueOptions{DeadLetter: "dlq"}, "needs max receives"},
		{"own dead letter", "slots", QueueOptions{MaxReceives: 1, DeadLetter: "slots"}, "own dead-letter"},
		{"negative", "slots", QueueOptions{MaxReceives: -1}, "negative"},
	}
	for _, tc := range tests {
		_, err := db.Queue(tc.queue, tc.opts)
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: Queue(%q, %+v) = %v, want error containing %q", tc.name, tc.queue, tc.opts, err, tc.wantErr)
		}
	}
}

// TestQueueReceipts: a stale receipt leaves the current delivery alone; a
// malformed one is an error; bad sends are refused whole.
func TestQueueReceipts(t *testing.T) {
	db := openTemp(t)
	clock := &fakeClock{}
	db.now = clock.now
	q, _ := db.Queue("q", QueueOptions{})
	ctx := t.Context()
	if err := q.Send(ctx, queue.Outgoing{Body: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	first, err := q.Receive(ctx, 1, time.Second, 0)
	if err != nil || len(first) != 1 {
		t.Fatalf("Receive = %v, %v", first, err)
	}
	clock.advance(2 * time.Second)
	second, err := q.Receive(ctx, 1, time.Minute, 0)
	if err != nil || len(second) != 1 || second[0].ReceiveCount != 2 {
		t.Fatalf("second Receive = %+v, %v", second, err)
	}
	if err := q.Delete(ctx, first[0].Receipt); err != nil {
		t.Errorf("Delete(stale) = %v", err)
	}
	if err := q.ChangeVisibility(ctx, first[0].Receipt, 0); err != nil {
		t.Errorf("ChangeVisibility(stale) = %v", err)
	}
	if got, _ := q.Receive(ctx, 1, time.Minute, 0); len(got) != 0 {
		t.Errorf("stale ChangeVisibility made the message visible: %+v", got)
	}
	if err := q.Delete(ctx, second[0].Receipt); err != nil {
		t.Fatal(err)
	}
	clock.advance(2 * time.Minute)
	if got, _ := q.Receive(ctx, 1, time.Minute, 0); len(got) != 0 {
		t.Errorf("deleted message came back: %+v", got)
	}
	for _, bad := range []string{"", "x", "12", "0.abc", "-1.abc"} {
		if err := q.Delete(ctx, bad); err == nil {
			t.Errorf("Delete(%q) = nil, want an error", bad)
		}
	}
	sends := [][]queue.Outgoing{
		{{Body: []byte("ok")}, {Body: nil}},
		{{Body: []byte("ok")}, {Body: []byte("x"), Delay: 16 * time.Minute}},
		{{Body: make([]byte, maxBodyBytes+1)}},
	}
	for _, msgs := range sends {
		if err := q.Send(ctx, msgs...); err == nil {
			t.Errorf("Send(%d messages with a bad one) = nil", len(msgs))
		}
	}
	if got, _ := q.Receive(ctx, 10, time.Minute, 0); len(got) != 0 {
		t.Errorf("a refused Send enqueued %d messages", len(got))
	}
}

// TestGroupCommit: writes queued together commit together, and a failing
// write in the group is undone alone.
func TestGroupCommit(t *testing.T) {
	db := openTemp(t)
	tb := db.Table()
	if _, err := tb.Put(t.Context(), store.Item{PK: "p", SK: "exists"}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	reqs := []*writeReq{
		{fn: func(ctx2 ctxT, w *writeTx) error {
			_, err := w.put(ctx2, store.Item{PK: "p", SK: "a"}, store.Cond{})
			return err
		}},
		{fn: func(ctx2 ctxT, w *writeTx) error {
			if _, err := w.put(ctx2, store.Item{PK: "p", SK: "b"}, store.Cond{}); err != nil {
				return err
			}
			_, err := w.put(ctx2, store.Item{PK: "p", SK: "exists"}, store.Cond{Kind: store.IfNotExists})
			return err
		}},
		{fn: func(ctx2 ctxT, w *writeTx) error {
			_, err := w.add(ctx2, "p", "c", map[string]int64{"n": 1}, nil)
			return err
		}},
	}
	for _, r := range reqs {
		r.ctx, r.done = t.Context(), make(chan struct{})
	}
	db.cmu.RLock()
	for _, r := range reqs {
		db.reqs <- r
	}
	db.cmu.RUnlock()
	for _, r := range reqs {
		<-r.done
	}
	if reqs[0].err != nil || !errors.Is(reqs[1].err, store.ErrConditionFailed) || reqs[2].err != nil {
		t.Fatalf("errors = %v, %v, %v; want nil, ErrConditionFailed, nil", reqs[0].err, reqs[1].err, reqs[2].err)
	}
	page, err := tb.Query(t.Context(), store.Query{PK: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "c", "exists"}, keysOf(page.Items), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	changes, _ := readAll(t, db, "1")
	if diff := cmp.Diff([]string{"INSERT a", "INSERT c"}, kinds(changes)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

func keysOf(items []store.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.SK)
	}
	return out
}

type ctxT = context.Context

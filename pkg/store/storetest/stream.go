package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// RunStream runs the change-stream contract: every write yields exactly one
// change with the right kind and images, per item in write order, and reading
// on from a checkpoint loses nothing and repeats nothing. newStream returns a
// table and its stream, possibly shared with other tests.
func RunStream(t *testing.T, newStream func(t *testing.T) (store.Table, store.Stream), opts ...Option) {
	newOptions(opts) // no stream feature is optional yet
	t.Run("ChangesAndResume", func(t *testing.T) {
		t.Parallel()
		tb, st := newStream(t)
		testStream(t, tb, st)
	})
}

// streamPage is the page size the suite reads with, small to exercise resuming.
const streamPage = 3

func testStream(t *testing.T, tb store.Table, st store.Stream) {
	p := prefix(t)
	start := streamEnd(t, st)
	want := writeChanges(t, tb, p)
	got, next := readChanges(t, st, start, p, len(want))
	compareChanges(t, want, got)

	// Resume from the checkpoint after the first batch: only new changes come.
	more := []store.Change{}
	for i := range 3 {
		item := mustPut(t, tb, store.Item{PK: p + "later", SK: fmt.Sprint(i)}, store.Cond{})
		more = append(more, store.Change{Kind: store.Insert, New: &item})
	}
	got, _ = readChanges(t, st, next, p, len(more))
	compareChanges(t, more, got)
}

// streamEnd reads to the current end of the stream and returns its checkpoint.
func streamEnd(t *testing.T, st store.Stream) string {
	t.Helper()
	checkpoint := ""
	for {
		changes, next, err := st.Read(t.Context(), checkpoint, 1000)
		if err != nil {
			t.Fatalf("Read(%q) = %v", checkpoint, err)
		}
		checkpoint = next
		if len(changes) == 0 {
			return checkpoint
		}
	}
}

// writeChanges performs writes of every kind under prefix p and returns the
// changes they must produce, in order.
func writeChanges(t *testing.T, tb store.Table, p string) []store.Change {
	t.Helper()
	ctx := t.Context()
	var want []store.Change
	record := func(kind store.ChangeKind, old, new *store.Item) {
		want = append(want, store.Change{Kind: kind, Old: old, New: new})
	}

	a1 := mustPut(t, tb, store.Item{PK: p + "a", SK: "a", GSI1PK: p + "g", GSI1SK: "1", Data: data(t, "one")}, store.Cond{Kind: store.IfNotExists})
	record(store.Insert, nil, &a1)
	a2 := mustPut(t, tb, store.Item{PK: p + "a", SK: "a", Data: data(t, "two")}, store.Cond{Kind: store.IfVersion, Version: 1})
	record(store.Modify, &a1, &a2)
	if _, err := tb.Put(ctx, store.Item{PK: p + "a", SK: "a"}, store.Cond{Kind: store.IfNotExists}); err == nil {
		t.Fatal("Put(IfNotExists) on an existing item succeeded")
	}
	a3, err := tb.Add(ctx, p+"a", "a", map[string]int64{"n": 2}, nil)
	if err != nil {
		t.Fatalf("Add = %v", err)
	}
	record(store.Modify, &a2, &a3)
	if err := tb.Delete(ctx, p+"a", "a", store.Cond{}); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	record(store.Remove, &a3, nil)
	if err := tb.Delete(ctx, p+"a", "a", store.Cond{}); err != nil {
		t.Fatalf("Delete of a missing item = %v", err)
	}

	batch := []store.Item{{PK: p + "b", SK: "b", Data: data(t, "b")}, {PK: p + "c", SK: "c"}}
	if n, err := tb.Create(ctx, batch); err != nil || n != 2 {
		t.Fatalf("Create = %d, %v", n, err)
	}
	b1, c1 := mustGet(t, tb, p+"b", "b"), mustGet(t, tb, p+"c", "c")
	record(store.Insert, nil, &b1)
	record(store.Insert, nil, &c1)
	if n, err := tb.Create(ctx, batch[:1]); err != nil || n != 0 {
		t.Fatalf("replayed Create = %d, %v", n, err)
	}
	d1, err := tb.Add(ctx, p+"d", "d", map[string]int64{"n": 1}, nil)
	if err != nil {
		t.Fatalf("Add = %v", err)
	}
	record(store.Insert, nil, &d1)

	err = tb.Transact(ctx, []store.Op{
		{Kind: store.OpPut, Item: store.Item{PK: p + "e", SK: "e", Data: data(t, "e")}},
		{Kind: store.OpAdd, Item: store.Item{PK: p + "c", SK: "c"}, Deltas: map[string]int64{"n": 1}},
		{Kind: store.OpCheck, Item: store.Item{PK: p + "d", SK: "d"}, Cond: store.Cond{Kind: store.IfExists}},
	})
	if err != nil {
		t.Fatalf("Transact = %v", err)
	}
	e1, c2 := mustGet(t, tb, p+"e", "e"), mustGet(t, tb, p+"c", "c")
	record(store.Insert, nil, &e1)
	record(store.Modify, &c1, &c2)
	err = tb.Transact(ctx, []store.Op{
		{Kind: store.OpPut, Item: store.Item{PK: p + "f", SK: "f"}},
		{Kind: store.OpCheck, Item: store.Item{PK: p + "d", SK: "d"}, Cond: store.Cond{Kind: store.IfNotExists}},
	})
	if err == nil {
		t.Fatal("failing Transact succeeded")
	}
	return want
}

// readChanges reads from checkpoint, streamPage changes at a time, until it has
// seen count changes under prefix p (or 15 s pass), and returns those changes
// and the checkpoint after them. Other tests' changes are skipped.
func readChanges(t *testing.T, st store.Stream, checkpoint, p string, count int) ([]store.Change, string) {
	t.Helper()
	var got []store.Change
	deadline := time.Now().Add(15 * time.Second)
	for len(got) < count && time.Now().Before(deadline) {
		changes, next, err := st.Read(t.Context(), checkpoint, streamPage)
		if err != nil {
			t.Fatalf("Read(%q, %d) = %v", checkpoint, streamPage, err)
		}
		if len(changes) > streamPage {
			t.Fatalf("Read(%q, %d) returned %d changes", checkpoint, streamPage, len(changes))
		}
		for _, c := range changes {
			if strings.HasPrefix(changeKey(c)[0], p) {
				got = append(got, c)
			}
		}
		checkpoint = next
		if len(changes) == 0 {
			sleep(t.Context(), 50*time.Millisecond)
		}
	}
	// Anything further under the prefix would be a duplicate or a phantom.
	for {
		changes, next, err := st.Read(t.Context(), checkpoint, streamPage)
		if err != nil {
			t.Fatalf("Read(%q, %d) = %v", checkpoint, streamPage, err)
		}
		if len(changes) == 0 {
			return got, checkpoint
		}
		for _, c := range changes {
			if strings.HasPrefix(changeKey(c)[0], p) {
				got = append(got, c)
			}
		}
		checkpoint = next
	}
}

func changeKey(c store.Change) [2]string {
	if c.New != nil {
		return [2]string{c.New.PK, c.New.SK}
	}
	if c.Old != nil {
		return [2]string{c.Old.PK, c.Old.SK}
	}
	return [2]string{}
}

// compareChanges checks got against want item by item: the same changes per
// item, in order. Order across items is not part of the contract (DynamoDB
// Streams orders per item only). IDs must be unique and times set.
func compareChanges(t *testing.T, want, got []store.Change) {
	t.Helper()
	ids := map[string]bool{}
	for _, c := range got {
		if c.ID == "" || ids[c.ID] {
			t.Errorf("change ID %q is empty or repeated", c.ID)
		}
		ids[c.ID] = true
		if c.At.IsZero() {
			t.Errorf("change %s has no time", c.ID)
		}
	}
	byItem := func(changes []store.Change) map[[2]string][]store.Change {
		m := map[[2]string][]store.Change{}
		for _, c := range changes {
			m[changeKey(c)] = append(m[changeKey(c)], c)
		}
		return m
	}
	opts := cmp.Options{itemOpts, cmpopts.IgnoreFields(store.Change{}, "ID", "At")}
	if diff := cmp.Diff(byItem(want), byItem(got), opts); diff != "" {
		t.Errorf("changes per item (-want +got):\n%s", diff)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// RunCheckpoints runs the checkpoint-store contract.
func RunCheckpoints(t *testing.T, newCheckpoints func(t *testing.T) store.Checkpoints) {
	t.Run("LoadSave", func(t *testing.T) {
		cp := newCheckpoints(t)
		ctx := t.Context()
		p := prefix(t)
		if got, err := cp.Load(ctx, p+"leaderboard"); err != nil || got != "" {
			t.Errorf("Load(unsaved) = %q, %v; want \"\", nil", got, err)
		}
		steps := []struct{ consumer, checkpoint string }{
			{p + "leaderboard", "12"}, {p + "metrics", "3"}, {p + "leaderboard", "40"},
		}
		want := map[string]string{}
		for _, s := range steps {
			if err := cp.Save(ctx, s.consumer, s.checkpoint); err != nil {
				t.Fatalf("Save(%q, %q) = %v", s.consumer, s.checkpoint, err)
			}
			want[s.consumer] = s.checkpoint
			for consumer, w := range want {
				if got, err := cp.Load(ctx, consumer); err != nil || got != w {
					t.Errorf("after Save(%q, %q): Load(%q) = %q, %v; want %q", s.consumer, s.checkpoint, consumer, got, err, w)
				}
			}
		}
	})
}

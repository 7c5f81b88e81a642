package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// flakyRecompute fails every batch that holds a poisoned key, and the
// first failFirst calls of any batch; it records the keys it handled.
type flakyRecompute struct {
	mu        sync.Mutex
	poison    map[string]bool
	failFirst int
	calls     int
	handled   []string
}

func (f *flakyRecompute) recompute(_ context.Context, changes []store.Change) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls <= f.failFirst {
		return errors.New("transient failure")
	}
	for _, c := range changes {
		if f.poison[c.New.SK] {
			return fmt.Errorf("item %s cannot be recomputed", c.New.SK)
		}
	}
	for _, c := range changes {
		f.handled = append(f.handled, c.New.SK)
	}
	return nil
}

func TestChangeTailerDeadLettersPoison(t *testing.T) {
	tests := []struct {
		name        string
		poison      []string
		failFirst   int
		wantHandled []string
		wantDead    []string
	}{
		{name: "healthy", wantHandled: []string{"a", "b", "c", "d"}},
		{name: "transient failure is retried", failFirst: 2, wantHandled: []string{"a", "b", "c", "d"}},
		{name: "poison is dead-lettered, the rest handled", poison: []string{"b"}, wantHandled: []string{"a", "c", "d"}, wantDead: []string{"b"}},
		{name: "two poisons", poison: []string{"a", "d"}, wantHandled: []string{"b", "c"}, wantDead: []string{"a", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "gauntlet.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			dlq, err := db.Queue(ChangesDeadLetterQueue, sqlite.QueueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f := &flakyRecompute{poison: map[string]bool{}, failFirst: tt.failFirst}
			for _, k := range tt.poison {
				f.poison[k] = true
			}
			tailer := &changeTailer{stream: db.Stream(), checkpoints: db.Checkpoints(), recompute: f.recompute,
				deadLetter: dlq, log: slog.New(slog.NewTextHandler(io.Discard, nil)), attempts: 3, backoff: time.Millisecond}
			put := func(sk string) {
				if _, err := db.Table().Put(ctx, store.Item{PK: "P", SK: sk, Data: json.RawMessage(`{}`)}, store.Cond{}); err != nil {
					t.Fatal(err)
				}
			}
			// Two batches: the poison must not hold up the second one.
			put("a")
			put("b")
			drain(t, tailer)
			put("c")
			put("d")
			drain(t, tailer)

			slices.Sort(f.handled)
			if diff := cmp.Diff(tt.wantHandled, f.handled); diff != "" {
				t.Errorf("handled changes (-want +got):\n%s", diff)
			}
			msgs, err := dlq.Receive(ctx, 10, time.Minute, 0)
			if err != nil {
				t.Fatal(err)
			}
			var dead []string
			for _, m := range msgs {
				var d DeadChange
				if err := json.Unmarshal(m.Body, &d); err != nil {
					t.Fatal(err)
				}
				if d.PK != "P" || d.ChangeID == "" || d.Error == "" {
					t.Errorf("dead-letter record %+v lacks its key, change id or error", d)
				}
				dead = append(dead, d.SK)
			}
			slices.Sort(dead)
			if diff := cmp.Diff(tt.wantDead, dead); diff != "" {
				t.Errorf("dead-lettered changes (-want +got):\n%s", diff)
			}
		})
	}
}

// drain steps the tailer until the stream has nothing new.
func drain(t *testing.T, tailer *changeTailer) {
	t.Helper()
	for range 10 {
		n, err := tailer.step(context.Background())
		if err != nil {
			t.Fatalf("step: %v", err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("the tailer never caught up with the stream")
}

package pipeline_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// racingTable is the real table where the first write of one run's item,
// once armed, is preceded by a competing handler's work: the write then
// loses its version condition and the update is retried on what the
// competitor stored.
type racingTable struct {
	store.Table
	runID string
	mu    sync.Mutex
	race  func() // called once, before the first armed write
	// to, when set, arms only a write that moves the run to this status.
	to run.Status
}

func (r *racingTable) Put(ctx context.Context, it store.Item, cond store.Cond) (store.Item, error) {
	if it.PK == "RUN#"+r.runID && it.SK == "RUN" && r.writesStatus(it) {
		r.mu.Lock()
		race := r.race
		r.race = nil
		r.mu.Unlock()
		if race != nil {
			race()
		}
	}
	return r.Table.Put(ctx, it, cond)
}

func (r *racingTable) writesStatus(it store.Item) bool {
	if r.to == "" {
		return true
	}
	var v struct {
		Status run.Status `json:"status"`
	}
	return json.Unmarshal(it.Data, &v) == nil && v.Status == r.to
}

// A stop whose write is retried after a concurrent stop writes one "stop"
// line: the retry finds the run stopping and changes nothing.
func TestConcurrentStopsLogOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.submit(stopConfig)
	racing := &racingTable{Table: e.db.Table(), runID: r.ID}
	racing.race = func() {
		if _, err := e.svc.Stop(e.ctx, r.ID, testUser); err != nil {
			t.Errorf("competing Stop: %v", err)
		}
	}
	stopped, err := e.withTable(racing).Stop(e.ctx, r.ID, testUser)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if stopped.Status != run.Stopping {
		t.Errorf("Stop returned %s, want stopping", stopped.Status)
	}
	if got := e.logSteps(r.ID)["stop"]; got != 1 {
		t.Errorf("%d \"stop\" log lines after two concurrent stops, want 1", got)
	}
}

// A very early stop ends the run once: when the planner's drain and the
// watchdog's end the run at the same time, the one that loses the race
// writes no second "stopped" line.
func TestStoppedRunEndsWithOneLogLine(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.submit(stopConfig)
	if _, err := e.svc.Stop(e.ctx, r.ID, testUser); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	racing := &racingTable{Table: e.db.Table(), runID: r.ID, to: run.Stopped}
	plain := e.svc
	e.svc = e.withTable(racing)
	armed := false
	racing.mu.Lock()
	racing.race = func() {
		armed = true
		// The planner has planned the run and drained it; the watchdog
		// ends it first.
		if err := plain.Watch(e.ctx); err != nil {
			t.Errorf("competing Watch: %v", err)
		}
	}
	racing.mu.Unlock()
	ended := e.pumpUntil(r.ID, time.Minute)
	if !armed {
		t.Fatal("the run's item was never written through the racing table; the race was not made")
	}
	if ended.Status != run.Stopped {
		t.Fatalf("run ended %s, want stopped", ended.Status)
	}
	if got := e.logSteps(r.ID)["stopped"]; got != 1 {
		t.Errorf("%d \"stopped\" log lines, want 1", got)
	}
}

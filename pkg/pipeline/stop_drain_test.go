package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// countingTable is the real table that counts the operations made on it.
type countingTable struct {
	store.Table
	ops atomic.Int64
}

func (c *countingTable) Get(ctx context.Context, pk, sk string) (store.Item, error) {
	c.ops.Add(1)
	return c.Table.Get(ctx, pk, sk)
}

func (c *countingTable) Put(ctx context.Context, it store.Item, cond store.Cond) (store.Item, error) {
	c.ops.Add(1)
	return c.Table.Put(ctx, it, cond)
}

func (c *countingTable) Create(ctx context.Context, items []store.Item) (int, error) {
	c.ops.Add(1)
	return c.Table.Create(ctx, items)
}

func (c *countingTable) Delete(ctx context.Context, pk, sk string, cond store.Cond) error {
	c.ops.Add(1)
	return c.Table.Delete(ctx, pk, sk, cond)
}

func (c *countingTable) Add(ctx context.Context, pk, sk string, d map[string]int64, g *store.Guard) (store.Item, error) {
	c.ops.Add(1)
	return c.Table.Add(ctx, pk, sk, d, g)
}

func (c *countingTable) Query(ctx context.Context, q store.Query) (store.Page, error) {
	c.ops.Add(1)
	return c.Table.Query(ctx, q)
}

func (c *countingTable) Transact(ctx context.Context, ops []store.Op) error {
	c.ops.Add(1)
	return c.Table.Transact(ctx, ops)
}

// withTable returns a service on e's ports but the table tbl.
func (e *env) withTable(tbl store.Table) *pipeline.Service {
	e.t.Helper()
	svc, err := pipeline.New(pipeline.Ports{Table: tbl, Plan: e.queues["plan"], Slots: e.queues["slots"],
		Completions: e.queues["completions"], Results: e.queues["results"], Blobs: e.blobs, Secrets: e.secrets,
		Sandboxes: e.driver}, pipeline.Options{RetryBackoff: 10 * time.Millisecond, GateDelay: 20 * time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	return svc
}

// pumpQueue delivers the visible messages of one queue once (a batch at a
// time, at most limit) and returns how many it handled.
func (e *env) pumpQueue(name string, limit int) int {
	e.t.Helper()
	n := 0
	for n < limit {
		msgs, err := e.queues[name].Receive(e.ctx, min(queue.MaxBatch, limit-n), time.Minute, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(msgs) == 0 {
			return n
		}
		e.handleAll(name, e.queues[name], msgs)
		n += len(msgs)
	}
	return n
}

// manyAgents is 8 agents × 15 tasks × 25 attempts = 3,000 slots.
func manyAgents() string {
	var b strings.Builder
	b.WriteString("[experiment]\nbenchmark = \"demo-bench\"\n[execution]\nattempts_per_task = 25\nmax_concurrent_attempts = 2\n")
	for i := range 8 {
		fmt.Fprintf(&b, "[[agents]]\nname = \"nop-%d\"\nharness = \"nop\"\n", i)
	}
	return b.String()
}

func TestStopAnswersAtOnceAndTheDrainCancelsEverySlot(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.submit(manyAgents())
	if r.TotalSlots() != 3000 {
		t.Fatalf("run has %d slots, want 3000", r.TotalSlots())
	}
	e.pumpQueue("plan", 10) // slots created and queued; no slot message handled, nothing launched

	counting := &countingTable{Table: e.db.Table()}
	stopped, err := e.withTable(counting).Stop(e.ctx, r.ID, testUser)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// Read the run, write it, write the log line: a constant, whatever the run's size.
	if ops := counting.ops.Load(); ops > 3 {
		t.Errorf("Stop made %d table operations for a run of %d queued slots, want at most 3", ops, r.TotalSlots())
	}
	if stopped.Status != run.Stopping {
		t.Errorf("Stop returned status %s, want stopping", stopped.Status)
	}
	if done := e.tally(r.ID).Done; done != 0 {
		t.Errorf("the stop request itself settled %d slots, want 0 (the drain does it)", done)
	}

	// The drain runs on the plan queue alone, in bounded chunks.
	drains := 0
	for range 20 {
		n := e.pumpQueue("plan", 1)
		if n == 0 {
			break
		}
		drains += n
	}
	got, err := e.recs.Runs.Run(e.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != run.Stopped {
		t.Fatalf("after %d drain messages the run is %s, want stopped", drains, got.Status)
	}
	if drains < 2 {
		t.Errorf("%d drain messages handled, want at least 2 (3,000 slots is more than one chunk)", drains)
	}
	want := run.Tally{Done: 3000, Cancelled: 3000}
	if diff := cmp.Diff(want, e.tally(r.ID)); diff != "" {
		t.Errorf("tally (-want +got):\n%s", diff)
	}
	agents, err := e.recs.Runs.Agents(e.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		if a.Status != run.Stopped {
			t.Errorf("agent %d is %s, want stopped", a.Index, a.Status)
		}
	}

	// The slot messages planned before the stop launch nothing now.
	for e.pumpOnce() {
	}
	if n := e.logSteps(r.ID)["launched"]; n != 0 {
		t.Errorf("%d launches after the stop, want none", n)
	}
	if results := e.results(r.ID); len(results) != 3000 {
		t.Errorf("%d results, want 3000 (one cancelled result per slot)", len(results))
	}
	if diff := cmp.Diff(want, e.tally(r.ID)); diff != "" {
		t.Errorf("tally after the straggling messages (-want +got):\n%s", diff)
	}
}

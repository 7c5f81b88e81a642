package api

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestMarkEstimatedCosts: a board row is marked cost_estimated exactly when
// the tally of its run agent (matched by harness and ranked model) counts
// results whose cost came from the price table, and usage_self_reported
// when it counts results whose usage the agent reported itself; rows
// without a cost are left alone.
func TestMarkEstimatedCosts(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	recs := records.New(db.Table())
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := run.Run{ID: "r-est", Workspace: "ws1", Name: "r", Benchmark: "demo", Tasks: []string{"a"}, Agents: 3,
		Settings: run.Settings{AttemptsPerTask: 1}, Status: run.Finished, CreatedAt: at}
	var ops records.Ops
	created, err := records.CreateRunOp(r)
	ops.AddAll(created[:1], err)
	ops.Add(records.CreateAgentOp(run.Agent{RunID: r.ID, Index: 0, Harness: "codex", Model: "openai/gpt-5.2", Status: run.Finished}))
	ops.Add(records.CreateAgentOp(run.Agent{RunID: r.ID, Index: 1, Harness: "codex", Model: "anthropic/claude", Status: run.Finished}))
	// A model-free command agent ranks under its name; its usage.json is
	// its own word, not the gateway's meter.
	ops.Add(records.CreateAgentOp(run.Agent{RunID: r.ID, Index: 2, Harness: "command", Name: "heuristic", Status: run.Finished}))
	if err := ops.Transact(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := recs.Transact(ctx, []store.Op{
		records.AgentTallyOp(r.ID, 0, run.Tally{Done: 1, CostMicroUSD: 1200, CostEstimated: 1}),
		records.AgentTallyOp(r.ID, 1, run.Tally{Done: 1, CostMicroUSD: 900}),
		records.AgentTallyOp(r.ID, 2, run.Tally{Done: 1, CostMicroUSD: 248400, UsageSelfReported: 1}),
	}); err != nil {
		t.Fatal(err)
	}
	cost := &v1.Estimate{Value: 0.0012, N: 1}
	rows := []v1.BoardRow{
		{Harness: "codex", Model: "openai/gpt-5.2", RunID: r.ID, CostPerTask: cost},
		{Harness: "codex", Model: "anthropic/claude", RunID: r.ID, CostPerTask: cost},
		{Harness: "oracle", RunID: "r-unknown-and-never-read"}, // no cost: no look-up
		{Harness: "command", Model: "heuristic", RunID: r.ID, CostPerTask: cost},
	}
	h := &boardsAPI{recs: RecordsOf(recs)}
	if err := h.markEstimatedCosts(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if got := []bool{rows[0].CostEstimated, rows[1].CostEstimated, rows[2].CostEstimated}; got[0] != true || got[1] != false || got[2] != false {
		t.Errorf("cost_estimated = %v, want [true false false]", got)
	}
	if got := []bool{rows[0].UsageSelfReported, rows[1].UsageSelfReported, rows[3].UsageSelfReported}; got[0] || got[1] || !got[2] {
		t.Errorf("usage_self_reported = %v, want [false false true]: only the command agent's usage is its own report", got)
	}
}

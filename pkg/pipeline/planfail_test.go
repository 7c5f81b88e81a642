package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// failingCreate is the real table whose Create (the planner's slot fan-out)
// fails, as a throttled or unreachable table would.
type failingCreate struct{ store.Table }

func (failingCreate) Create(context.Context, []store.Item) (int, error) {
	return 0, errors.New("table unavailable")
}

// endedInPlanning checks that the run and its agents ended in status want
// with a reason containing reason, logged at error level, and no slot.
func (e *env) endedInPlanning(runID string, want run.Status, reason string) {
	e.t.Helper()
	r, err := e.recs.Runs.Run(e.ctx, runID)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Status != want || !strings.Contains(r.Reason, reason) {
		e.t.Errorf("run is %s (%q), want %s with a reason containing %q", r.Status, r.Reason, want, reason)
	}
	agents, err := e.recs.Runs.Agents(e.ctx, runID)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, a := range agents {
		if a.Status != want {
			e.t.Errorf("agent %d is %s, want %s", a.Index, a.Status, want)
		}
	}
	lines, _, err := e.recs.Runs.Logs(e.ctx, runID, "", 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	logged := false
	for _, l := range lines {
		logged = logged || (l.Level == records.LevelError && strings.Contains(l.Message, reason))
	}
	if !logged {
		e.t.Errorf("no error log line mentions %q: %+v", reason, lines)
	}
	ids, err := e.recs.Runs.ActiveRuns(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, id := range ids {
		if id == runID {
			e.t.Error("the failed run is still marked active")
		}
	}
}

func TestPermanentPlanningFailureFailsTheRun(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(r *run.Run)
		reason string
	}{
		{"task missing from the pinned manifest", func(r *run.Run) { r.Tasks = append(r.Tasks, "no-such-task") },
			"missing from manifest version"},
		{"pinned manifest version missing", func(r *run.Run) { r.ManifestVersion = "0.0-gone" },
			`the pinned manifest version "0.0-gone" of benchmark demo-bench is missing`},
		{"invalid stored settings", func(r *run.Run) { r.Settings.AttemptsPerTask = 0 },
			"attempts_per_task is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			r := e.submit(oneOracle)
			if _, err := e.recs.Runs.UpdateRun(e.ctx, r.ID, func(r *run.Run) error { tt.break_(r); return nil }); err != nil {
				t.Fatal(err)
			}
			if n := e.pumpQueue("plan", 10); n != 1 {
				t.Fatalf("handled %d plan messages, want 1 (a permanent failure is not retried)", n)
			}
			e.endedInPlanning(r.ID, run.Failed, tt.reason)
			if slots, _, _ := e.recs.Runs.Slots(e.ctx, r.ID, records.AllSlots, "", 10); len(slots) != 0 {
				t.Errorf("%d slots created, want none", len(slots))
			}
		})
	}
}

func TestTransientPlanningFailureFailsAfterBoundedAttempts(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.submit(oneOracle)
	broken := e.withTable(failingCreate{e.db.Table()})
	msgs, err := e.queues["plan"].Receive(e.ctx, 1, time.Minute, 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive plan message: %v, %d", err, len(msgs))
	}
	for attempt := 1; attempt < run.MaxPlanAttempts; attempt++ {
		if err := broken.HandlePlan(e.ctx, msgs[0].Body); err == nil {
			t.Fatalf("attempt %d: HandlePlan = nil, want the table error (deliver it again)", attempt)
		}
		got, err := e.recs.Runs.Run(e.ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != run.Pending || got.PlanAttempts != attempt {
			t.Fatalf("after attempt %d the run is %s with %d plan attempts, want pending with %d", attempt, got.Status, got.PlanAttempts, attempt)
		}
	}
	if err := broken.HandlePlan(e.ctx, msgs[0].Body); err != nil {
		t.Fatalf("last attempt: HandlePlan = %v, want nil (the run failed; the message is done)", err)
	}
	e.endedInPlanning(r.ID, run.Failed, "planning failed 5 times; last error:")
}

func TestWatchdogGivesUpOnPlanningThatNeverCompletes(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.submit(oneOracle)
	// The planner takes the message and never finishes.
	if _, err := e.queues["plan"].Receive(e.ctx, 10, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	now := r.CreatedAt
	clock := func() time.Time { return now }
	svc, err := pipeline.New(pipeline.Ports{Table: e.db.Table(), Plan: e.queues["plan"], Slots: e.queues["slots"],
		Completions: e.queues["completions"], Results: e.queues["results"], Blobs: e.blobs, Secrets: e.secrets,
		Sandboxes: e.driver}, pipeline.Options{LaunchTimeout: time.Minute, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	resent := 0
	for tick := range 40 {
		now = r.CreatedAt.Add(time.Duration(tick) * 20 * time.Second)
		if err := svc.Watch(e.ctx); err != nil {
			t.Fatalf("Watch: %v", err)
		}
		msgs, err := e.queues["plan"].Receive(e.ctx, 10, time.Hour, 0)
		if err != nil {
			t.Fatal(err)
		}
		resent += len(msgs)
	}
	// Re-sent once per LaunchTimeout (not on every tick), then given up.
	if want := run.MaxPlanAttempts - 1; resent != want {
		t.Errorf("the watchdog re-sent the plan %d times, want %d", resent, want)
	}
	e.endedInPlanning(r.ID, run.Failed, "planning did not complete after 5 attempts")
}

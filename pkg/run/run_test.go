package run

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCheckTransition(t *testing.T) {
	all := []Status{Pending, Queued, Running, Finished, Failed, Stopping, Stopped}
	legal := map[[2]Status]bool{
		{Pending, Queued}: true, {Pending, Failed}: true, {Pending, Stopping}: true,
		{Queued, Running}: true, {Queued, Failed}: true, {Queued, Stopping}: true,
		{Running, Finished}: true, {Running, Failed}: true, {Running, Stopping}: true,
		{Stopping, Stopped}: true,
	}
	for _, from := range all {
		for _, to := range all {
			err := CheckTransition(from, to)
			if legal[[2]Status{from, to}] {
				if err != nil {
					t.Errorf("CheckTransition(%s, %s) = %v, want nil", from, to, err)
				}
				continue
			}
			if !errors.Is(err, ErrIllegalTransition) {
				t.Errorf("CheckTransition(%s, %s) = %v, want ErrIllegalTransition", from, to, err)
			}
		}
	}
}

func TestCheckSlotTransition(t *testing.T) {
	all := []SlotStatus{SlotQueued, SlotLaunching, SlotRunning, SlotDone}
	legal := map[[2]SlotStatus]bool{
		{SlotQueued, SlotLaunching}: true, {SlotQueued, SlotDone}: true,
		{SlotLaunching, SlotRunning}: true, {SlotLaunching, SlotQueued}: true, {SlotLaunching, SlotDone}: true,
		{SlotRunning, SlotQueued}: true, {SlotRunning, SlotDone}: true,
	}
	for _, from := range all {
		for _, to := range all {
			err := CheckSlotTransition(from, to)
			if got := err == nil; got != legal[[2]SlotStatus{from, to}] {
				t.Errorf("CheckSlotTransition(%s, %s) = %v, legal = %v", from, to, err, legal[[2]SlotStatus{from, to}])
			}
		}
	}
}

func TestRunSetStatusStampsTimes(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := Run{ID: "r1", Status: Pending}
	for _, s := range []Status{Queued, Running, Finished} {
		if err := r.SetStatus(s, at); err != nil {
			t.Fatalf("SetStatus(%s) = %v", s, err)
		}
	}
	if r.QueuedAt != at || r.StartedAt != at || r.EndedAt != at {
		t.Errorf("times = %v %v %v, want all %v", r.QueuedAt, r.StartedAt, r.EndedAt, at)
	}
	if err := r.SetStatus(Running, at); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("finished → running = %v, want ErrIllegalTransition", err)
	}
	if r.Status != Finished {
		t.Errorf("status after illegal move = %s, want finished (unchanged)", r.Status)
	}
}

func TestSlotIDRoundTrip(t *testing.T) {
	tests := []struct {
		agent   int
		task    string
		attempt int
		id      string
	}{
		{0, "csv-summary", 1, "0/csv-summary/1"},
		{7, "a-b.c_d", 12, "7/a-b.c_d/12"},
		{3, "org/nested-task", 2, "3/org/nested-task/2"},
	}
	for _, tt := range tests {
		id := SlotID(tt.agent, tt.task, tt.attempt)
		if id != tt.id {
			t.Errorf("SlotID(%d, %q, %d) = %q, want %q", tt.agent, tt.task, tt.attempt, id, tt.id)
		}
		a, task, at, err := ParseSlotID(id)
		if err != nil || a != tt.agent || task != tt.task || at != tt.attempt {
			t.Errorf("ParseSlotID(%q) = %d, %q, %d, %v", id, a, task, at, err)
		}
	}
	for _, bad := range []string{"", "x/t/1", "0/t/0", "0//1", "0/t/", "/t/1", "0/t"} {
		if _, _, _, err := ParseSlotID(bad); err == nil {
			t.Errorf("ParseSlotID(%q) = nil error, want one", bad)
		}
	}
}

func TestLaunchIDDeterministic(t *testing.T) {
	a, b := LaunchID("r", "0/t/1", 0), LaunchID("r", "0/t/1", 0)
	if a != b {
		t.Errorf("LaunchID not deterministic: %q vs %q", a, b)
	}
	if LaunchID("r", "0/t/1", 1) == a || LaunchID("r2", "0/t/1", 0) == a {
		t.Errorf("LaunchID collides across generation or run")
	}
}

func TestResultDeltas(t *testing.T) {
	one := 1.0
	tests := []struct {
		name string
		in   Result
		want Tally
	}{
		{"passed", Result{Outcome: Passed, Reward: &one, InputTokens: 10, OutputTokens: 5, CostUSD: 0.0123, DurationMS: 900},
			Tally{Done: 1, Passed: 1, InputTokens: 10, OutputTokens: 5, CostMicroUSD: 12300, DurationMS: 900}},
		{"failed", Result{Outcome: FailedOut}, Tally{Done: 1, Failed: 1}},
		{"agent error", Result{Outcome: Errored, ErrorClass: AgentError}, Tally{Done: 1, Errored: 1}},
		{"infra error", Result{Outcome: Errored, ErrorClass: Infra}, Tally{Done: 1, Errored: 1, InfraErrored: 1}},
		{"retried", Result{Outcome: Errored, ErrorClass: Infra, Retried: true, DurationMS: 50}, Tally{Retries: 1}},
		{"cancelled", Result{Outcome: Cancelled}, Tally{Done: 1, Cancelled: 1}},
	}
	for _, tt := range tests {
		got := tt.in.Deltas()
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: Deltas() mismatch (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(got, TallyFromCounters(got.Counters())); diff != "" {
			t.Errorf("%s: counters round trip (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestEndStatus(t *testing.T) {
	tests := []struct {
		name string
		in   Tally
		want Status
	}{
		{"all infra", Tally{Done: 3, Errored: 3, InfraErrored: 3}, Failed},
		{"one pass", Tally{Done: 3, Errored: 2, InfraErrored: 2, Passed: 1}, Finished},
		{"agent errors", Tally{Done: 2, Errored: 2, InfraErrored: 1}, Finished},
		{"all failed", Tally{Done: 2, Failed: 2}, Finished},
	}
	for _, tt := range tests {
		if got := tt.in.EndStatus(); got != tt.want {
			t.Errorf("%s: EndStatus() = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestResultValidate(t *testing.T) {
	tests := []struct {
		name    string
		in      Result
		wantErr bool
	}{
		{"ok", Result{RunID: "r", SlotID: "0/t/1", Outcome: Passed}, false},
		{"no class", Result{RunID: "r", SlotID: "0/t/1", Outcome: Errored}, true},
		{"retried agent", Result{RunID: "r", SlotID: "0/t/1", Outcome: Errored, ErrorClass: AgentError, Retried: true}, true},
		{"bad outcome", Result{RunID: "r", SlotID: "0/t/1", Outcome: "won"}, true},
		{"no run", Result{SlotID: "0/t/1", Outcome: Passed}, true},
	}
	for _, tt := range tests {
		if err := tt.in.Validate(); (err != nil) != tt.wantErr {
			t.Errorf("%s: Validate() = %v, wantErr %v", tt.name, err, tt.wantErr)
		}
	}
}

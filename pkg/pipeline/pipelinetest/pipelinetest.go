// Package pipelinetest holds InstantDriver, a sandbox driver that runs
// nothing and completes every launch at once with a valid result.json. It is
// used ONLY to measure the platform's own overhead per attempt (go test
// -bench); every functional test runs real sandboxes.
package pipelinetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// InstantDriver is a sandbox.Driver that executes nothing: Launch writes a
// result.json with the reward Reward returns (1 when Reward is nil) under the
// spec's output prefix and sends an Exited completion right away. It never
// lists a live sandbox. It exists to benchmark the pipeline's overhead and
// must not be wired into a platform.
type InstantDriver struct {
	Blobs       blob.Store
	Completions queue.Queue
	// Reward decides each launch's reward; nil means 1.
	Reward func(spec sandbox.Spec) float64

	mu       sync.Mutex
	launched map[string]bool
	busy     time.Duration
}

// Busy returns the total time spent inside Launch (writing result.json and
// sending the completion): the stand-in sandbox's own cost, which a
// measurement of the platform's overhead subtracts.
func (d *InstantDriver) Busy() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.busy
}

var _ sandbox.Driver = (*InstantDriver)(nil)

// Launch implements sandbox.Driver.
func (d *InstantDriver) Launch(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	start := time.Now()
	defer func() {
		d.mu.Lock()
		d.busy += time.Since(start)
		d.mu.Unlock()
	}()
	h := sandbox.Handle{ID: "instant-" + spec.LaunchID, LaunchID: spec.LaunchID, RunID: spec.RunID, SlotID: spec.SlotID, StartedAt: time.Now().UTC()}
	d.mu.Lock()
	if d.launched == nil {
		d.launched = map[string]bool{}
	}
	again := d.launched[spec.LaunchID]
	d.launched[spec.LaunchID] = true
	d.mu.Unlock()
	if again {
		return h, nil
	}
	reward := 1.0
	if d.Reward != nil {
		reward = d.Reward(spec)
	}
	now := time.Now().UTC()
	in, out := 100, 20
	tr := harbor.TrialResult{
		ID: spec.LaunchID, TaskName: spec.Task.Name, TrialName: spec.SlotID, Config: json.RawMessage("{}"),
		AgentInfo:      harbor.AgentInfo{Name: spec.Harness, Version: "instant"},
		AgentResult:    &harbor.AgentResult{NInputTokens: &in, NOutputTokens: &out},
		VerifierResult: &harbor.VerifierResult{Rewards: map[string]float64{"reward": reward}},
		StartedAt:      &h.StartedAt, FinishedAt: &now,
	}
	body, err := json.Marshal(tr)
	if err != nil {
		return h, fmt.Errorf("instant driver: encode result: %w", err)
	}
	if err := d.Blobs.Put(ctx, spec.Output.Prefix+harbor.TrialResultFile, bytes.NewReader(body)); err != nil {
		return h, fmt.Errorf("instant driver: store result: %w", err)
	}
	c, err := json.Marshal(sandbox.Completion{SandboxID: h.ID, LaunchID: spec.LaunchID, Workspace: spec.Workspace,
		RunID: spec.RunID, SlotID: spec.SlotID, Generation: spec.Generation, Reason: sandbox.Exited,
		ExitCode: sandbox.ExitOK, StartedAt: h.StartedAt, StoppedAt: now})
	if err != nil {
		return h, err
	}
	return h, d.Completions.Send(ctx, queue.Outgoing{Body: c})
}

// Stop implements sandbox.Driver; every sandbox has already ended.
func (d *InstantDriver) Stop(context.Context, string) error { return nil }

// List implements sandbox.Driver; no sandbox is ever live.
func (d *InstantDriver) List(context.Context, string) ([]sandbox.Handle, error) { return nil, nil }

// Package pipelinetest holds test fixtures of the pipeline.
//
// It holds test fixtures of the pipeline: InstantDriver, a
// sandbox driver that runs nothing and completes every launch at once with a
// valid result.json, used ONLY to measure the platform's own overhead per
// attempt (go test -bench) — every functional test runs real sandboxes — and
// ImportCatalogEntry / ImportTaskDirs, which make local Harbor task
// directories a ready benchmark in one call (platforms install benchmarks
// through benchsync), and OracleNopConfig, the oracle-and-nop run config the
// end-to-end tests of the pipeline, the local and cloud platforms and the
// console submit.
//
// Writing result.json is the sandbox's work, not the platform's (in the
// cloud the runner uploads it to S3 itself), and creating a file is slow on
// some disks (about 0.3 ms on the 2-core benchmark machine's ext4, more than
// the rest of an attempt). A benchmark of the platform's overhead therefore
// stages every launch's result.json with StageResult before it starts the
// clock and sets Staged; the grader still reads each file from the blob
// store.
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
	// Staged means every launch's result.json was written beforehand with
	// StageResult, so Launch only sends the completion.
	Staged bool

	mu       sync.Mutex
	launched map[string]bool
	busy     time.Duration
}

// Busy returns the total time spent inside Launch (writing result.json
// unless Staged, and sending the completion).
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
	if !d.Staged {
		reward := 1.0
		if d.Reward != nil {
			reward = d.Reward(spec)
		}
		if err := StageResult(ctx, d.Blobs, spec, reward, h.StartedAt); err != nil {
			return h, err
		}
	}
	now := time.Now().UTC()
	c, err := json.Marshal(sandbox.Completion{SandboxID: h.ID, LaunchID: spec.LaunchID, Workspace: spec.Workspace,
		RunID: spec.RunID, SlotID: spec.SlotID, Generation: spec.Generation, Reason: sandbox.Exited,
		ExitCode: sandbox.ExitOK, StartedAt: h.StartedAt, StoppedAt: now})
	if err != nil {
		return h, err
	}
	return h, d.Completions.Send(ctx, queue.Outgoing{Body: c})
}

// StageResult writes the result.json a launch of spec reports: the reward,
// 100 input and 20 output tokens, started at start and finished now. Only
// LaunchID, SlotID, Task.Name, Harness and Output.Prefix of spec are used.
func StageResult(ctx context.Context, blobs blob.Store, spec sandbox.Spec, reward float64, start time.Time) error {
	now := time.Now().UTC()
	in, out := 100, 20
	tr := harbor.TrialResult{
		ID: spec.LaunchID, TaskName: spec.Task.Name, TrialName: spec.SlotID, Config: json.RawMessage("{}"),
		AgentInfo:      harbor.AgentInfo{Name: spec.Harness, Version: "instant"},
		AgentResult:    &harbor.AgentResult{NInputTokens: &in, NOutputTokens: &out},
		VerifierResult: &harbor.VerifierResult{Rewards: map[string]float64{"reward": reward}},
		StartedAt:      &start, FinishedAt: &now,
	}
	body, err := json.Marshal(tr)
	if err != nil {
		return fmt.Errorf("instant driver: encode result of %s: %w", spec.SlotID, err)
	}
	if err := blobs.Put(ctx, spec.Output.Prefix+harbor.TrialResultFile, bytes.NewReader(body)); err != nil {
		return fmt.Errorf("instant driver: store result of %s: %w", spec.SlotID, err)
	}
	return nil
}

// Stop implements sandbox.Driver; every sandbox has already ended.
func (d *InstantDriver) Stop(context.Context, string) error { return nil }

// List implements sandbox.Driver; no sandbox is ever live.
func (d *InstantDriver) List(context.Context, string) ([]sandbox.Handle, error) { return nil, nil }

// Ended implements sandbox.Driver: the driver sends every completion at
// launch and keeps no record of ended sandboxes.
func (d *InstantDriver) Ended(context.Context, string) ([]sandbox.Completion, error) { return nil, nil }

package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// dispatchAttempts bounds how often Dispatch re-reads a slot that changed
// under it.
const dispatchAttempts = 8

// Dispatch launches one generation of a slot. It passes the run's
// max_concurrent_attempts gate and the global sandbox cap — a guarded
// counter each, taken in the same transaction that records the launch intent
// (slot launching, launch id = hash(run, slot, generation)) and its run log
// line — and only then calls the driver. Over a cap the message is re-sent with a delay (the slot
// waits; it is never dropped). A redelivered message for a slot already
// launching adopts the launch (the driver returns the sandbox of the same
// launch id); one for a running, done or older-generation slot changes
// nothing. A stopping run launches nothing: its queued slots are cancelled.
func (s *Dispatcher) Dispatch(ctx context.Context, m SlotMessage) error {
	for range dispatchAttempts {
		slot, err := s.recs.Runs.Slot(ctx, m.RunID, m.SlotID)
		if err != nil {
			return fmt.Errorf("dispatch %s/%s: %w", m.RunID, m.SlotID, err)
		}
		if slot.Generation != m.Generation || slot.Status == run.SlotDone || slot.Status == run.SlotRunning ||
			m.Deferrals < slot.Deferrals {
			return nil
		}
		// The status is read fresh for every slot; the rest of the run is
		// fixed at submission and comes from this process's cache, so a
		// slot does not decode the run's whole task list.
		status, err := s.recs.Runs.RunStatus(ctx, m.RunID)
		if err != nil {
			return fmt.Errorf("dispatch %s/%s: %w", m.RunID, m.SlotID, err)
		}
		info, err := s.facts.runInfo(ctx, m.RunID)
		if err != nil {
			return fmt.Errorf("dispatch %s/%s: %w", m.RunID, m.SlotID, err)
		}
		r := *info
		r.Status = status
		switch {
		case r.Status == run.Stopping || r.Status.Terminal():
			if slot.Status == run.SlotQueued {
				return s.cancelSlot(ctx, slot)
			}
			return nil // a launching slot of a stopping run is settled by the stop path and the watchdog
		case r.Status == run.Pending:
			return resendSlot(ctx, s.ports.Slots, m, s.opts.GateDelay)
		}
		if slot.Status == run.SlotQueued {
			if short, err := s.spaceShort(ctx, slot); err != nil || short {
				if err != nil {
					return fmt.Errorf("dispatch %s/%s: %w", m.RunID, m.SlotID, err)
				}
				return s.defer_(ctx, m, slot)
			}
			acquired, changed, err := s.acquire(ctx, r, &slot)
			switch {
			case err != nil:
				return err
			case changed:
				continue
			case !acquired:
				return s.defer_(ctx, m, slot)
			}
		}
		return s.launch(ctx, r, slot)
	}
	return fmt.Errorf("dispatch %s/%s: slot kept changing: %w", m.RunID, m.SlotID, records.ErrContention)
}

// acquire takes a run gate and a global gate unit and records the launch
// intent, atomically. changed reports that the slot was written by someone
// else meanwhile; !acquired && !changed means a cap is full.
func (s *Dispatcher) acquire(ctx context.Context, r run.Run, slot *run.Slot) (acquired, changed bool, err error) {
	next := *slot
	if err := next.SetStatus(run.SlotLaunching); err != nil {
		return false, false, err
	}
	next.LaunchID = run.LaunchID(r.ID, slot.ID, slot.Generation)
	next.LaunchedAt = s.now()
	next.SandboxID, next.StopReason, next.MissingSince = "", "", time.Time{}
	var ops records.Ops
	ops.Append(records.RunGateOp(r.ID, 1, int64(r.Settings.MaxConcurrentAttempts)),
		records.GlobalGateOp(1, int64(s.opts.MaxSandboxes)))
	ops.Add(records.SlotOp(next))
	ops.Add(records.LogOp(records.LogLine{RunID: r.ID, At: next.LaunchedAt, Level: records.LevelInfo, Step: "launched", Slot: slot.ID,
		Message: fmt.Sprintf("slot %s generation %d launching (launch %s)", slot.ID, slot.Generation, next.LaunchID)}))
	err = ops.Transact(ctx, s.recs)
	if err == nil {
		*slot = next // its stored version is unknown here; later writes use UpdateSlot
		return true, false, nil
	}
	if !records.IsConditionFailed(err) {
		return false, false, fmt.Errorf("dispatch %s/%s: record launch intent: %w", r.ID, slot.ID, err)
	}
	now, gerr := s.recs.Runs.Slot(ctx, r.ID, slot.ID)
	if gerr != nil {
		return false, false, fmt.Errorf("dispatch %s/%s: %w", r.ID, slot.ID, gerr)
	}
	return false, now.Version != slot.Version, nil
}

// spaceShort reports that the platform's storage is below its floor, so
// the slot must wait (like a full gate: its message is put off, its
// retries untouched). It is not the attempt's condition, so nothing is
// written to the run for it; the operator's log says how much is free.
func (s *Dispatcher) spaceShort(ctx context.Context, slot run.Slot) (bool, error) {
	if s.ports.Space == nil {
		return false, nil
	}
	err := s.ports.Space.Check()
	if err == nil {
		return false, nil
	}
	e, ok := diskspace.As(err)
	if !ok {
		return false, fmt.Errorf("check free space: %w", err)
	}
	s.log.WarnContext(ctx, "slot waits for storage space: the data dir is below its free-space floor", "run_id", slot.RunID, "slot", slot.ID,
		"data_dir", e.Dir, "free", diskspace.MB(e.FreeBytes), "floor", diskspace.MB(e.FloorBytes), "deferrals", slot.Deferrals)
	return true, nil
}

// defer_ puts a slot off while a concurrency cap is full or the platform's
// storage is short: it sends the next
// message (deferral count + 1, growing delay) first and records the count on
// the slot second, so duplicates of the old message are recognised and
// dropped, and a crash in between loses nothing.
func (s *Dispatcher) defer_(ctx context.Context, m SlotMessage, slot run.Slot) error {
	next := m
	next.Deferrals = m.Deferrals + 1
	if err := resendSlot(ctx, s.ports.Slots, next, s.gateDelay(m.Deferrals)); err != nil {
		return err
	}
	_, err := s.recs.Runs.UpdateSlot(ctx, slot.RunID, slot.ID, func(cur *run.Slot) error {
		if cur.Generation != m.Generation || cur.Status != run.SlotQueued || cur.Deferrals >= next.Deferrals {
			return records.ErrNoChange
		}
		cur.Deferrals = next.Deferrals
		return nil
	})
	if err != nil {
		return fmt.Errorf("defer %s/%s: %w", slot.RunID, slot.ID, err)
	}
	return nil
}

// gateDelay is the wait before the dispatcher looks again at a slot put off
// n times: GateDelay doubling up to MaxGateDelay. Released gates wake waiting
// slots sooner (see wakeQueued).
func (s *Dispatcher) gateDelay(n int) time.Duration {
	d := s.opts.GateDelay
	for range min(n, 16) {
		d *= 2
		if d >= s.opts.MaxGateDelay {
			return s.opts.MaxGateDelay
		}
	}
	return d
}

// resendSlot sends a slot message to the slots queue after delay.
func resendSlot(ctx context.Context, slots Sender, m SlotMessage, delay time.Duration) error {
	body, err := encodeMessage(m)
	if err != nil {
		return err
	}
	if err := slots.Send(ctx, outgoing(body, delay)); err != nil {
		return fmt.Errorf("re-send slot %s/%s: %w", m.RunID, m.SlotID, err)
	}
	return nil
}

// launch starts (or adopts) the sandbox of a launching slot.
func (s *Dispatcher) launch(ctx context.Context, r run.Run, slot run.Slot) error {
	spec, deadline, err := s.buildSpec(ctx, r, slot)
	if err != nil {
		_, full := diskspace.As(err)
		switch {
		case ctx.Err() != nil:
			return err
		case full:
			return s.failedToStart(ctx, slot, err)
		case errors.Is(err, records.ErrNotFound) || errors.Is(err, secret.ErrNotFound):
			return s.unlaunchable(ctx, slot, err)
		}
		return s.failedToStart(ctx, slot, err)
	}
	h, err := s.ports.Sandboxes.Launch(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("launch %s/%s: %w", r.ID, slot.ID, err)
		}
		return s.failedToStart(ctx, slot, err)
	}
	var stop bool
	_, err = s.recs.Runs.UpdateSlot(ctx, r.ID, slot.ID, func(sl *run.Slot) error {
		stop = false // a retried update decides afresh
		if sl.Generation != slot.Generation || sl.Status != run.SlotLaunching {
			return records.ErrNoChange // already completed, re-queued or cancelled
		}
		stop = sl.StopReason != ""
		sl.SandboxID, sl.Deadline = h.ID, deadline
		return sl.SetStatus(run.SlotRunning)
	})
	if err != nil {
		return fmt.Errorf("launch %s/%s: record sandbox %s: %w", r.ID, slot.ID, h.ID, err)
	}
	if stop {
		if err := s.ports.Sandboxes.Stop(ctx, h.ID); err != nil {
			return fmt.Errorf("stop sandbox %s of %s/%s: %w", h.ID, r.ID, slot.ID, err)
		}
	}
	return s.markRunning(ctx, r, slot.Agent)
}

// unlaunchable records a slot whose sandbox cannot be prepared because
// something the run names is gone (a deleted secret record, a missing task):
// an infrastructure error the platform did not cause, so it is retried only
// within the run's max_retries.
func (s *Dispatcher) unlaunchable(ctx context.Context, slot run.Slot, cause error) error {
	now := s.now()
	s.log.WarnContext(ctx, "sandbox cannot be prepared", "run_id", slot.RunID, "slot", slot.ID, "err", cause)
	res := s.newResult(slot, now, now)
	res.Outcome, res.ErrorClass, res.Message = run.Errored, run.Infra, "the sandbox could not be prepared: "+cause.Error()
	return s.sendGraded(ctx, s.ports.Results, slot, res, retryFromBudget)
}

// failedToStart reports a launch the platform could not make (the driver
// refused it, or reading what the spec needs failed) as a completion, so the
// grader classifies it: a platform loss, re-run without touching max_retries
// — or, when the platform's storage was full, a wait for space that spends
// no retry at all.
func (s *Dispatcher) failedToStart(ctx context.Context, slot run.Slot, cause error) error {
	now := s.now()
	s.log.WarnContext(ctx, "sandbox failed to start", "run_id", slot.RunID, "slot", slot.ID, "err", cause)
	reason := sandbox.FailedToStart
	if _, full := diskspace.As(cause); full {
		reason = sandbox.OutOfSpace
	}
	return sendCompletion(ctx, s.ports.Completions, sandbox.Completion{
		LaunchID: slot.LaunchID, RunID: slot.RunID, SlotID: slot.ID, Generation: slot.Generation,
		Reason: reason, Message: cause.Error(), StartedAt: now, StoppedAt: now,
	})
}

// sendCompletion sends a completion the pipeline itself reports (a sandbox
// that failed to start or was lost) to the completions queue.
func sendCompletion(ctx context.Context, completions Sender, c sandbox.Completion) error {
	body, err := encodeMessage(c)
	if err != nil {
		return err
	}
	if err := completions.Send(ctx, outgoing(body, 0)); err != nil {
		return fmt.Errorf("send completion of %s/%s: %w", c.RunID, c.SlotID, err)
	}
	return nil
}

// markRunning moves the run and the slot's agent from queued to running on
// their first launch.
func (s *core) markRunning(ctx context.Context, r run.Run, agent int) error {
	now := s.now()
	if r.Status == run.Queued {
		if _, err := s.recs.Runs.UpdateRun(ctx, r.ID, func(r *run.Run) error {
			if r.Status != run.Queued {
				return records.ErrNoChange
			}
			return r.SetStatus(run.Running, now)
		}); err != nil {
			return fmt.Errorf("mark run %s running: %w", r.ID, err)
		}
	}
	key := fmt.Sprintf("%s/%d", r.ID, agent)
	if s.facts.seen(key) {
		return nil
	}
	if _, err := s.recs.Runs.UpdateAgent(ctx, r.ID, agent, func(a *run.Agent) error {
		if a.Status != run.Queued {
			return records.ErrNoChange
		}
		return a.SetStatus(run.Running, now)
	}); err != nil {
		return fmt.Errorf("mark run %s agent %d running: %w", r.ID, agent, err)
	}
	s.facts.remember(key)
	return nil
}

// buildSpec assembles the sandbox spec of a slot: task files, harness,
// model, literal env, the agent's and the verifier's secret values (only the
// ones they name), timeouts × multiplier and the output prefix. It returns
// the deadline the watchdog enforces.
func (s *Dispatcher) buildSpec(ctx context.Context, r run.Run, slot run.Slot) (sandbox.Spec, time.Time, error) {
	agents, err := s.facts.agentsOf(ctx, r.ID)
	if err != nil {
		return sandbox.Spec{}, time.Time{}, err
	}
	if slot.Agent < 0 || slot.Agent >= len(agents) {
		return sandbox.Spec{}, time.Time{}, fmt.Errorf("slot %s: agent index %d out of range", slot.ID, slot.Agent)
	}
	a := agents[slot.Agent]
	task, err := s.facts.task(ctx, r.ManifestWorkspace, r.Benchmark, r.ManifestVersion, slot.Task)
	if err != nil {
		return sandbox.Spec{}, time.Time{}, err
	}
	ref, err := taskRef(task)
	if err != nil {
		return sandbox.Spec{}, time.Time{}, err
	}
	mult := r.Settings.TimeoutMultiplier
	if mult <= 0 {
		mult = 1
	}
	spec := sandbox.Spec{
		LaunchID: slot.LaunchID, Workspace: r.Workspace, RunID: r.ID, SlotID: slot.ID, Generation: slot.Generation,
		Task: ref, Harness: a.Harness, Command: a.Command, Model: a.Model,
		ModelType: a.ModelType, BaseURL: a.BaseURL, ExtraHeaders: a.ExtraHeaders, BaseModel: a.BaseModel, LoraModelName: a.LoraModelName,
		Env: mergeEnv(r.Settings.Env, a.Env), VerifierEnv: r.Settings.VerifierEnv,
		JudgeModel: r.Settings.JudgeModel, MaxTokens: r.Settings.MaxTokensPerAttempt, MaxCostUSD: r.Settings.MaxCostUSDPerAttempt,
		VerifierTimeout: scaled(task.VerifierTimeoutSec, mult),
		Image:           pinnedImage(task.Task), Services: task.Environment.ServiceImages(), Network: task.NetworkMode, CPUs: task.CPUs, MemoryMB: task.MemoryMB,
		StorageMB: task.StorageMB, NetworkInstalls: s.opts.Platform.NetworkInstalls,
		Output: sandbox.Output{Prefix: OutputPrefix(r.ID, slot.ID, slot.Generation)},
		Trial: sandbox.Trial{Source: cmp.Or(r.BenchmarkName, r.Benchmark), TaskGitURL: task.Location.GitURL,
			TaskGitCommitID: task.Location.GitCommitID, TaskPath: task.Location.Path, TaskContentHash: task.Location.ContentHash,
			TimeoutMultiplier: mult},
	}
	spec.VerifierImage = verifierImage(task.Task)
	spec.Sidecars, spec.MainDependsOn = Sidecars(task.Environment)
	spec.Artifacts = r.Settings.Artifacts
	if task.AgentTimeoutSec != nil {
		spec.AgentTimeout = scaled(*task.AgentTimeoutSec, mult)
	}
	if spec.Secrets, err = s.secretValues(ctx, r, a.SecretNames); err != nil {
		return spec, time.Time{}, err
	}
	if h, ok := harness.Lookup(a.Harness); ok && h.KeyEnv != "" && a.APIKeySecret != "" {
		if v, ok := spec.Secrets[a.APIKeySecret]; ok {
			spec.Secrets[h.KeyEnv] = v
		}
	}
	if spec.VerifierSecrets, err = s.secretValues(ctx, r, r.Settings.VerifierSecretNames); err != nil {
		return spec, time.Time{}, err
	}
	if r.Settings.JudgeModel != "" && r.Settings.JudgeAPIKeySecret != "" {
		judge, err := s.secretValues(ctx, r, []string{r.Settings.JudgeAPIKeySecret})
		if err != nil {
			return spec, time.Time{}, err
		}
		spec.JudgeKey = judge[r.Settings.JudgeAPIKeySecret]
	}
	life := s.lifetime(task, r.Settings.TimeoutMultiplier)
	spec.Output.Expires = s.now().Add(min(life, maxUploadURLLifetime))
	return spec, s.now().Add(life), nil
}

// maxUploadURLLifetime bounds the sandbox's upload URLs for tasks without
// an agent timeout.
const maxUploadURLLifetime = 24 * time.Hour

// OutputPrefix is the blob key prefix of one generation of a slot:
// result.json and artifacts/ live under it, at
// runs/<run>/slots/<agent>/<task>/<attempt>/g<gen>/ with the task as one
// path segment (benchmark.TaskSegment: "org/name" is stored as "org~name").
func OutputPrefix(runID, slotID string, gen int) string {
	if agent, task, attempt, err := run.ParseSlotID(slotID); err == nil {
		slotID = run.SlotID(agent, benchmark.TaskSegment(task), attempt)
	}
	return fmt.Sprintf("%s%s/slots/%s/g%d/", blob.RunsPrefix, runID, slotID, gen)
}

func scaled(sec, mult float64) time.Duration {
	return time.Duration(sec * mult * float64(time.Second))
}

func mergeEnv(layers ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, l := range layers {
		for k, v := range l {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// secretValues fetches the values of the named secret records (personal
// records of the submitter first, then the workspace's).
func (s *Dispatcher) secretValues(ctx context.Context, r run.Run, names []string) (map[string]secret.Value, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := make(map[string]secret.Value, len(names))
	for _, name := range names {
		ref, err := s.recs.Workspaces.ResolveSecret(ctx, r.Workspace, r.SubmittedBy, name)
		if err != nil {
			return nil, fmt.Errorf("secret record %s of run %s: %w", name, r.ID, err)
		}
		v, err := s.ports.Secrets.Get(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("secret record %s of run %s: read value: %w", name, r.ID, err)
		}
		out[name] = v
	}
	return out, nil
}

// taskRef returns the stored references of a task's files; the sandbox
// driver resolves them through its blob port.
func taskRef(t *records.Task) (sandbox.TaskRef, error) {
	if t.Files.BundleKey == "" && t.Files.Dir == "" {
		return sandbox.TaskRef{}, fmt.Errorf("task %s: %w recorded", t.Name, sandbox.ErrNoTaskFiles)
	}
	return sandbox.TaskRef{Name: t.Name, BundleKey: t.Files.BundleKey, Dir: t.Files.Dir}, nil
}

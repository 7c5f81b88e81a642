package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Grade turns a sandbox completion into an attempt result and sends it to
// the results queue. Classification:
//
//   - out of space (infra, re-run without touching max_retries or the
//     platform's limit, at most SpaceRetryLimit times): the platform's own
//     storage was full while the sandbox started or ran (the driver says
//     so: sandbox.OutOfSpace); the re-run waits at the dispatcher until
//     space is back above the floor;
//   - platform loss (infra, re-run without touching max_retries, at most
//     PlatformRetryLimit times, then errored): the sandbox failed to start,
//     the platform lost it (a crash under it), or the platform stopped it
//     without asking for a stop (the driver shut down);
//   - infra (retried while the slot's infrastructure retries < max_retries):
//     the watchdog stopped it past its deadline (platform timeout), the
//     runner exited non-zero (crash or ExitInfra), or result.json is missing
//     or unreadable;
//   - cancelled: the sandbox was stopped because its run is stopping;
//   - otherwise the verifier decides: reward ≥ the pass threshold passes,
//     below fails. An agent failure (timeout, non-zero exit, setup failure)
//     is final and keeps error class agent with its message, but the reward
//     still scores it;
//   - a failed LLM judge — its latest model call failed (the judge usage
//     in result.json names the failure) or the runner recorded a judge
//     exception — is judge_failed whatever reward the verifier wrote: the
//     work was never judged, so it is never a zero. It is retried like an
//     infra error, except when the judge's key was refused
//     (JudgeModelAuthError): never retried, since each retry would run the
//     agent again only to be refused the same way;
//   - no reward at all (verifier timeout, reward file missing or malformed)
//     is errored. Its class is agent when the agent phase failed (the agent
//     most likely broke what the verifier needed; scored as a failure),
//     infra when the agent phase was clean (the verifier or the platform
//     failed; retried, and left out of the scores if it stays so).
//
// A completion for another generation or launch than the slot's current one,
// or for a slot that is no longer active, is a duplicate and is ignored.
func (s *Grader) Grade(ctx context.Context, c sandbox.Completion) error {
	slot, err := s.recs.Runs.Slot(ctx, c.RunID, c.SlotID)
	if errors.Is(err, records.ErrNotFound) {
		s.log.WarnContext(ctx, "completion for an unknown slot ignored", "run_id", c.RunID, "slot", c.SlotID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("grade %s/%s: %w", c.RunID, c.SlotID, err)
	}
	if slot.Generation != c.Generation || slot.LaunchID != c.LaunchID || !slot.Status.Active() {
		return nil
	}
	info, err := s.facts.runInfo(ctx, c.RunID)
	if err != nil {
		return fmt.Errorf("grade %s/%s: %w", c.RunID, c.SlotID, err)
	}
	res, retry := s.classify(ctx, *info, slot, c)
	return s.sendGraded(ctx, s.ports.Results, slot, res, retry)
}

// retryRule is how an attempt that errored for an infrastructure reason may
// be run again.
type retryRule int

const (
	// retryFromBudget: while the slot has retries of the run's
	// max_retries left.
	retryFromBudget retryRule = iota
	// retryAsPlatformLoss: without touching max_retries, up to
	// PlatformRetryLimit times (the platform lost the attempt).
	retryAsPlatformLoss
	// retryNever: a retry would fail the same way and cost a whole new
	// agent run (the LLM judge's key was refused).
	retryNever
	// retryForSpace: without touching max_retries or PlatformRetryLimit,
	// up to SpaceRetryLimit times (the platform's storage was full).
	retryForSpace
)

// unretryableExceptions are the runner exceptions after which an infra
// error is final: nothing a new attempt changes would fix them.
var unretryableExceptions = []string{harbor.ExceptionJudgeAuth}

// PlatformRetryLimit is how often one attempt (slot) is re-run after the
// platform lost it before it is recorded as errored (infra): a platform
// that keeps failing must still let the run end.
const PlatformRetryLimit = 5

// SpaceRetryLimit is how often one attempt is re-run after the platform's
// storage filled up under it before it is recorded as errored (infra).
// Re-runs launch only once space is back above the floor, so reaching it
// means the attempt itself keeps filling the platform's disk, not that the
// disk stayed full.
const SpaceRetryLimit = 10

// sendGraded decides whether an infrastructure error is retried and sends
// the result to the results queue. A platform loss (platform) is re-run
// without touching the run's max_retries budget, up to PlatformRetryLimit
// times; any other infrastructure error is retried while the slot has
// retries of that budget left. A stopping run retries nothing.
func (s *core) sendGraded(ctx context.Context, results Sender, slot run.Slot, res run.Result, retry retryRule) error {
	if res.Retryable() && retry != retryNever {
		if err := s.decideRetry(ctx, slot, &res, retry); err != nil {
			return fmt.Errorf("grade %s/%s: %w", slot.RunID, slot.ID, err)
		}
	}
	body, err := encodeMessage(ResultMessage{SchemaVersion: SchemaVersion, Result: res})
	if err != nil {
		return err
	}
	if err := results.Send(ctx, outgoing(body, 0)); err != nil {
		return fmt.Errorf("grade %s/%s: send result: %w", slot.RunID, slot.ID, err)
	}
	return nil
}

func (s *core) decideRetry(ctx context.Context, slot run.Slot, res *run.Result, rule retryRule) error {
	info, err := s.facts.runInfo(ctx, slot.RunID)
	if err != nil {
		return err
	}
	switch {
	case rule == retryForSpace && slot.SpaceRetries >= SpaceRetryLimit:
		res.Message = fmt.Sprintf("%s (given up after the platform re-ran this attempt %d times for want of storage space)", res.Message, slot.SpaceRetries)
		return nil
	case rule == retryAsPlatformLoss && slot.PlatformRetries >= PlatformRetryLimit:
		res.Message = fmt.Sprintf("%s (given up after the platform re-ran this attempt %d times)", res.Message, slot.PlatformRetries)
		return nil
	case rule == retryFromBudget && slot.InfraRetries() >= info.Settings.MaxRetries:
		return nil
	}
	r, err := s.recs.Runs.Run(ctx, slot.RunID) // a stopping run retries nothing
	if err != nil {
		return err
	}
	res.Retried = r.Status.Launchable()
	res.PlatformRetry = res.Retried && rule != retryFromBudget
	res.OutOfSpace = res.Retried && rule == retryForSpace
	return nil
}

// newResult is the attempt result of the slot's current generation before
// it is graded.
func (s *core) newResult(slot run.Slot, started, ended time.Time) run.Result {
	res := run.Result{
		RunID: slot.RunID, SlotID: slot.ID, Generation: slot.Generation, Agent: slot.Agent, Task: slot.Task,
		Attempt: slot.Attempt, LaunchID: slot.LaunchID, ArtifactsPrefix: OutputPrefix(slot.RunID, slot.ID, slot.Generation),
		StartedAt: started, EndedAt: ended, RecordedAt: s.now(),
	}
	if !started.IsZero() && ended.After(started) {
		res.DurationMS = ended.Sub(started).Milliseconds()
	}
	return res
}

// classify builds the attempt result of a completion (Retried not yet set)
// and says how an infrastructure error may be retried.
func (s *Grader) classify(ctx context.Context, r run.Run, slot run.Slot, c sandbox.Completion) (run.Result, retryRule) {
	res := s.newResult(slot, c.StartedAt, c.StoppedAt)
	infra := func(format string, args ...any) run.Result {
		res.Outcome, res.ErrorClass, res.Message = run.Errored, run.Infra, fmt.Sprintf(format, args...)
		return res
	}
	switch c.Reason {
	case sandbox.FailedToStart:
		return infra("sandbox failed to start: %s", c.Message), retryAsPlatformLoss
	case sandbox.Lost:
		return infra("the platform lost the sandbox: %s", c.Message), retryAsPlatformLoss
	case sandbox.OutOfSpace:
		return infra("the platform ran out of storage space: %s", c.Message), retryForSpace
	case sandbox.UserStopped:
		switch slot.StopReason {
		case run.StopCancel:
			res.Outcome, res.Message = run.Cancelled, "the run was stopped"
			return res, retryFromBudget
		case run.StopDeadline:
			return infra("platform timeout: the sandbox ran past its deadline and was stopped"), retryFromBudget
		}
		// Nobody in the pipeline asked for this stop: the sandbox driver
		// shut down under it.
		return infra("the sandbox was stopped by the platform: %s", c.Message), retryAsPlatformLoss
	case sandbox.Exited:
	default:
		return infra("unknown sandbox stop reason %q", c.Reason), retryFromBudget
	}
	if c.ExitCode != sandbox.ExitOK {
		if slot.StopReason == run.StopCancel {
			res.Outcome, res.Message = run.Cancelled, "the run was stopped"
			return res, retryFromBudget
		}
		return infra("the sandbox runner crashed (exit code %d)%s", c.ExitCode, suffix(c.Message)), retryFromBudget
	}
	tr, err := s.readResult(ctx, res.ArtifactsPrefix)
	if err != nil {
		return infra("%v", err), retryFromBudget
	}
	res = scoreTrial(res, tr, r.Settings.PassThreshold)
	if tr.ExceptionInfo != nil && slices.Contains(unretryableExceptions, tr.ExceptionInfo.ExceptionType) {
		return res, retryNever
	}
	return res, retryFromBudget
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// readResult reads and decodes the result.json under prefix.
func (s *Grader) readResult(ctx context.Context, prefix string) (harbor.TrialResult, error) {
	rc, err := s.ports.Blobs.Get(ctx, prefix+harbor.TrialResultFile)
	if errors.Is(err, blob.ErrNotFound) {
		return harbor.TrialResult{}, errors.New("the runner exited cleanly but left no result.json")
	}
	if err != nil {
		return harbor.TrialResult{}, fmt.Errorf("read result.json: %w", err)
	}
	defer rc.Close()
	tr, err := harbor.DecodeTrialResult(rc)
	if err != nil {
		return harbor.TrialResult{}, fmt.Errorf("unreadable result.json: %w", err)
	}
	return tr, nil
}

// scoreTrial applies the pass threshold and the error classes to a trial.
func scoreTrial(res run.Result, tr harbor.TrialResult, threshold float64) run.Result {
	if tr.StartedAt != nil && tr.FinishedAt != nil && tr.FinishedAt.After(*tr.StartedAt) {
		res.StartedAt, res.EndedAt = tr.StartedAt.UTC(), tr.FinishedAt.UTC()
		res.DurationMS = tr.FinishedAt.Sub(*tr.StartedAt).Milliseconds()
	}
	if ar := tr.AgentResult; ar != nil {
		res.UsageReported = ar.NInputTokens != nil || ar.NOutputTokens != nil
		res.InputTokens, res.CacheTokens, res.OutputTokens = intOf(ar.NInputTokens), intOf(ar.NCacheTokens), intOf(ar.NOutputTokens)
		if ar.CostUSD != nil {
			res.CostUSD, res.CostReported = *ar.CostUSD, true
			est, _ := ar.Metadata["cost_estimated"].(bool)
			res.CostEstimated = est
		}
		// Usage the model gateway did not meter (no model_gateway record:
		// a model-free agent's own usage.json) is the agent's word only.
		_, metered := ar.Metadata["model_gateway"]
		res.UsageSelfReported = (res.UsageReported || res.CostReported) && !metered
	}
	// The judge's model use stays apart from the agent's tokens and cost
	// (the leaderboard's cost per task is the agent's).
	var extra struct {
		Judge  *run.JudgeUsage `json:"judge"`
		Limits []string        `json:"limits"`
	}
	if raw, ok := tr.Extra[run.ResultExtraKey]; ok && json.Unmarshal(raw, &extra) == nil {
		res.Judge, res.Limits = extra.Judge, extra.Limits
	}
	res.Steps = stepResults(tr.StepResults)
	agentFailed := tr.ExceptionInfo != nil && slices.Contains(harbor.AgentPhaseExceptions, tr.ExceptionInfo.ExceptionType)
	if tr.ExceptionInfo != nil {
		res.Message = tr.ExceptionInfo.ExceptionType + ": " + tr.ExceptionInfo.ExceptionMessage
	}
	reward, ok := tr.Reward()
	if judgeFailed(tr, res.Judge) {
		res.Outcome, res.ErrorClass = run.JudgeFailed, ""
		if ok {
			res.Reward = &reward // what the verifier wrote without its judge: kept, not scored
		}
		if res.Message == "" {
			res.Message = "the LLM judge's latest model call failed: " + res.Judge.Failure
		}
		return res
	}
	if !ok {
		res.Outcome, res.ErrorClass = run.Errored, run.Infra
		if agentFailed {
			res.ErrorClass = run.AgentError
		}
		if res.Message == "" {
			res.Message = "the verifier produced no reward"
		}
		return res
	}
	res.Reward = &reward
	if tr.VerifierResult != nil && len(tr.VerifierResult.Rewards) > 0 {
		res.Rewards = tr.VerifierResult.Rewards
	}
	res.Outcome = run.FailedOut
	if reward >= threshold {
		res.Outcome = run.Passed
	}
	if agentFailed {
		res.ErrorClass = run.AgentError
	}
	return res
}

// judgeFailed reports whether the trial's LLM judge failed: the runner
// recorded a judge exception, or the judge's latest model call failed.
func judgeFailed(tr harbor.TrialResult, judge *run.JudgeUsage) bool {
	if tr.ExceptionInfo != nil && slices.Contains(harbor.JudgeExceptions, tr.ExceptionInfo.ExceptionType) {
		return true
	}
	return judge != nil && judge.Failure != ""
}

// stepResults keeps a multi-step trial's steps with the attempt.
func stepResults(steps []harbor.StepResult) []run.StepResult {
	var out []run.StepResult
	for _, s := range steps {
		r := run.StepResult{Name: s.StepName}
		if s.VerifierResult != nil && len(s.VerifierResult.Rewards) > 0 {
			r.Rewards = s.VerifierResult.Rewards
			if v, ok := harbor.MainReward(s.VerifierResult.Rewards); ok {
				r.Reward = &v
			}
		}
		if e := s.ExceptionInfo; e != nil {
			r.Exception = e.ExceptionType + ": " + e.ExceptionMessage
		}
		if ar := s.AgentResult; ar != nil {
			r.InputTokens, r.CacheTokens, r.OutputTokens = intOf(ar.NInputTokens), intOf(ar.NCacheTokens), intOf(ar.NOutputTokens)
			if ar.CostUSD != nil {
				r.CostUSD = *ar.CostUSD
			}
		}
		if d, ok := s.AgentExecution.Duration(); ok {
			r.AgentMS = d.Milliseconds()
		}
		if d, ok := s.Verifier.Duration(); ok {
			r.VerifierMS = d.Milliseconds()
		}
		out = append(out, r)
	}
	return out
}

func intOf(p *int) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

// retryDelay is the backoff before retry number gen+1 of a slot.
func (s *core) retryDelay(gen int) time.Duration {
	d := s.opts.RetryBackoff
	for range gen {
		d *= 2
		if d >= maxQueueDelay {
			return maxQueueDelay
		}
	}
	return d
}

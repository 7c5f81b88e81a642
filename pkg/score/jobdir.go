package score

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
)

// ReadJobDir reads every trial result.json under a Harbor job directory (or
// a directory of jobs) and groups the attempts like Read. A result.json with
// neither task_name nor trial_name is a job-level result and is skipped.
//
// Each trial is one attempt of its task: reward ≥ threshold passes, a
// missing reward is errored (and scores 0). The entrant is the agent name and
// "provider/name" of its model; cost and tokens come from agent_result (a
// multi-step trial's: the sum of its steps', as Harbor totals them), the
// reward from the trial's verifier_result (which Harbor derives from the
// steps' by the task's strategy) and the duration from the trial's started_at and finished_at. Harbor results
// name no task set or version, so all land on one unnamed board.
func ReadJobDir(dir string, threshold float64) ([]leaderboard.EntrantInput, error) {
	c := newCollector()
	if err := readJobDir(dir, threshold, c); err != nil {
		return nil, err
	}
	return c.inputs(), nil
}

func readJobDir(dir string, threshold float64, c *collector) error {
	found := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != harbor.TrialResultFile {
			return nil
		}
		isTrial, err := looksLikeTrialResult(path)
		if err != nil || !isTrial {
			return err
		}
		tr, err := harbor.ReadTrialResult(path)
		if err != nil {
			return err
		}
		if first, ok := c.add(trialRecord(tr, threshold, path)); !ok {
			return fmt.Errorf("%s: trial %q of %s is also in %s", path, tr.TrialName, tr.TaskName, first)
		}
		found++
		return nil
	})
	if err != nil {
		return fmt.Errorf("read job directory: %w", err)
	}
	if found == 0 {
		return fmt.Errorf("read job directory: %s: no trial %s found", dir, harbor.TrialResultFile)
	}
	return nil
}

// looksLikeTrialResult reports whether the JSON object at path names a task
// or a trial, which a job-level result.json does not.
func looksLikeTrialResult(path string) (bool, error) {
	data, err := harbor.ReadFileLimited(path, harbor.MaxTrialResultBytes)
	if err != nil {
		return false, err
	}
	var probe struct {
		TaskName  *string `json:"task_name"`
		TrialName *string `json:"trial_name"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return false, fmt.Errorf("%s: invalid JSON: %w", path, err)
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return probe.TaskName != nil || probe.TrialName != nil, nil
}

// trialRecord scores a trial as the platform's grader does: a reward is
// passed or failed; a judge exception is judge_failed; no reward is an
// agent error when the agent phase failed and a platform error otherwise.
func trialRecord(tr harbor.TrialResult, threshold float64, path string) record {
	a := leaderboard.Attempt{Task: tr.TaskName, Outcome: leaderboard.Errored, ErrorClass: leaderboard.PlatformError}
	exception := ""
	if tr.ExceptionInfo != nil {
		exception = tr.ExceptionInfo.ExceptionType
	}
	reward, ok := tr.Reward()
	if n := len(tr.StepResults); exception == "" && !ok && n > 0 && tr.StepResults[n-1].ExceptionInfo != nil {
		// A multi-step trial records its failures per step: the last
		// step's says why the trial has no reward.
		exception = tr.StepResults[n-1].ExceptionInfo.ExceptionType
	}
	switch {
	case slices.Contains(harbor.JudgeExceptions, exception):
		a.Outcome, a.ErrorClass = leaderboard.JudgeFailed, ""
	case ok:
		a.Outcome, a.ErrorClass = outcomeOf(reward, threshold), ""
	case slices.Contains(harbor.AgentPhaseExceptions, exception):
		a.ErrorClass = leaderboard.AgentError
	}
	// Harbor's own totals: agent_result, else (a multi-step trial) the
	// sum of its steps' agent results.
	in, cache, out, cost := tr.UsageTotals()
	if cost != nil {
		a.CostUSD, a.HasCost = *cost, true
	}
	if in != nil || out != nil {
		a.HasTokens = true
		a.InputTokens, a.OutputTokens = int64(intOr0(in)), int64(intOr0(out))
	}
	a.CacheTokens = int64(intOr0(cache))
	if tr.StartedAt != nil && tr.FinishedAt != nil && !tr.FinishedAt.Before(*tr.StartedAt) {
		a.DurationSec, a.HasDuration = tr.FinishedAt.Sub(*tr.StartedAt).Seconds(), true
	}
	return record{
		entrant:  leaderboard.Entrant{Harness: tr.AgentInfo.Name, Model: modelName(tr.AgentInfo.ModelInfo)},
		attempt:  a,
		identity: "trial:" + tr.TrialName,
		where:    path,
	}
}

// modelName is "provider/name", the spelling run configs use.
func modelName(m *harbor.ModelInfo) string {
	switch {
	case m == nil:
		return ""
	case m.Provider == "":
		return m.Name
	}
	return m.Provider + "/" + m.Name
}

func intOr0(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

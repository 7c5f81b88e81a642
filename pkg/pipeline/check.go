package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// The environment check runs these two harness rows: the oracle (the
// task's own solution/solve.sh) and nop (does nothing). They are harness
// data like any other; the check only needs their two roles.
const (
	checkOracle = "oracle"
	checkNop    = "nop"
)

// checkConfig is the run config of an environment check: the oracle and nop
// once on every task, one infrastructure retry. Both are model-free
// harnesses, so their agents have no [agents.model], and unnamed, so they
// rank as the entrants "oracle" and "nop" like any user's.
const checkConfig = `
[experiment]
benchmark = %q
[execution]
attempts_per_task = 1
max_concurrent_attempts = 4
max_retries = 1
[[agents]]
harness = %q
[[agents]]
harness = %q
`

// StartCheck starts the environment check of the benchmark's ready manifest
// version (or of the version its sync is preparing): a run of the oracle
// and nop, once per available task, in each task's real environment. It is
// idempotent per manifest version: a check already started (or done) is
// returned as it is, and the run is submitted with an idempotency key
// derived from the version, so a retried request never starts a second
// run. A check started while images were being prepared left those tasks
// unavailable; once it is done, StartCheck checks the ones ready since in a
// run of their own (keyed by their names) and keeps the other verdicts, so
// a check starts per task as its image gets ready.
func (s *Submitter) StartCheck(ctx context.Context, ws, user, ref string) (records.EnvCheck, error) {
	b, m, problem, err := s.readyBenchmark(ctx, ws, ref)
	if err != nil {
		return records.EnvCheck{}, err
	}
	if problem != nil {
		return records.EnvCheck{}, &RejectedError{Problems: []Problem{*problem}}
	}
	existing, err := s.recs.Benchmarks.EnvCheck(ctx, ws, b.Key, m.Version)
	switch {
	case err == nil:
		c, err := s.finishCheck(ctx, existing)
		if err != nil || c.Status != records.CheckDone {
			return c, err
		}
		// Started while images were prepared: the tasks ready since are
		// checked now, in a run of their own; the other verdicts stay.
		if ready := readySince(m, c); len(ready) > 0 {
			return s.startCheckRun(ctx, ws, user, b.Key, m.Version, ready, c.Tasks)
		}
		return c, nil
	case !errors.Is(err, records.ErrNotFound):
		return records.EnvCheck{}, err
	}
	return s.startCheckRun(ctx, ws, user, b.Key, m.Version, nil, nil)
}

// readySince names the tasks a done check left unavailable because their
// image was still being prepared and that are ready now, sorted.
func readySince(m benchmark.Manifest, c records.EnvCheck) []string {
	var names []string
	for _, tc := range c.Tasks {
		if tc.Verdict != records.CheckUnavailable || !strings.Contains(tc.Detail, benchmark.StillPreparing) {
			continue
		}
		if t, ok := m.Task(tc.Task); ok && t.Available() {
			names = append(names, tc.Task)
		}
	}
	slices.Sort(names)
	return names
}

// startCheckRun submits the check run of a version — of every task, or of
// only (tasks whose image got ready after an earlier check, whose verdicts
// kept are carried over) — and records the check as running.
func (s *Submitter) startCheckRun(ctx context.Context, ws, user, key, version string, only []string, kept []records.TaskCheck) (records.EnvCheck, error) {
	doc := fmt.Sprintf(checkConfig, key, checkOracle, checkNop)
	idem, name := "envcheck:"+key+"@"+version, "environment check of "+key+"@"+version
	if len(only) > 0 {
		quoted := make([]string, len(only))
		for i, n := range only {
			quoted[i] = strconv.Quote(n)
		}
		doc += "[tasks]\ntask_names = [" + strings.Join(quoted, ", ") + "]\n"
		sum := sha256.Sum256([]byte(strings.Join(only, "\x00")))
		idem += "+" + hex.EncodeToString(sum[:8])
		name += fmt.Sprintf(" (%d tasks ready since)", len(only))
	}
	res, err := s.Submit(ctx, SubmitRequest{Workspace: ws, User: user, Document: []byte(doc), IdempotencyKey: idem, Name: name})
	if err != nil {
		return records.EnvCheck{}, err
	}
	c := records.EnvCheck{Workspace: ws, Key: key, Version: res.Run.ManifestVersion, Status: records.CheckRunning,
		Run: res.Run.ID, StartedAt: res.Run.CreatedAt}
	for _, tc := range kept {
		if !slices.Contains(only, tc.Task) {
			c.Tasks = append(c.Tasks, tc)
		}
	}
	for _, u := range res.Run.UnavailableTasks {
		c.Tasks = append(c.Tasks, records.TaskCheck{Task: u.Name, Verdict: records.CheckUnavailable, Detail: u.Reason})
	}
	if err := s.recs.Benchmarks.PutEnvCheck(ctx, c); err != nil {
		return records.EnvCheck{}, err
	}
	s.log.InfoContext(ctx, "environment check started", "workspace", ws, "key", key, "version", c.Version, "run_id", c.Run, "tasks", len(res.Run.Tasks))
	return c, nil
}

// Check returns the environment check of a manifest version, first
// recording its verdicts when its run has ended since; ErrNotFound when no
// check was started.
func (s *Submitter) Check(ctx context.Context, ws, key, version string) (records.EnvCheck, error) {
	c, err := s.recs.Benchmarks.EnvCheck(ctx, ws, key, version)
	if err != nil {
		return records.EnvCheck{}, err
	}
	return s.finishCheck(ctx, c)
}

// finishCheck turns a running check whose run is terminal into verdicts.
// Recomputing from the same results gives the same verdicts, so two
// readers finishing it at once write the same item.
func (s *Submitter) finishCheck(ctx context.Context, c records.EnvCheck) (records.EnvCheck, error) {
	if c.Status != records.CheckRunning {
		return c, nil
	}
	r, err := s.recs.Runs.Run(ctx, c.Run)
	if err != nil {
		return c, fmt.Errorf("environment check run %s: %w", c.Run, err)
	}
	if !r.Status.Terminal() {
		return c, nil
	}
	results, err := s.recs.Runs.AllResults(ctx, r.ID)
	if err != nil {
		return c, err
	}
	c.Tasks = checkVerdicts(r, results, c.Tasks)
	c.Status, c.EndedAt = records.CheckDone, r.EndedAt
	if c.EndedAt.IsZero() {
		c.EndedAt = s.now()
	}
	if err := s.recs.Benchmarks.PutEnvCheck(ctx, c); err != nil {
		return c, err
	}
	s.log.InfoContext(ctx, "environment check done", "workspace", c.Workspace, "key", c.Key, "version", c.Version,
		"broken", len(c.Broken()), "trivial", len(c.Trivial()))
	return c, nil
}

// checkVerdicts judges each task of the check run from its final results
// (agent 0 is the oracle, agent 1 nop); unavailable keeps the tasks sync
// could not prepare.
func checkVerdicts(r run.Run, results []run.Result, unavailable []records.TaskCheck) []records.TaskCheck {
	type pair struct{ oracle, nop *run.Result }
	byTask := map[string]*pair{}
	for i := range results {
		res := &results[i]
		if !res.Final() {
			continue
		}
		p := byTask[res.Task]
		if p == nil {
			p = &pair{}
			byTask[res.Task] = p
		}
		switch res.Agent {
		case 0:
			p.oracle = res
		case 1:
			p.nop = res
		}
	}
	out := make([]records.TaskCheck, 0, len(r.Tasks)+len(unavailable))
	for _, task := range r.Tasks {
		tc := records.TaskCheck{Task: task, Verdict: records.CheckOK}
		p := byTask[task]
		if p == nil {
			p = &pair{}
		}
		tc.Oracle, tc.Nop = outcomeText(p.oracle), outcomeText(p.nop)
		switch {
		case p.oracle == nil || p.oracle.Outcome != run.Passed:
			tc.Verdict = records.CheckBroken
			tc.Detail = "the oracle (the task's own solution) does not pass: " + tc.Oracle
		case p.nop != nil && p.nop.Outcome == run.Passed:
			tc.Verdict = records.CheckTrivial
			tc.Detail = "nop (doing nothing) passes"
		}
		out = append(out, tc)
	}
	return append(out, unavailable...)
}

func outcomeText(res *run.Result) string {
	switch {
	case res == nil:
		return "no result"
	case res.Message != "":
		return string(res.Outcome) + ": " + res.Message
	}
	return string(res.Outcome)
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// maxInlineArtifact bounds the artifact text a result detail inlines.
const maxInlineArtifact = 64 << 10

// ResultID names the final result of agent × attempt × task.
func ResultID(agent, attempt int, task string) string {
	return strconv.Itoa(agent) + "-" + strconv.Itoa(attempt) + "-" + task
}

// parseResultID splits a ResultID into its slot id.
func parseResultID(id string) (string, bool) {
	parts := strings.SplitN(id, "-", 3)
	if len(parts) != 3 || parts[2] == "" {
		return "", false
	}
	agent, err1 := strconv.Atoi(parts[0])
	attempt, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || agent < 0 || attempt < 1 {
		return "", false
	}
	return run.SlotID(agent, parts[2], attempt), true
}

func resultView(res run.Result, agents []run.Agent) v1.ResultView {
	v := v1.ResultView{
		ID: v1.ResultID(res.Agent, res.Attempt, res.Task), Agent: res.Agent, Task: res.Task, Attempt: res.Attempt,
		Generation: res.Generation, Outcome: string(res.Outcome), ErrorClass: string(res.ErrorClass), Message: res.Message,
		Reward: res.Reward, Rewards: res.Rewards, CostUSD: res.CostUSD, CostEstimated: res.CostEstimated, UsageSelfReported: res.UsageSelfReported, DurationSec: float64(res.DurationMS) / 1000,
		Tokens:    v1.Tokens{Input: res.InputTokens, Cache: res.CacheTokens, Output: res.OutputTokens},
		StartedAt: timePtr(res.StartedAt), EndedAt: timePtr(res.EndedAt),
	}
	if res.Agent >= 0 && res.Agent < len(agents) {
		v.AgentLabel = agents[res.Agent].Label()
	}
	if j := res.Judge; j != nil {
		v.Judge = &v1.JudgeUsage{Model: j.Model, Calls: j.Calls,
			Tokens:  v1.Tokens{Input: j.InputTokens, Cache: j.CacheTokens, Output: j.OutputTokens},
			CostUSD: j.CostUSD, CostEstimated: j.CostEstimated}
	}
	for _, s := range res.Steps {
		v.Steps = append(v.Steps, v1.StepView{Name: s.Name, Reward: s.Reward, Rewards: s.Rewards, Exception: s.Exception,
			Tokens:  v1.Tokens{Input: s.InputTokens, Cache: s.CacheTokens, Output: s.OutputTokens},
			CostUSD: s.CostUSD, AgentSec: float64(s.AgentMS) / 1000, VerifierSec: float64(s.VerifierMS) / 1000})
	}
	return v
}

// resultFilter is the ?agent=&task=&outcome=&q= of a results listing.
// agent is one index or several, comma-separated or repeated (agent=0,2).
type resultFilter struct {
	agents  map[int]bool // nil = any
	task    string
	outcome run.Outcome
	q       string
}

func parseResultFilter(q url.Values) (resultFilter, error) {
	f := resultFilter{task: q.Get("task"), outcome: run.Outcome(q.Get("outcome")), q: strings.ToLower(q.Get("q"))}
	for _, v := range q["agent"] {
		for _, s := range strings.Split(v, ",") {
			if s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return f, errorf(http.StatusBadRequest, v1.CodeBadRequest, "agent %q must be an agent index (0, 1, …) or several, comma-separated", s)
			}
			if f.agents == nil {
				f.agents = map[int]bool{}
			}
			f.agents[n] = true
		}
	}
	if f.outcome != "" && !f.outcome.Valid() {
		return f, errorf(http.StatusBadRequest, v1.CodeBadRequest, "outcome %q must be passed, failed, errored, judge_failed or cancelled", f.outcome)
	}
	return f, nil
}

func (f resultFilter) keep(res run.Result) bool {
	switch {
	case !res.Final():
		return false
	case f.agents != nil && !f.agents[res.Agent]:
		return false
	case f.task != "" && res.Task != f.task:
		return false
	case f.outcome != "" && res.Outcome != f.outcome:
		return false
	case f.q != "" && !strings.Contains(strings.ToLower(res.Task+"\x00"+res.Message), f.q):
		return false
	}
	return true
}

func (h *runsAPI) listResults(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	if !validRunID(id) {
		return notFound("run", id)
	}
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	filter, err := parseResultFilter(r.URL.Query())
	if err != nil {
		return err
	}
	// Results are only ever added, each with its run's counters in the same
	// transaction, so the counters version the list: a page is served from
	// the cache only while they are unchanged, and a client that saw the
	// run's progress never gets a page from before it. The cache is per
	// workspace, so a cached page proves the run is the caller's without
	// decoding the run record again; a miss renders through ownRun.
	t, err := h.recs.RunTally(ctx, id)
	if err != nil {
		return fmt.Errorf("load tally of run %s: %w", id, err)
	}
	key := "results\x00" + id + "\x00" + r.URL.RawQuery
	body, err := h.answers.answerVersion(key, identity(ctx).Workspace, fmt.Sprint(t), h.now(), func() ([]byte, time.Time, error) {
		return h.renderResults(context.WithoutCancel(ctx), id, limit, cursor, filter)
	})
	if err != nil {
		return err
	}
	return writeCached(w, body)
}

// renderResults renders one page of a run's results; it holds for liveTTL
// (the environment-check flags it carries may change meanwhile).
func (h *runsAPI) renderResults(ctx context.Context, id string, limit int, cursor string, filter resultFilter) ([]byte, time.Time, error) {
	rn, err := h.scope.ownRun(ctx, id)
	if err != nil {
		return nil, time.Time{}, err
	}
	now := h.now()
	agents, err := h.recs.Agents(ctx, rn.ID)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("load agents of run %s: %w", rn.ID, err)
	}
	flags, err := h.taskFlags(ctx, rn)
	if err != nil {
		return nil, time.Time{}, err
	}
	out := v1.ResultList{Results: []v1.ResultView{}}
	err = scanPages(limit, cursor, func(cursor string, n int) (int, string, error) {
		page, next, err := h.recs.Results(ctx, rn.ID, cursor, n)
		if err != nil {
			return 0, "", fmt.Errorf("list results of run %s: %w", rn.ID, err)
		}
		for _, res := range page {
			if filter.keep(res) {
				v := resultView(res, agents)
				v.TaskCheck = flags[res.Task]
				out.Results = append(out.Results, v)
			}
		}
		return len(page), next, nil
	}, func() int { return len(out.Results) }, &out.NextCursor)
	if err != nil {
		return nil, time.Time{}, err
	}
	body, err := render(out)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("render results of run %s: %w", rn.ID, err)
	}
	return body, now.Add(liveTTL), nil
}

// finalResult loads the final result behind a result id and the run's
// earlier generations of the same slot.
func (h *runsAPI) finalResult(ctx context.Context, rn run.Run, id string) (run.Result, []run.Result, error) {
	slotID, ok := parseResultID(id)
	if !ok {
		return run.Result{}, nil, notFound("result", id)
	}
	slot, err := h.recs.Slot(ctx, rn.ID, slotID)
	if errors.Is(err, records.ErrNotFound) {
		return run.Result{}, nil, notFound("result", id)
	}
	if err != nil {
		return run.Result{}, nil, fmt.Errorf("load slot %s: %w", slotID, err)
	}
	res, err := h.recs.Result(ctx, rn.ID, slotID, slot.Generation)
	if errors.Is(err, records.ErrNotFound) {
		return run.Result{}, nil, errorf(http.StatusNotFound, v1.CodeNotFound, "result %q has no final outcome yet (slot is %s)", id, slot.Status)
	}
	if err != nil {
		return run.Result{}, nil, fmt.Errorf("load result %s: %w", id, err)
	}
	var earlier []run.Result
	for gen := range slot.Generation {
		prev, err := h.recs.Result(ctx, rn.ID, slotID, gen)
		if err == nil {
			earlier = append(earlier, prev)
		} else if !errors.Is(err, records.ErrNotFound) {
			return run.Result{}, nil, fmt.Errorf("load result %s generation %d: %w", id, gen, err)
		}
	}
	return res, earlier, nil
}

func (h *runsAPI) getResult(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	rn, err := h.scope.ownRun(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	res, earlier, err := h.finalResult(ctx, rn, r.PathValue("result"))
	if err != nil {
		return err
	}
	agents, err := h.recs.Agents(ctx, rn.ID)
	if err != nil {
		return fmt.Errorf("load agents of run %s: %w", rn.ID, err)
	}
	flags, err := h.taskFlags(ctx, rn)
	if err != nil {
		return err
	}
	out := v1.ResultDetail{ResultView: resultView(res, agents), Artifacts: []v1.ArtifactView{}, EarlierAttempts: []v1.ResultView{}}
	out.TaskCheck = flags[res.Task]
	for _, e := range earlier {
		out.EarlierAttempts = append(out.EarlierAttempts, resultView(e, agents))
	}
	if res.ArtifactsPrefix != "" {
		if err := h.fillArtifacts(ctx, rn.ID, res, &out); err != nil {
			return err
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// fillArtifacts lists the attempt's stored files and inlines the verifier
// and agent output and the trajectory.
func (h *runsAPI) fillArtifacts(ctx context.Context, runID string, res run.Result, out *v1.ResultDetail) error {
	infos, err := h.blobs.List(ctx, res.ArtifactsPrefix)
	if err != nil {
		return fmt.Errorf("list artifacts of %s: %w", res.SlotID, err)
	}
	base := "/v1/runs/" + url.PathEscape(runID) + "/results/" + url.PathEscape(out.ID) + "/artifacts/"
	for _, info := range infos {
		rel := strings.TrimPrefix(info.Key, res.ArtifactsPrefix)
		out.Artifacts = append(out.Artifacts, v1.ArtifactView{Path: rel, Size: info.Size, URL: base + escapePath(rel)})
	}
	read := func(rel string) (string, bool, error) { return h.readText(ctx, res.ArtifactsPrefix+rel) }
	var t1, t2, t3, t4 bool
	if out.Output.Stdout, t1, err = read("artifacts/verifier/test-stdout.txt"); err != nil {
		return err
	}
	if out.Output.Stderr, t2, err = read("artifacts/verifier/test-stderr.txt"); err != nil {
		return err
	}
	if out.AgentOutput.Stdout, t3, err = read("artifacts/agent/stdout.txt"); err != nil {
		return err
	}
	if out.AgentOutput.Stderr, t4, err = read("artifacts/agent/stderr.txt"); err != nil {
		return err
	}
	out.Output.Truncated, out.AgentOutput.Truncated = t1 || t2, t3 || t4
	traj, truncated, err := read("artifacts/agent/trajectory.json")
	if err != nil {
		return err
	}
	if traj != "" && !truncated && json.Valid([]byte(traj)) {
		out.Trajectory = json.RawMessage(traj)
	}
	return h.fillSteps(ctx, res, out)
}

// fillSteps inlines each step's verifier and agent output and trajectory
// (artifacts/steps/<name>/…) into a multi-step attempt's details.
func (h *runsAPI) fillSteps(ctx context.Context, res run.Result, out *v1.ResultDetail) error {
	read := func(rel string) (string, bool, error) { return h.readText(ctx, res.ArtifactsPrefix+rel) }
	for i := range out.Steps {
		s := &out.Steps[i]
		dir := "artifacts/steps/" + s.Name + "/"
		var o, a v1.PhaseOutput
		var t [4]bool
		var err error
		for j, f := range []struct {
			dst *string
			rel string
		}{{&o.Stdout, "verifier/test-stdout.txt"}, {&o.Stderr, "verifier/test-stderr.txt"}, {&a.Stdout, "agent/stdout.txt"}, {&a.Stderr, "agent/stderr.txt"}} {
			if *f.dst, t[j], err = read(dir + f.rel); err != nil {
				return err
			}
		}
		o.Truncated, a.Truncated = t[0] || t[1], t[2] || t[3]
		s.Output, s.AgentOutput = &o, &a
		traj, truncated, err := read(dir + "agent/trajectory.json")
		if err != nil {
			return err
		}
		if traj != "" && !truncated && json.Valid([]byte(traj)) {
			s.Trajectory = json.RawMessage(traj)
		}
	}
	return nil
}

// readText reads up to maxInlineArtifact bytes of a blob; a missing blob is
// empty.
func (h *runsAPI) readText(ctx context.Context, key string) (string, bool, error) {
	rc, err := h.blobs.Get(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read artifact %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxInlineArtifact+1))
	if err != nil {
		return "", false, fmt.Errorf("read artifact %s: %w", key, err)
	}
	if len(data) > maxInlineArtifact {
		return string(data[:maxInlineArtifact]), true, nil
	}
	return string(data), false, nil
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

func (h *runsAPI) getArtifact(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	rn, err := h.scope.ownRun(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	res, _, err := h.finalResult(ctx, rn, r.PathValue("result"))
	if err != nil {
		return err
	}
	rel := r.PathValue("path")
	if rel == "" || path.Clean("/"+rel) != "/"+rel || res.ArtifactsPrefix == "" {
		return notFound("artifact", rel)
	}
	rc, err := h.blobs.Get(ctx, res.ArtifactsPrefix+rel)
	if errors.Is(err, blob.ErrNotFound) {
		return notFound("artifact", rel)
	}
	if err != nil {
		return fmt.Errorf("open artifact %s: %w", rel, err)
	}
	defer rc.Close()
	ct := mime.TypeByExtension(path.Ext(rel))
	if ct == "" || strings.HasPrefix(ct, "text/html") {
		ct = "application/octet-stream"
	}
	if strings.HasSuffix(rel, ".txt") || strings.HasSuffix(rel, ".log") {
		ct = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", "attachment; filename="+strconv.Quote(path.Base(rel)))
	if _, err := io.Copy(w, rc); err != nil {
		h.log.WarnContext(ctx, "artifact download cut short", "request_id", requestID(ctx), "run_id", rn.ID, "err", err)
	}
	return nil
}

// taskFlags returns the tasks the environment check of the run's manifest
// version found broken or trivial, so an environment fault is never read
// as the agent's failure (nor a trivial pass as its success).
func (h *runsAPI) taskFlags(ctx context.Context, rn run.Run) (map[string]string, error) {
	c, err := h.checks.read(ctx, rn.Workspace, rn.Benchmark, rn.ManifestVersion)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for task, v := range verdicts(c) {
		if v == string(records.CheckBroken) || v == string(records.CheckTrivial) {
			out[task] = v
		}
	}
	return out, nil
}

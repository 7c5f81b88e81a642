package api

import (
	"context"
	"errors"
	"fmt"
	"github.com/gauntlet-bench/gauntlet/pkg/stats"
	"net/http"
	"strconv"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// Page sizes of list routes.
const (
	defaultLimit = 50
	maxLimit     = 500
	// maxScan bounds the stored items one filtered list request reads; a
	// page may come back short (with a cursor) when filters skip many.
	maxScan = 2000
)

// submitRequest builds a submission from a run config body: TOML
// (application/toml, the default) or JSON (application/json).
func submitRequest(w http.ResponseWriter, r *http.Request) (pipeline.SubmitRequest, error) {
	id := identity(r.Context())
	req := pipeline.SubmitRequest{Workspace: id.Workspace, User: id.User, Format: "toml",
		IdempotencyKey: r.Header.Get("Idempotency-Key"), Name: r.URL.Query().Get("name")}
	switch ct := mediaType(r); ct {
	case "application/toml", "text/toml", "text/plain", "":
	case "application/json":
		req.Format = "json"
	default:
		return req, errorf(http.StatusUnsupportedMediaType, v1.CodeUnsupportedType,
			"send the run config as Content-Type: application/toml or application/json, not %q", ct)
	}
	if len(req.Name) > 128 {
		return req, errorf(http.StatusBadRequest, v1.CodeBadRequest, "name is longer than 128 bytes")
	}
	body, err := readBody(w, r, v1.MaxRunBody)
	if err != nil {
		return req, err
	}
	if len(body) == 0 {
		return req, errorf(http.StatusBadRequest, v1.CodeBadRequest, "the request body is empty; send a run config")
	}
	if req.Format == "json" {
		if err := checkUniqueKeys(body); err != nil {
			return req, errorf(http.StatusBadRequest, v1.CodeBadRequest, "invalid JSON run config: %s", err)
		}
	}
	req.Document = body
	return req, nil
}

func (h *runsAPI) createRun(w http.ResponseWriter, r *http.Request) error {
	req, err := submitRequest(w, r)
	if err != nil {
		return err
	}
	res, err := h.runs.Submit(r.Context(), req)
	if err != nil {
		return err
	}
	h.forgetRunLists(r.Context())
	out := v1.CreatedRun{ID: res.Run.ID, Name: res.Run.Name, Status: string(res.Run.Status), TaskCount: len(res.Run.Tasks),
		SlotCount: res.Run.TotalSlots(), Replayed: res.Replayed, Warnings: nonNil(res.Warnings)}
	w.Header().Set("Location", "/v1/runs/"+res.Run.ID)
	status := http.StatusCreated
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		status = http.StatusOK
	}
	return writeJSON(w, status, out)
}

func (h *runsAPI) validateRun(w http.ResponseWriter, r *http.Request) error {
	req, err := submitRequest(w, r)
	if err != nil {
		return err
	}
	v, err := h.runs.Validate(r.Context(), req)
	var rejected *pipeline.RejectedError
	if err != nil && !errors.As(err, &rejected) {
		return err
	}
	out := v1.ValidationReport{Valid: err == nil, Benchmark: v.Benchmark.Key, ManifestVersion: v.ManifestVersion,
		TaskCount: v.TaskCount, SlotCount: v.SlotCount, MissingSecrets: nonNil(v.MissingSecrets),
		BillingProblem: v.BillingProblem, Problems: []v1.Problem{}, Warnings: nonNil(v.Resolved.Warnings)}
	if rejected != nil {
		out.Problems = problems(rejected.Problems)
	}
	return writeJSON(w, http.StatusOK, out)
}

// validRunID says whether id could name a run at all; any other answers
// 404 without a read.
func validRunID(id string) bool { return id != "" && len(id) <= 128 }

// pageParams reads ?limit= and ?cursor=.
func pageParams(r *http.Request) (limit int, cursor string, err error) {
	q := r.URL.Query()
	limit = defaultLimit
	if s := q.Get("limit"); s != "" {
		n, perr := strconv.Atoi(s)
		if perr != nil || n < 1 || n > maxLimit {
			return 0, "", errorf(http.StatusBadRequest, v1.CodeBadRequest, "limit %q must be a whole number from 1 to %d", s, maxLimit)
		}
		limit = n
	}
	cursor = q.Get("cursor")
	if len(cursor) > 1024 {
		return 0, "", errorf(http.StatusBadRequest, v1.CodeBadRequest, "cursor is not one this API returned")
	}
	return limit, cursor, nil
}

func (h *runsAPI) listRuns(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	bench, status := q.Get("benchmark"), run.Status(q.Get("status"))
	if status != "" && !status.Valid() {
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "status %q must be one of pending, queued, running, finished, failed, stopping, stopped", status)
	}
	ctx := r.Context()
	// Every page of the list shares the prefix runListKey, so a submit or
	// stop forgets them all (see forgetRunLists).
	body, err := h.answers.answer(runListKey+r.URL.RawQuery, identity(ctx).Workspace, h.now(), func() ([]byte, time.Time, error) {
		return h.renderRuns(context.WithoutCancel(ctx), limit, cursor, bench, status)
	})
	if err != nil {
		return err
	}
	return writeCached(w, body)
}

// runListKey prefixes the cached pages of a workspace's run list.
const runListKey = "runs\x00"

// forgetRunLists drops the workspace's cached run-list pages after a
// request of that workspace added or stopped a run, so its next listing
// shows the change.
func (h *runsAPI) forgetRunLists(ctx context.Context) {
	h.answers.forgetPrefix(runListKey, identity(ctx).Workspace)
}

// renderRuns renders one page of the caller's runs; it holds for liveTTL.
func (h *runsAPI) renderRuns(ctx context.Context, limit int, cursor, bench string, status run.Status) ([]byte, time.Time, error) {
	keep := func(rn run.Run) bool {
		return (bench == "" || rn.Benchmark == bench || rn.BenchmarkName == bench) && (status == "" || rn.Status == status)
	}
	ws := identity(ctx).Workspace
	out := v1.RunList{Runs: []v1.RunView{}}
	now := h.now()
	names := submitterNames{}
	err := scanPages(limit, cursor, func(cursor string, n int) (int, string, error) {
		runs, next, err := h.recs.RunsByWorkspace(ctx, ws, cursor, n)
		if err != nil {
			return 0, "", fmt.Errorf("list runs: %w", err)
		}
		for _, rn := range runs {
			if !keep(rn) {
				continue
			}
			t, err := h.recs.RunTally(ctx, rn.ID)
			if err != nil {
				return 0, "", fmt.Errorf("load tally of run %s: %w", rn.ID, err)
			}
			v := runView(rn, t, now)
			if v.Submission.SubmittedByName, err = h.submitterName(ctx, names, rn.Workspace, rn.SubmittedBy); err != nil {
				return 0, "", err
			}
			out.Runs = append(out.Runs, v)
		}
		return len(runs), next, nil
	}, func() int { return len(out.Runs) }, &out.NextCursor)
	if err != nil {
		return nil, time.Time{}, err
	}
	body, err := render(out)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("render runs of workspace %s: %w", ws, err)
	}
	return body, now.Add(liveTTL), nil
}

// scanPages drives a filtered listing over a store query: it asks fetch for
// at most the rows still missing (so every fetched item is consumed and
// the store cursor stays exact), until limit rows were kept, the query
// ends, or maxScan items were read. fetch returns how many items it read
// and the next store cursor; kept reports the rows kept so far.
func scanPages(limit int, cursor string, fetch func(cursor string, n int) (int, string, error), kept func() int, next *string) error {
	scanned := 0
	for {
		want := limit - kept()
		n, c, err := fetch(cursor, want)
		if err != nil {
			return err
		}
		scanned += n
		cursor = c
		if cursor == "" || kept() >= limit || scanned >= maxScan {
			*next = cursor
			return nil
		}
	}
}

func (h *runsAPI) getRun(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	body, err := h.answers.answer("run\x00"+r.PathValue("id"), identity(ctx).Workspace, h.now(), func() ([]byte, time.Time, error) {
		return h.renderRun(context.WithoutCancel(ctx), r.PathValue("id"))
	})
	if err != nil {
		return err
	}
	return writeCached(w, body)
}

// renderRun renders a run's detail and says until when it holds: a second
// while the run may change, for ever once it ended with current metrics.
func (h *runsAPI) renderRun(ctx context.Context, id string) ([]byte, time.Time, error) {
	rn, err := h.scope.ownRun(ctx, id)
	if err != nil {
		return nil, time.Time{}, err
	}
	t, err := h.recs.RunTally(ctx, rn.ID)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("load tally of run %s: %w", rn.ID, err)
	}
	agents, err := h.recs.Agents(ctx, rn.ID)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("load agents of run %s: %w", rn.ID, err)
	}
	summaries, covered, err := h.runSummaries(ctx, rn, agents)
	if err != nil {
		return nil, time.Time{}, err
	}
	now := h.now()
	out := v1.RunDetail{RunView: runView(rn, t, now), AgentsDetail: make([]v1.AgentView, len(agents)),
		MetricsResults: covered, MetricsCurrent: int64(covered) >= t.Done}
	if out.Submission.SubmittedByName, err = h.submitterName(ctx, submitterNames{}, rn.Workspace, rn.SubmittedBy); err != nil {
		return nil, time.Time{}, err
	}
	perAgent := len(rn.Tasks) * rn.Settings.AttemptsPerTask
	for i, a := range agents {
		at, err := h.recs.AgentTally(ctx, rn.ID, a.Index)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("load tally of run %s agent %d: %w", rn.ID, a.Index, err)
		}
		out.AgentsDetail[i] = v1.AgentView{Index: a.Index, Name: a.Name, Label: a.Label(), Harness: a.Harness, Model: a.Model,
			Status: string(a.Status), Progress: v1.Progress{Completed: int(at.Done), Total: perAgent}, Outcomes: outcomes(at),
			StartedAt: timePtr(a.StartedAt), EndedAt: timePtr(a.EndedAt), DurationSec: duration(a.StartedAt, a.EndedAt, now),
			Tokens: tokens(at), CostUSD: float64(at.CostMicroUSD) / 1e6, CostEstimated: at.CostEstimated > 0,
			UsageSelfReported: at.UsageSelfReported > 0, Judge: judgeView(rn.Settings.JudgeModel, at), Metrics: metricsOf(summaries[i])}
	}
	out.Power = runPower(out.AgentsDetail, rn.Settings.AttemptsPerTask)
	body, err := render(out)
	expires := now.Add(liveTTL)
	if rn.Status.Terminal() && out.MetricsCurrent && t.Done >= int64(rn.TotalSlots()) {
		expires = time.Time{} // an ended run with current metrics never changes
	}
	return body, expires, err
}

func (h *runsAPI) runConfig(w http.ResponseWriter, r *http.Request) error {
	rn, err := h.scope.ownRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/toml; charset=utf-8")
	_, err = w.Write([]byte(rn.Config))
	return err
}

func (h *runsAPI) runLogs(w http.ResponseWriter, r *http.Request) error {
	rn, err := h.scope.ownRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	lines, next, err := h.recs.Logs(r.Context(), rn.ID, cursor, limit)
	if err != nil {
		return fmt.Errorf("list logs of run %s: %w", rn.ID, err)
	}
	return writeJSON(w, http.StatusOK, v1.LogList{Logs: logLines(lines), NextCursor: next})
}

func (h *runsAPI) stopRun(w http.ResponseWriter, r *http.Request) error {
	rn, err := h.scope.ownRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if !rn.Status.Stoppable() {
		return errorf(http.StatusConflict, v1.CodeConflict, "run %s is %s; only pending, queued or running runs can be stopped", rn.ID, rn.Status)
	}
	rn, err = h.runs.Stop(r.Context(), rn.ID, identity(r.Context()).User)
	if err != nil {
		return err
	}
	h.answers.forget("run\x00"+r.PathValue("id"), identity(r.Context()).Workspace)
	h.forgetRunLists(r.Context())
	t, err := h.recs.RunTally(r.Context(), rn.ID)
	if err != nil {
		return fmt.Errorf("load tally of run %s: %w", rn.ID, err)
	}
	return writeJSON(w, http.StatusAccepted, runView(rn, t, h.now()))
}

// runPower plans the paired test between the two best agents by pass@1 at
// the run's attempts per task; nil when there is no such pair to separate.
func runPower(agents []v1.AgentView, attempts int) *v1.PowerPlan {
	best, second := -1, -1
	for i, a := range agents {
		if a.Metrics.Pass1 == nil {
			continue
		}
		switch {
		case best < 0 || a.Metrics.Pass1.Value > agents[best].Metrics.Pass1.Value:
			best, second = i, best
		case second < 0 || a.Metrics.Pass1.Value > agents[second].Metrics.Pass1.Value:
			second = i
		}
	}
	if second < 0 || attempts < 1 {
		return nil
	}
	a, b := agents[best], agents[second]
	plan, err := stats.PairedSampleSize(a.Metrics.Pass1.Value, b.Metrics.Pass1.Value, 1-stats.Confidence, stats.DefaultPower, attempts)
	if err != nil {
		return nil // equal rates: no difference a sample size could detect
	}
	return &v1.PowerPlan{AgentA: a.Index, AgentB: b.Index, PassA: plan.PassA, PassB: plan.PassB, Alpha: plan.Alpha,
		Power: plan.Power, Attempts: plan.Attempts, Pairs: plan.Pairs, Tasks: plan.Tasks, Assumptions: plan.Assumptions}
}

// submitterNames caches user names by id within one request: a runs page
// lists the same few submitters many times.
type submitterNames map[string]string

// submitterName is the display name of the user who submitted a run, "" when
// the run names no submitter or the user record is gone or unnamed (the
// console then shows the id).
func (h *runsAPI) submitterName(ctx context.Context, cache submitterNames, ws, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	if name, ok := cache[id]; ok {
		return name, nil
	}
	u, err := h.recs.User(ctx, ws, id)
	if errors.Is(err, records.ErrNotFound) {
		u, err = records.User{}, nil
	}
	if err != nil {
		return "", fmt.Errorf("load submitter %s: %w", id, err)
	}
	cache[id] = u.Name
	return u.Name, nil
}

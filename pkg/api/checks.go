package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	v1 "github.com/gauntlet-bench/gauntlet/pkg/api/v1"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// Checks runs environment checks (see pipeline.Submitter.StartCheck).
type Checks interface {
	// StartCheck starts (or returns) the check of the benchmark's ready
	// manifest version on behalf of the user.
	StartCheck(ctx context.Context, ws, user, key string) (records.EnvCheck, error)
	// Check returns a version's check; records.ErrNotFound when none ran.
	Check(ctx context.Context, ws, key, version string) (records.EnvCheck, error)
}

// checks returns the configured Checks or a 501 when the platform has none.
func (h *Handler) checks() (Checks, error) {
	if h.cfg.Checks == nil {
		return nil, errorf(http.StatusNotImplemented, v1.CodeUnavailable, "environment checks are not available on this platform")
	}
	return h.cfg.Checks, nil
}

// startCheck is POST /v1/benchmarks/{key}/check.
func (h *Handler) startCheck(w http.ResponseWriter, r *http.Request) error {
	checks, err := h.checks()
	if err != nil {
		return err
	}
	id := identity(r.Context())
	b, err := h.visibleBenchmark(r.Context(), id.Workspace, r.PathValue("key"))
	if err != nil {
		return err
	}
	c, err := checks.StartCheck(r.Context(), id.Workspace, id.User, b.Key)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, checkView(c))
}

// getCheck is GET /v1/benchmarks/{key}/check: the check of the ready version.
func (h *Handler) getCheck(w http.ResponseWriter, r *http.Request) error {
	checks, err := h.checks()
	if err != nil {
		return err
	}
	ws := identity(r.Context()).Workspace
	b, err := h.visibleBenchmark(r.Context(), ws, r.PathValue("key"))
	if err != nil {
		return err
	}
	var c records.EnvCheck
	if b.ReadyVersion != "" {
		c, err = checks.Check(r.Context(), ws, b.Key, b.ReadyVersion)
	}
	if b.ReadyVersion == "" || errors.Is(err, records.ErrNotFound) {
		// Not an error: a benchmark page asks before anyone started one.
		return writeJSON(w, http.StatusOK, v1.EnvCheckView{Version: b.ReadyVersion, Status: v1.CheckNone,
			Message: fmt.Sprintf("no check yet: start one with POST /v1/benchmarks/%s/check (gauntlet benchmark check %s)", b.Key, b.Key),
			Broken:  []string{}, Trivial: []string{}, Flagged: []v1.EnvCheckTask{}})
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, checkView(c))
}

// buildLog is GET /v1/benchmarks/{key}/tasks/{task}/build-log: the log of
// the Dockerfile build of a task of the ready version, as text.
func (h *Handler) buildLog(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	ws := identity(ctx).Workspace
	b, err := h.visibleBenchmark(ctx, ws, r.PathValue("key"))
	if err != nil {
		return err
	}
	name := r.PathValue("task")
	if b.ReadyVersion == "" {
		return errorf(http.StatusNotFound, v1.CodeNotFound, "benchmark %q has no ready task list", b.Key)
	}
	info, err := h.manifest(ctx, b.Workspace, b.Key, b.ReadyVersion)
	if err != nil {
		return err
	}
	t, ok := info.m.Task(name)
	if !ok || t.Environment == nil || t.Environment.BuildLog == "" {
		return errorf(http.StatusNotFound, v1.CodeNotFound, "task %q of %s@%s has no build log (only Dockerfile tasks are built)", name, b.Key, b.ReadyVersion)
	}
	rc, err := h.cfg.Blobs.Get(ctx, t.Environment.BuildLog)
	if errors.Is(err, records.ErrNotFound) {
		return errorf(http.StatusNotFound, v1.CodeNotFound, "the build log of task %q is gone", name)
	}
	if err != nil {
		return fmt.Errorf("read build log %s: %w", t.Environment.BuildLog, err)
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err = io.Copy(w, rc)
	return err
}

func checkView(c records.EnvCheck) v1.EnvCheckView {
	v := v1.EnvCheckView{Version: c.Version, Status: c.Status, Run: c.Run, Broken: nonNil(c.Broken()), Trivial: nonNil(c.Trivial()),
		Checked: len(c.Tasks), StartedAt: timePtr(c.StartedAt), EndedAt: timePtr(c.EndedAt)}
	v.Flagged = []v1.EnvCheckTask{}
	if c.Status != records.CheckDone {
		v.Checked = 0
		return v
	}
	for _, t := range c.Tasks {
		if t.Verdict == records.CheckBroken || t.Verdict == records.CheckTrivial {
			v.Flagged = append(v.Flagged, v1.EnvCheckTask{Task: t.Task, Verdict: string(t.Verdict), Detail: t.Detail})
		}
	}
	return v
}

// verdicts maps each task of a done check to its verdict.
func verdicts(c records.EnvCheck) map[string]string {
	out := map[string]string{}
	if c.Status != records.CheckDone {
		return out
	}
	for _, t := range c.Tasks {
		out[t.Task] = string(t.Verdict)
	}
	return out
}

// readCheck returns the check of a version, or a zero check when none ran.
func (h *Handler) readCheck(ctx context.Context, ws, key, version string) (records.EnvCheck, error) {
	if h.cfg.Checks == nil || version == "" {
		return records.EnvCheck{}, nil
	}
	c, err := h.cfg.Checks.Check(ctx, ws, key, version)
	if errors.Is(err, records.ErrNotFound) {
		return records.EnvCheck{}, nil
	}
	return c, err
}

// environmentView renders a task's pinned environment.
func environmentView(key string, t benchmark.Task) *v1.TaskEnvironment {
	e := t.Environment
	if e == nil {
		return nil
	}
	v := &v1.TaskEnvironment{Source: string(e.Source), Image: e.Image, Pinned: e.Pinned, BuildKey: e.BuildKey, Unavailable: e.Unavailable}
	if e.BuildLog != "" {
		v.BuildLog = "/v1/benchmarks/" + key + "/tasks/" + url.PathEscape(t.Name) + "/build-log"
	}
	if ve := e.Verifier; ve != nil {
		v.Verifier = &v1.TaskEnvironment{Source: string(ve.Source), Image: ve.Image, Pinned: ve.Pinned, BuildKey: ve.BuildKey, Unavailable: ve.Unavailable}
	}
	return v
}

// progressLabel says a sync's progress in words.
func progressLabel(b records.Benchmark) string {
	if b.Status != records.SyncSyncing {
		return ""
	}
	what := "Fetching tasks"
	if b.Phase == records.SyncPhaseImages {
		what = "Preparing images"
	}
	return fmt.Sprintf("%s · %d / %d", what, b.Synced, b.Total)
}

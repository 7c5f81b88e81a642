package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// Checks runs environment checks (see pipeline.Submitter.StartCheck).
type Checks interface {
	// StartCheck starts (or returns) the check of the benchmark's ready
	// manifest version on behalf of the user.
	StartCheck(ctx context.Context, ws, user, key string) (records.EnvCheck, error)
	// Check returns a version's check; records.ErrNotFound when none ran.
	Check(ctx context.Context, ws, key, version string) (records.EnvCheck, error)
}

// checkSource is the platform's environment checks, which several
// families read; a platform without them has a nil one.
type checkSource struct{ checks Checks }

// require returns the configured Checks or a 501 when the platform has none.
func (c checkSource) require() (Checks, error) {
	if c.checks == nil {
		return nil, errorf(http.StatusNotImplemented, v1.CodeUnavailable, "environment checks are not available on this platform")
	}
	return c.checks, nil
}

// startCheck is POST /v1/benchmarks/{key}/check.
func (h *benchmarksAPI) startCheck(w http.ResponseWriter, r *http.Request) error {
	checks, err := h.checks.require()
	if err != nil {
		return err
	}
	id := identity(r.Context())
	b, err := h.scope.visibleBenchmark(r.Context(), id.Workspace, r.PathValue("key"))
	if err != nil {
		return err
	}
	c, err := checks.StartCheck(r.Context(), id.Workspace, id.User, b.Key)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, checkView(c))
}

// getCheck is GET /v1/benchmarks/{key}/check: the check of the ready
// version, or of the version a sync is preparing.
func (h *benchmarksAPI) getCheck(w http.ResponseWriter, r *http.Request) error {
	checks, err := h.checks.require()
	if err != nil {
		return err
	}
	ws := identity(r.Context()).Workspace
	b, err := h.scope.visibleBenchmark(r.Context(), ws, r.PathValue("key"))
	if err != nil {
		return err
	}
	var c records.EnvCheck
	version := b.ReadyVersion
	if b.Status == records.SyncSyncing && b.PreparingVersion != "" {
		version = b.PreparingVersion // a check may start on its ready tasks
	}
	if version != "" {
		c, err = checks.Check(r.Context(), ws, b.Key, version)
	}
	if version == "" || errors.Is(err, records.ErrNotFound) {
		// Not an error: a benchmark page asks before anyone started one.
		return writeJSON(w, http.StatusOK, v1.EnvCheckView{Version: version, Status: v1.CheckNone,
			Message: fmt.Sprintf("no check yet: start one with POST /v1/benchmarks/%s/check (gauntlet benchmark check %s)", b.Key, b.Key),
			Broken:  []string{}, Trivial: []string{}, Flagged: []v1.EnvCheckTask{}})
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, checkView(c))
}

// buildLog is GET /v1/benchmarks/{key}/tasks/{task}/build-log: the log of
// the Dockerfile build of a task, as text — of the version a sync is
// preparing (while the build runs, and after it failed) or else of the
// ready version. With ?follow=true it streams the log as the build writes
// it (the sync stores it every second) until the task's image is ready or
// failed, the sync has moved on, or the client leaves.
func (h *benchmarksAPI) buildLog(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	ws := identity(ctx).Workspace
	b, err := h.scope.visibleBenchmark(ctx, ws, r.PathValue("key"))
	if err != nil {
		return err
	}
	follow, err := boolQuery(r, "follow")
	if err != nil {
		return err
	}
	name := r.PathValue("task")
	version := b.PreparingVersion
	if version == "" {
		version = b.ReadyVersion
	}
	if version == "" {
		return errorf(http.StatusNotFound, v1.CodeNotFound, "benchmark %q has no task list yet (its sync is %s); its build logs appear once its tasks are fetched", b.Key, b.Status)
	}
	t, err := h.recs.Task(ctx, b.Workspace, b.Key, version, name)
	if errors.Is(err, records.ErrNotFound) {
		return errorf(http.StatusNotFound, v1.CodeNotFound, "benchmark %s@%s has no task %q", b.Key, version, name)
	}
	if err != nil {
		return err
	}
	if t.Environment == nil || t.Environment.BuildLog == "" {
		return errorf(http.StatusNotFound, v1.CodeNotFound, "task %q of %s@%s has no build log (only Dockerfile tasks are built)", name, b.Key, version)
	}
	logKey := t.Environment.BuildLog
	text, err := h.readBuildLog(ctx, logKey)
	if err != nil {
		return err
	}
	if text == nil && !(follow && t.Environment.Preparing) {
		return errorf(http.StatusNotFound, v1.CodeNotFound, "the build log of task %q is gone (or its build has not started)", name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if _, err := w.Write(text); err != nil || !follow || !t.Environment.Preparing {
		return nil // the status is sent: a late error only ends the body
	}
	return h.followBuildLog(ctx, w, b.Workspace, b.Key, version, name, logKey, len(text))
}

// buildLogPoll is how often a followed build log is read again.
const buildLogPoll = 500 * time.Millisecond

// followBuildLog writes what the build log under logKey gains past sent
// bytes until the task is no longer preparing (then what is left) or ctx
// ends.
func (h *benchmarksAPI) followBuildLog(ctx context.Context, w http.ResponseWriter, ws, key, version, name, logKey string, sent int) error {
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	t := time.NewTicker(buildLogPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		task, err := h.recs.Task(ctx, ws, key, version, name)
		// Gone (the benchmark removed) or ready: write the rest and end.
		last := err != nil || task.Environment == nil || !task.Environment.Preparing
		text, rerr := h.readBuildLog(ctx, logKey)
		if rerr != nil {
			return nil
		}
		if len(text) < sent {
			sent = 0 // the kept tail moved past what was sent: start over
		}
		if len(text) > sent {
			if _, err := w.Write(text[sent:]); err != nil {
				return nil
			}
			sent = len(text)
			if flusher != nil {
				flusher.Flush()
			}
		}
		if last {
			return nil
		}
	}
}

// readBuildLog returns the stored build log, nil when there is none.
func (h *benchmarksAPI) readBuildLog(ctx context.Context, logKey string) ([]byte, error) {
	rc, err := h.blobs.Get(ctx, logKey)
	if errors.Is(err, records.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read build log %s: %w", logKey, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read build log %s: %w", logKey, err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
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

// read returns the check of a version, or a zero check when none ran.
func (c checkSource) read(ctx context.Context, ws, key, version string) (records.EnvCheck, error) {
	if c.checks == nil || version == "" {
		return records.EnvCheck{}, nil
	}
	check, err := c.checks.Check(ctx, ws, key, version)
	if errors.Is(err, records.ErrNotFound) {
		return records.EnvCheck{}, nil
	}
	return check, err
}

// environmentView renders a task's pinned environment.
func environmentView(key string, t benchmark.Task) *v1.TaskEnvironment {
	e := t.Environment
	if e == nil {
		return nil
	}
	v := &v1.TaskEnvironment{Source: string(e.Source), Image: e.Image, Pinned: e.Pinned, BuildKey: e.BuildKey, Unavailable: e.Unavailable,
		State: string(e.State())}
	if e.BuildLog != "" {
		v.BuildLog = buildLogPath(key, t.Name)
	}
	if ve := e.Verifier; ve != nil {
		v.Verifier = &v1.TaskEnvironment{Source: string(ve.Source), Image: ve.Image, Pinned: ve.Pinned, BuildKey: ve.BuildKey, Unavailable: ve.Unavailable}
	}
	return v
}

// buildLogPath is the API path of a task's build log.
func buildLogPath(key, task string) string {
	return "/v1/benchmarks/" + key + "/tasks/" + url.PathEscape(task) + "/build-log"
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

// boolQuery reads an optional true/false query parameter.
func boolQuery(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, fieldError(name, fmt.Sprintf("is %q; want true or false", v))
	}
}

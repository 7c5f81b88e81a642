package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func (h *benchmarksAPI) benchmarkView(ctx context.Context, ws string, b records.Benchmark) (v1.BenchmarkView, error) {
	v := v1.BenchmarkView{
		Key: b.Key, Name: b.Name, Description: b.Description, Source: v1.Source{Type: string(b.Source.Type), Ref: b.Source.Ref, URL: b.Source.URL}, Status: string(b.Status),
		Progress: v1.SyncProgress{Synced: b.Synced, Total: b.Total, Phase: string(b.Phase), Label: progressLabel(b)}, SyncError: b.SyncError, SyncWarning: b.SyncWarning, TaskCount: b.TaskCount,
		Version: b.ReadyVersion, Digest: b.ReadyDigest, Removable: b.Source.Type != benchmark.Managed, UpdatedAt: b.UpdatedAt,
		RegistryCredentials: make([]v1.RegistryCredential, len(b.RegistryCredentials)),
	}
	for i, c := range b.RegistryCredentials {
		v.RegistryCredentials[i] = v1.RegistryCredential{Registry: c.Registry, Secret: c.Secret}
	}
	if b.ReadyVersion != "" {
		info, err := h.manifests.get(ctx, b.Workspace, b.Key, b.ReadyVersion)
		if err != nil {
			return v, err
		}
		v.CategoryCount = info.categoryCount
		v.TaskCount = len(info.m.Tasks)
	}
	if b.PreparingVersion != "" && b.PreparingVersion != b.ReadyVersion {
		// Read each time: its tasks change as their images get ready.
		m, _, err := h.recs.Manifest(ctx, b.Workspace, b.Key, b.PreparingVersion)
		switch {
		case err == nil:
			v.Images = imageProgress(m)
		case !errors.Is(err, records.ErrNotFound):
			return v, fmt.Errorf("load manifest %s of benchmark %s: %w", b.PreparingVersion, b.Key, err)
		}
	}
	runs, err := h.recs.RunsByBenchmark(ctx, ws, b.Key)
	if err != nil {
		return v, fmt.Errorf("list runs of benchmark %s: %w", b.Key, err)
	}
	v.RunCount = len(runs)
	if n := len(runs); n > 0 {
		last := runs[n-1]
		v.LastRun = &v1.RunBrief{ID: last.ID, Name: last.Name, Status: string(last.Status), CreatedAt: last.CreatedAt}
	}
	return v, nil
}

// imageProgress is the image state of every task of a version being
// prepared.
func imageProgress(m benchmark.Manifest) *v1.ImageProgress {
	p := &v1.ImageProgress{Version: m.Version, Total: len(m.Tasks), Tasks: make([]v1.TaskImage, len(m.Tasks))}
	for i, t := range m.Tasks {
		state := t.Environment.State()
		ti := v1.TaskImage{Name: t.Name, State: string(state)}
		switch state {
		case benchmark.ImageReady:
			p.Ready++
		case benchmark.ImagePreparing:
			p.Preparing++
		case benchmark.ImageUnavailable:
			p.Unavailable++
			ti.Reason = t.UnavailableReason()
		}
		if t.Environment != nil && t.Environment.BuildLog != "" {
			ti.BuildLog = buildLogPath(m.Key, t.Name)
		}
		p.Tasks[i] = ti
	}
	p.Label = fmt.Sprintf("preparing images %d / %d", p.Ready+p.Unavailable, p.Total)
	return p
}

// writeBenchmark answers with status and the view of b as workspace ws
// sees it.
func (h *benchmarksAPI) writeBenchmark(ctx context.Context, w http.ResponseWriter, status int, ws string, b records.Benchmark) error {
	v, err := h.benchmarkView(ctx, ws, b)
	if err != nil {
		return err
	}
	return writeJSON(w, status, v)
}

func (h *benchmarksAPI) listBenchmarks(w http.ResponseWriter, r *http.Request) error {
	ws := identity(r.Context()).Workspace
	all, err := h.scope.visibleBenchmarks(r.Context(), ws)
	if err != nil {
		return err
	}
	out := v1.BenchmarkList{Benchmarks: make([]v1.BenchmarkView, 0, len(all))}
	for _, b := range all {
		v, err := h.benchmarkView(r.Context(), ws, b)
		if err != nil {
			return err
		}
		out.Benchmarks = append(out.Benchmarks, v)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (h *benchmarksAPI) getBenchmark(w http.ResponseWriter, r *http.Request) error {
	ws := identity(r.Context()).Workspace
	b, err := h.scope.visibleBenchmark(r.Context(), ws, r.PathValue("key"))
	if err != nil {
		return err
	}
	v, err := h.benchmarkView(r.Context(), ws, b)
	if err != nil {
		return err
	}
	out := v1.BenchmarkDetail{BenchmarkView: v}
	switch {
	case b.ReadyVersion != "":
		info, err := h.manifests.get(r.Context(), b.Workspace, b.Key, b.ReadyVersion)
		if err != nil {
			return err
		}
		check, err := h.checks.read(r.Context(), ws, b.Key, b.ReadyVersion)
		if err != nil {
			return err
		}
		out.Manifest = manifestView(info.m, check)
	case b.Status == records.SyncSyncing && b.PreparingVersion != "":
		// The first sync prepares images: its version, read each time (its
		// tasks change as images get ready), is what a run pins now.
		m, _, err := h.recs.Manifest(r.Context(), b.Workspace, b.Key, b.PreparingVersion)
		if err != nil && !errors.Is(err, records.ErrNotFound) {
			return fmt.Errorf("load manifest %s of benchmark %s: %w", b.PreparingVersion, b.Key, err)
		}
		if err == nil {
			check, err := h.checks.read(r.Context(), ws, b.Key, b.PreparingVersion)
			if err != nil {
				return err
			}
			out.Manifest = manifestView(m, check)
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

func manifestView(m benchmark.Manifest, check records.EnvCheck) *v1.ManifestView {
	v := &v1.ManifestView{
		Version: m.Version, Digest: m.Digest, Tasks: make([]v1.TaskView, len(m.Tasks)),
		Categories: []v1.CategoryView{}, TaskSets: []v1.TaskSetView{},
		Harness:       v1.HarnessView{Requirement: string(m.HarnessRequirement), Default: m.DefaultHarness},
		Judge:         v1.Judge{Required: m.Judge.Required, DefaultModel: m.Judge.DefaultModel, ModelPinned: m.Judge.ModelPinned},
		PassThreshold: m.EffectivePassThreshold(), RequiredSecrets: nonNil(m.RequiredSecrets),
		Difficulties: map[string]int{}, TaskSetTasks: map[string][]string{}, UnavailableTasks: []v1.UnavailableTask{},
	}
	if check.Version != "" {
		cv := checkView(check)
		v.Check = &cv
	}
	verdict := verdicts(check)
	for i, t := range m.Tasks {
		v.Tasks[i] = v1.TaskView{Name: t.Name, Category: optional(t.Category), Difficulty: optional(t.Difficulty), Tags: nonNil(t.Tags),
			Environment: environmentView(m.Key, t), Check: optional(verdict[t.Name])}
		if reason := t.UnavailableReason(); reason != "" {
			v.UnavailableTasks = append(v.UnavailableTasks, v1.UnavailableTask{Name: t.Name, Reason: reason})
		}
		if t.Difficulty != "" {
			v.Difficulties[t.Difficulty]++
		}
	}
	for _, c := range m.Categories() {
		v.Categories = append(v.Categories, v1.CategoryView{Name: c.Name, Tasks: c.Tasks})
	}
	for _, s := range m.TaskSetCounts() {
		v.TaskSets = append(v.TaskSets, v1.TaskSetView{Name: s.Name, Description: s.Description, Recommended: s.Recommended, Tasks: s.Tasks})
		v.TaskSetTasks[s.Name] = nonNil(m.TaskSets[s.Name].Tasks)
	}
	return v
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (h *benchmarksAPI) addBenchmark(w http.ResponseWriter, r *http.Request) error {
	var req v1.AddBenchmarkRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	spec, repo := strings.TrimSpace(req.Source), strings.TrimSpace(req.Repo)
	switch {
	case len(spec) > 256:
		return fieldError("source", "is longer than 256 bytes")
	case len(repo) > 1024 || len(req.Path) > 1024:
		return fieldError("repo", "repo and path are at most 1,024 bytes each")
	case spec == "" && repo == "":
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "source must name a dataset: a registry.json dataset as name or name@version, a package dataset as org/name or org/name@ref — or give repo, a git repository URL")
	}
	creds := make([]benchmark.RegistryCredential, len(req.RegistryCredentials))
	for i, c := range req.RegistryCredentials {
		creds[i] = benchmark.RegistryCredential{Registry: c.Registry, Secret: c.Secret}
	}
	ws := identity(r.Context()).Workspace
	b, err := h.benchmarks.AddFrom(r.Context(), ws, benchsync.AddRequest{Spec: spec, Repo: repo, Path: req.Path,
		APIKeySecret: req.APIKeySecret, Credentials: creds})
	if err != nil {
		return err
	}
	return h.writeBenchmark(r.Context(), w, http.StatusAccepted, ws, b)
}

func (h *benchmarksAPI) syncBenchmark(w http.ResponseWriter, r *http.Request) error {
	ws := identity(r.Context()).Workspace
	b, err := h.scope.visibleBenchmark(r.Context(), ws, r.PathValue("key"))
	if err != nil {
		return err
	}
	if b.Workspace != ws {
		return errorf(http.StatusConflict, v1.CodeConflict, "benchmark %q is managed by the platform; its operator syncs it", b.Key)
	}
	b, err = h.benchmarks.Sync(r.Context(), ws, b.Key)
	if err != nil {
		return err
	}
	return h.writeBenchmark(r.Context(), w, http.StatusAccepted, ws, b)
}

func (h *benchmarksAPI) deleteBenchmark(w http.ResponseWriter, r *http.Request) error {
	ws := identity(r.Context()).Workspace
	b, err := h.scope.visibleBenchmark(r.Context(), ws, r.PathValue("key"))
	if err != nil {
		return err
	}
	if b.Source.Type == benchmark.Managed || b.Workspace != ws {
		return errorf(http.StatusConflict, v1.CodeConflict, "benchmark %q is managed: it belongs to every workspace and cannot be removed", b.Key)
	}
	if err := h.benchmarks.Delete(r.Context(), ws, b.Key); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// fieldError is a 422 naming field.
func fieldError(field, msg string) error {
	return &benchmark.FieldError{Field: field, Message: msg}
}

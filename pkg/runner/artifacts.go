package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// DeclaredArtifactsDir is where an attempt keeps the artifacts its task
// (and trial) declare, under artifacts/: each at its destination, else at
// its source path without the leading slash (Harbor's layout), beside
// manifest.json, the record of the collection.
const DeclaredArtifactsDir = "declared"

// Artifact statuses of the manifest, as Harbor's.
const (
	artifactOK     = "ok"
	artifactFailed = "failed"
	artifactEmpty  = "empty"
)

// ArtifactEntry is one line of manifest.json: what was asked, where it
// landed (relative to the attempt's artifacts/ directory) and how it went.
type ArtifactEntry struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Type        string `json:"type"` // "file" or "directory"
	Status      string `json:"status"`
	Service     string `json:"service,omitempty"`
	// Error says why a failed entry failed (gauntlet's addition).
	Error string `json:"error,omitempty"`
}

// collectArtifacts copies each artifact of list out of the environment it
// comes from — rootOf(service) is that environment's root filesystem on
// the host, service "" being main — into dest (created; destName is how
// the result names it, e.g. "artifacts/declared"), at the artifact's
// HostPath, and writes dest/manifest.json. Everything is read through an
// os.Root of the environment: a symlink the agent left resolves inside
// the environment, never to the host's files; symlinks inside a collected
// directory are not copied. A missing or unreadable artifact is a failed
// entry (collection is best-effort, as Harbor's), and so is one whose
// place another artifact took first (Harbor keeps the first); budget
// bounds the bytes copied. Steps call it with their own list and
// destination.
func collectArtifacts(rootOf func(service string) (string, error), list []harbor.Artifact, dest, destName string, budget int64) ([]ArtifactEntry, error) {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, fmt.Errorf("collect artifacts: %w", err)
	}
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	open := func(service string) (*os.Root, error) {
		if r, ok := roots[service]; ok {
			return r, nil
		}
		dir, err := rootOf(service)
		if err != nil {
			return nil, err
		}
		r, err := os.OpenRoot(dir)
		if err != nil {
			return nil, fmt.Errorf("open the environment: %w", err)
		}
		roots[service] = r
		return r, nil
	}
	used := int64(0)
	taken := map[string]string{}
	entries := make([]ArtifactEntry, 0, len(list))
	for _, a := range list {
		e := ArtifactEntry{Source: a.Source, Destination: destName + "/" + a.HostPath(), Service: a.Service, Type: "file"}
		service := a.Service
		if !a.Sidecar() {
			service = ""
		}
		err := claim(taken, a)
		var r *os.Root
		if err == nil {
			r, err = open(service)
		}
		if err == nil {
			err = collectOne(r, a, filepath.Join(dest, filepath.FromSlash(a.HostPath())), budget, &used, &e)
		}
		if err != nil {
			e.Status, e.Error = artifactFailed, err.Error()
		}
		entries = append(entries, e)
	}
	data, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("collect artifacts: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dest, harbor.ArtifactsManifestFile), append(data, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("collect artifacts: %w", err)
	}
	return entries, nil
}

// claim records a's place under the artifacts directory, refusing one an
// earlier artifact (of another service, or the same path twice) took or
// lies inside: every service's artifacts share one flat directory.
func claim(taken map[string]string, a harbor.Artifact) error {
	place := a.HostPath()
	for other, by := range taken {
		if place == other || strings.HasPrefix(place, other+"/") || strings.HasPrefix(other, place+"/") {
			return fmt.Errorf("its place artifacts/%s collides with %s's, collected first (Harbor keeps the first)", place, by)
		}
	}
	who := a.Source
	if a.Sidecar() {
		who = "service " + a.Service + "'s " + a.Source
	}
	taken[place] = who
	return nil
}

// collectOne copies one artifact to target and fills e's type and status.
func collectOne(r *os.Root, a harbor.Artifact, target string, budget int64, used *int64, e *ArtifactEntry) error {
	src := strings.TrimPrefix(path.Clean(a.Source), "/")
	info, err := r.Stat(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s does not exist in the environment", a.Source)
		}
		return fmt.Errorf("%s: %v", a.Source, unwrapPath(err))
	}
	if !info.IsDir() {
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file or a directory", a.Source)
		}
		if err := copyFromRoot(r, src, target, budget, used); err != nil {
			return err
		}
		e.Status = artifactOK
		return nil
	}
	e.Type = "directory"
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	files := 0
	err = fs.WalkDir(r.FS(), src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, src), "/")
		if rel != "" && excluded(rel, a.Exclude) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		dst := filepath.Join(target, filepath.FromSlash(rel))
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case !d.Type().IsRegular():
			return nil // symlinks, devices, sockets: not copied
		}
		files++
		return copyFromRoot(r, p, dst, budget, used)
	})
	if err != nil {
		return fmt.Errorf("%s: %v", a.Source, unwrapPath(err))
	}
	e.Status = artifactOK
	if files == 0 {
		e.Status = artifactEmpty
	}
	return nil
}

// excluded applies tar --exclude's rule: a pattern matches the path or
// any one of its names.
func excluded(rel string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
		for _, name := range strings.Split(rel, "/") {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
	}
	return false
}

// copyFromRoot copies the regular file name of r to the host path dst,
// keeping its permission bits, within the budget.
func copyFromRoot(r *os.Root, name, dst string, budget int64, used *int64) error {
	in, err := r.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	if *used+info.Size() > budget {
		return fmt.Errorf("%s: over the %d-byte artifact budget", name, budget)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm()|0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(in, budget-*used+1))
	*used += n
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// unwrapPath drops the *PathError's host path: the message names the
// artifact by its path in the environment.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// placeArtifacts re-creates collected artifacts in another environment
// (a separate verifier's root): each ok entry at its original source path,
// as Harbor does ("no translation"), parents created; from is the
// directory collectArtifacts wrote.
func placeArtifacts(root string, list []harbor.Artifact, entries []ArtifactEntry, from string) error {
	for i, a := range list {
		if i >= len(entries) || entries[i].Status != artifactOK && entries[i].Status != artifactEmpty {
			continue
		}
		src := filepath.Join(from, filepath.FromSlash(a.HostPath()))
		if entries[i].Type == "directory" {
			if err := uploadDir(root, src, a.Source); err != nil {
				return err
			}
			continue
		}
		if err := uploadOneFile(root, src, a.Source); err != nil {
			return err
		}
	}
	return nil
}

// uploadOneFile replaces the file target (absolute in root) with a copy of
// the host file src, parents created, through an os.Root of root.
func uploadOneFile(root, src, target string) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("upload %s: %w", target, err)
	}
	defer r.Close()
	name := strings.TrimPrefix(path.Clean(target), "/")
	if err := r.MkdirAll(path.Dir(name), 0o755); err != nil {
		return fmt.Errorf("upload %s: %w", target, err)
	}
	if err := r.RemoveAll(name); err != nil {
		return fmt.Errorf("upload %s: %w", target, err)
	}
	if err := uploadFile(r, src, name); err != nil {
		return fmt.Errorf("upload %s: %w", target, err)
	}
	return nil
}

// declaredArtifacts is the trial's artifact list: the task's, then the
// trial's (the run config's), as Harbor merges them.
func (vf verification) declaredArtifacts() []harbor.Artifact {
	t := vf.t
	list := append([]harbor.Artifact(nil), t.task.Config.Artifacts...)
	for _, src := range t.spec.Artifacts {
		list = append(list, harbor.Artifact{Source: src})
	}
	return list
}

// environmentRoot is the root filesystem of the trial's environment as
// the runner reaches it: the pod's overlay (image isolation) or the
// container's own root (container isolation); "" where the environment is
// the host's (development modes), whose paths are not the task's.
func (vf verification) environmentRoot() string {
	t := vf.t
	switch {
	case t.layer != nil:
		return t.layer.root
	case t.container != nil:
		return "/"
	}
	return ""
}

// environmentRootOf is the root filesystem of one of the trial's
// environments: main's (service "") or a running sidecar service's.
func (vf verification) environmentRootOf(service string) (string, error) {
	t := vf.t
	if service == "" {
		if root := vf.environmentRoot(); root != "" {
			return root, nil
		}
		return "", errors.New("the main environment is the host's in this isolation mode")
	}
	sc := t.services().sidecar(service)
	if sc == nil || sc.iso == nil || sc.iso.layer == nil {
		return "", fmt.Errorf("service %s is not running", service)
	}
	return sc.iso.layer.root, nil
}

// collectDeclared collects the trial's declared artifacts once the agent
// is done, into the work dir (the separate verifier gets them from there;
// finish keeps a redacted copy with the attempt).
func (vf verification) collectDeclared() error {
	t := vf.t
	list := vf.declaredArtifacts()
	if len(list) == 0 || t.declared != "" || t.steps != nil {
		return nil // a multi-step task's are collected per step (collectStepArtifacts)
	}
	if vf.environmentRoot() == "" {
		t.log.Warn("declared artifacts are not collected in this isolation mode (the environment is the host's)", "isolation", t.iso.name())
		return nil
	}
	t.declared = filepath.Join(t.work, "declared-artifacts")
	entries, err := collectArtifacts(vf.environmentRootOf, list, t.declared, ArtifactsDir+"/"+DeclaredArtifactsDir, maxArtifactBytes)
	if err != nil {
		return err
	}
	t.declaredEntries = entries
	for _, e := range entries {
		if e.Status == artifactFailed {
			t.log.Warn("declared artifact not collected", "source", e.Source, "err", e.Error)
		} else {
			t.log.Info("declared artifact collected", "source", e.Source, "destination", e.Destination, "status", e.Status)
		}
	}
	return nil
}

// collectStepArtifacts collects, once a step's agent is done and before
// its verifier, the task's, the trial's and the step's own artifacts into
// the step's directory (steps/<name>/declared/, Harbor's
// steps/<name>/artifacts/), as Harbor collects each step's.
func (vf verification) collectStepArtifacts(name string, step harbor.Step) error {
	t := vf.t
	list := append(vf.declaredArtifacts(), step.Config.Artifacts...)
	if len(list) == 0 {
		return nil
	}
	if vf.environmentRoot() == "" {
		t.log.Warn("declared artifacts are not collected in this isolation mode (the environment is the host's)", "isolation", t.iso.name(), "step", name)
		return nil
	}
	entries, err := collectArtifacts(vf.environmentRootOf, list, filepath.Join(t.steps.logs, name, DeclaredArtifactsDir),
		ArtifactsDir+"/steps/"+name+"/"+DeclaredArtifactsDir, maxArtifactBytes)
	if err != nil {
		return fmt.Errorf("step %s: %w", name, err)
	}
	for _, e := range entries {
		if e.Status == artifactFailed {
			t.log.Warn("declared artifact not collected", "step", name, "source", e.Source, "err", e.Error)
		} else {
			t.log.Info("declared artifact collected", "step", name, "source", e.Source, "status", e.Status)
		}
	}
	return nil
}

package registry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// DefaultRepoPath is the directory of a repository whose subdirectories
// are the tasks, when none is given (Harbor's _DEFAULT_TASKS_SUBDIR).
const DefaultRepoPath = "tasks"

// Repo is a parsed git dataset source (Harbor's `--repo` argument).
type Repo struct {
	// URL is the repository's git URL.
	URL string
	// Ref is the branch, tag or commit after '@' (or a /tree/<ref>/ URL
	// segment); "" is the default branch.
	Ref string
	// Path is the directory holding the task directories.
	Path string
	// Host, Org and Name name the repository (Harbor's ResolvedRepo).
	Host, Org, Name string
}

// ParseRepo reads a git dataset source as Harbor's resolve_repo_source
// does: a full http(s) URL (or, when the operator allows private networks,
// a git:// or file:// one), a scheme-less "host/org/name", or GitHub's
// "org/name"; an optional trailing "@ref"; a GitHub /tree/<ref>/<dir> URL.
// dir, when not "", is the task directory (Harbor's --path) and may not
// contradict the URL's.
func ParseRepo(source, dir string) (Repo, error) {
	source = strings.TrimSpace(source)
	if source == "" {
		return Repo{}, errors.New("is empty: give a git repository URL, e.g. https://github.com/org/name[@ref]")
	}
	if strings.HasPrefix(source, "-") || strings.HasPrefix(source, ".") || strings.HasPrefix(source, "/") || strings.HasPrefix(source, "~") {
		return Repo{}, fmt.Errorf("%q is not a git repository URL (local paths are not read)", source)
	}
	base, ref := source, ""
	if at := strings.LastIndexByte(source, '@'); at > 0 {
		if cand := source[at+1:]; cand != "" && !strings.ContainsAny(cand, "/:") {
			base, ref = source[:at], cand
		}
	}
	if ref != "" && !validGitRef(ref) {
		return Repo{}, fmt.Errorf("ref %q is not a branch, tag or commit name", ref)
	}
	if !strings.Contains(base, "://") {
		first, _, _ := strings.Cut(base, "/")
		if strings.Contains(first, ".") {
			base = "https://" + base
		} else {
			parts := strings.Split(strings.Trim(base, "/"), "/")
			if len(parts) != 2 {
				return Repo{}, fmt.Errorf("%q is neither org/name (GitHub), host/org/name nor a URL", source)
			}
			base = "https://github.com/" + parts[0] + "/" + strings.TrimSuffix(parts[1], ".git") + ".git"
		}
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" && u.Scheme != "file" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Repo{}, fmt.Errorf("%q is not a git repository URL (want https://host/org/name[@ref])", source)
	}
	switch u.Scheme {
	case "https", "http", "git", "file":
	default:
		return Repo{}, fmt.Errorf("%q: scheme %q is not fetched (use https://)", source, u.Scheme)
	}
	parts := strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' })
	var treeRef, treeDir string
	for i, p := range parts {
		if p == "tree" && i >= 2 {
			if i+1 < len(parts) {
				treeRef = parts[i+1]
			}
			treeDir = strings.Join(parts[min(i+2, len(parts)):], "/")
			parts = parts[:i]
			break
		}
	}
	if ref != "" && treeRef != "" {
		return Repo{}, fmt.Errorf("%q names two refs: '@%s' and '/tree/%s/'", source, ref, treeRef)
	}
	if ref == "" {
		ref = treeRef
	}
	if dir != "" && treeDir != "" {
		return Repo{}, fmt.Errorf("%q names the task directory %q, and path names %q: give one", source, treeDir, dir)
	}
	if dir == "" {
		dir = treeDir
	}
	if dir == "" {
		dir = DefaultRepoPath
	}
	clean, err := cleanTaskPath(dir)
	if err != nil {
		return Repo{}, fmt.Errorf("path: %w", err)
	}
	if len(parts) < 2 && u.Scheme != "file" {
		return Repo{}, fmt.Errorf("%q: could not read org/name from the URL (want https://host/org/name)", source)
	}
	r := Repo{Ref: ref, Path: path.Clean(strings.ReplaceAll(clean, `\`, "/")), Host: u.Host}
	if len(parts) >= 2 {
		r.Org, r.Name = parts[len(parts)-2], strings.TrimSuffix(parts[len(parts)-1], ".git")
	}
	u.Path = "/" + strings.Join(parts, "/")
	r.URL = u.String()
	return r, nil
}

// validGitRef accepts what git check-ref-format accepts in a branch or tag
// name, conservatively, and commit ids.
func validGitRef(ref string) bool {
	if len(ref) > 255 || strings.HasPrefix(ref, "-") || strings.HasPrefix(ref, ".") || strings.HasSuffix(ref, ".lock") ||
		strings.Contains(ref, "..") || strings.HasSuffix(ref, ".") {
		return false
	}
	for _, c := range ref {
		if c <= ' ' || c == 0x7f || strings.ContainsRune("~^:?*[\\", c) {
			return false
		}
	}
	return true
}

// String returns the source as given back: URL[@ref].
func (r Repo) String() string {
	if r.Ref == "" {
		return r.URL
	}
	return r.URL + "@" + r.Ref
}

// RepoSource is a Source for a git dataset: its Registry lists one
// dataset, the task directories (holding a task.toml) directly under
// Repo.Path at the commit the ref resolves to. Only that commit's trees are
// listed and only the tasks' paths are checked out; every fetch goes
// through the same network guard as registry git fetches.
type RepoSource struct {
	repo Repo
	git  *gitCache

	mu     sync.Mutex
	commit string
	reg    harbor.Registry
}

var _ Source = (*RepoSource)(nil)

// OpenRepo returns a Source for repo; nothing is fetched until Registry.
func OpenRepo(repo Repo, opts Options) (*RepoSource, error) {
	c, err := OpenWith("https://unused.invalid/registry.json", opts) // for its defaults
	if err != nil {
		return nil, err
	}
	return &RepoSource{repo: repo, git: c.git}, nil
}

// Location returns the repository and ref.
func (r *RepoSource) Location() string { return r.repo.String() }

// Commit returns the commit Registry resolved the ref to ("" before).
func (r *RepoSource) Commit() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commit
}

// Registry resolves the ref to a commit (git ls-remote, as Harbor does;
// a full commit id is used as it is), lists the task directories at that
// commit and returns them as one dataset named host/org/name (plus the
// task path when it is not the default) at version commit[:12].
func (r *RepoSource) Registry(ctx context.Context) (harbor.Registry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reg != nil {
		return r.reg, nil
	}
	if err := checkGitURL(r.repo.URL); err != nil {
		return nil, err
	}
	if err := r.git.checkTransport(r.repo.URL); err != nil {
		return nil, err
	}
	commit, err := r.resolve(ctx)
	if err != nil {
		return nil, err
	}
	names, err := r.list(ctx, commit)
	if err != nil {
		return nil, err
	}
	name := r.repo.Host + "/" + r.repo.Org + "/" + r.repo.Name
	if r.repo.Path != DefaultRepoPath {
		name += "/" + r.repo.Path
	}
	d := harbor.Dataset{Name: name, Version: commit[:12], Tasks: make([]harbor.TaskRef, len(names))}
	for i, n := range names {
		d.Tasks[i] = harbor.TaskRef{Name: n, GitURL: r.repo.URL, GitCommitID: commit, Path: path.Join(r.repo.Path, n)}
	}
	r.commit, r.reg = commit, harbor.Registry{d}
	return r.reg, nil
}

// resolve turns the ref into a full commit id.
func (r *RepoSource) resolve(ctx context.Context) (string, error) {
	if fullCommitRE.MatchString(r.repo.Ref) {
		return r.repo.Ref, nil
	}
	ref := r.repo.Ref
	if ref == "" {
		ref = "HEAD"
	}
	out, err := r.git.run(ctx, "", "ls-remote", "--", r.repo.URL, ref)
	if err != nil {
		if errors.Is(err, ErrAddressRefused) {
			return "", err
		}
		return "", fmt.Errorf("git ls-remote %s %w: %w", r.repo.URL, ErrUnreachable, err)
	}
	fields := strings.Fields(out)
	if len(fields) < 2 || !fullCommitRE.MatchString(fields[0]) {
		return "", fmt.Errorf("%w: ref %q is not a branch or tag of %s (a commit must be given in full)", ErrRefNotFound, ref, r.repo.URL)
	}
	return fields[0], nil
}

// ErrRefNotFound reports a ref the repository does not have.
var ErrRefNotFound = errors.New("ref not found")

// list fetches the commit's trees (no blobs) and returns the names of the
// directories directly under the task path that hold a task.toml.
func (r *RepoSource) list(ctx context.Context, commit string) ([]string, error) {
	repo, err := r.git.repo(r.repo.URL, commit)
	if err != nil {
		return nil, err
	}
	repo.mu.Lock()
	defer repo.mu.Unlock()
	if err := r.git.checkout(ctx, repo, r.repo.URL, commit); err != nil {
		return nil, err
	}
	prefix := ""
	args := []string{"ls-tree", "-r", "-z", "--name-only", repo.commit}
	if r.repo.Path != "." {
		prefix = r.repo.Path + "/"
		args = append(args, "--", prefix)
	}
	out, err := r.git.run(ctx, repo.dir, args...)
	if err != nil {
		return nil, fmt.Errorf("git ls-tree in %s: %w", r.repo.URL, err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\x00") {
		rel, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		if dir, file, ok := strings.Cut(rel, "/"); ok && file == harbor.TaskConfigFile {
			seen[dir] = true
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("no task directories (holding a %s) in %q of %s at %s; give path to point at the tasks directory", harbor.TaskConfigFile, r.repo.Path, r.repo.URL, commit)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		if !benchmark.ValidTaskName(n) {
			return nil, fmt.Errorf("task directory %q in %s of %s is not a task name: %s", n, r.repo.Path, r.repo.URL, benchmark.SegmentRule)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// FetchTask copies one task directory of the resolved commit.
func (r *RepoSource) FetchTask(ctx context.Context, ref harbor.TaskRef, dst string) (Fetched, error) {
	rel, err := cleanTaskPath(ref.Path)
	if err != nil {
		return Fetched{}, fmt.Errorf("task %s: %w", ref.Name, err)
	}
	commit, err := r.git.fetch(ctx, ref.GitURL, ref.GitCommitID, rel, dst)
	if err != nil {
		return Fetched{}, fmt.Errorf("task %s: %w", ref.Name, err)
	}
	ref.GitCommitID = commit
	return Fetched{Ref: ref}, nil
}

// Close removes the checkout.
func (r *RepoSource) Close() error { return r.git.close() }

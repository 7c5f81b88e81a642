package benchsync

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// bareRepo commits the named example tasks under tasks/ in a new
// repository and returns the file:// URL of a bare clone and its commit.
func bareRepo(t *testing.T, tasks ...string) (url, commit string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	for _, name := range tasks {
		copyExample(t, name, filepath.Join(work, "tasks", name))
	}
	gitOutput(t, work, "init", "--quiet", "--initial-branch=main")
	gitOutput(t, work, "add", ".")
	gitOutput(t, work, "commit", "--quiet", "-m", "tasks")
	bare := filepath.Join(root, "repo.git")
	gitOutput(t, root, "clone", "--quiet", "--bare", work, bare)
	return "file://" + bare, gitOutput(t, work, "rev-parse", "HEAD")
}

func gitOutput(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestAddGitDataset syncs a dataset whose tasks live in a git repository,
// pinned to a commit, from a local registry file.
func TestAddGitDataset(t *testing.T) {
	ctx := context.Background()
	repoURL, commit := bareRepo(t, "lru-cache", "roman-numerals", "markdown-toc")
	dir := t.TempDir()
	writeRegistry(t, filepath.Join(dir, "registry.json"), `[{"name": "gitbench", "version": "0.1", "description": "from git", "tasks": [
		{"name": "lru-cache", "git_url": "`+repoURL+`", "git_commit_id": "`+commit+`", "path": "tasks/lru-cache"},
		{"name": "roman-numerals", "git_url": "`+repoURL+`", "git_commit_id": "`+commit+`", "path": "tasks/roman-numerals"},
		{"name": "markdown-toc", "git_url": "`+repoURL+`", "git_commit_id": "`+commit+`", "path": "tasks/markdown-toc"}]}]`)
	e := newEnv(t, filepath.Join(dir, "registry.json"))
	b, err := e.svc.Add(ctx, ws, "gitbench@0.1")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	got := e.benchmark(t, b.Key)
	if got.Status != records.SyncReady || got.TaskCount != 3 || got.ReadyVersion != "0.1" {
		t.Fatalf("after Sync: %+v", got)
	}
	m, _ := e.manifest(t, got)
	meta := exampleMetadata(t)
	for _, task := range m.Tasks {
		if task.Location.GitCommitID != commit || [2]string{task.Category, task.Difficulty} != meta[task.Name] {
			t.Errorf("task %+v, want commit %s and metadata %v", task, commit, meta[task.Name])
		}
	}
}

// TestUnreachableGitThenRetry: a task repository that does not exist yet
// fails the sync with git's reason; once it exists a retry succeeds.
func TestUnreachableGitThenRetry(t *testing.T) {
	ctx := context.Background()
	repoURL, _ := bareRepo(t, "extract-ips")
	missing := repoURL + "-not-yet"
	dir := t.TempDir()
	registryPath := filepath.Join(dir, "registry.json")
	writeRegistry(t, registryPath, `[{"name": "later", "version": "1", "description": "", "tasks": [
		{"name": "extract-ips", "git_url": "`+missing+`", "path": "tasks/extract-ips"}]}]`)
	e := newEnv(t, registryPath)
	b, err := e.svc.Add(ctx, ws, "later")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	failed := e.benchmark(t, b.Key)
	if failed.Status != records.SyncFailed || !strings.Contains(failed.SyncError, "task extract-ips: git ls-remote "+missing+" unreachable") {
		t.Fatalf("with the repository missing: %s %q", failed.Status, failed.SyncError)
	}
	t.Logf("sync error: %s", failed.SyncError)
	if err := os.Rename(strings.TrimPrefix(repoURL, "file://"), strings.TrimPrefix(missing, "file://")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Retry(ctx, ws, b.Key); err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	if got := e.benchmark(t, b.Key); got.Status != records.SyncReady || got.SyncError != "" {
		t.Errorf("after retry: %+v", got)
	}
}

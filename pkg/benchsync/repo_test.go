package benchsync

import (
	"context"
	"errors"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// gitHTTPServer serves the bare repositories under root over git's smart
// HTTP protocol (git http-backend behind a CGI handler) on loopback.
func gitHTTPServer(t *testing.T, root string) string { return gitHTTPServerB(t, root) }

func gitHTTPServerB(t testing.TB, root string) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	srv := httptest.NewServer(&cgi.Handler{Path: git, Args: []string{"http-backend"}, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}})
	t.Cleanup(srv.Close)
	return srv.URL
}

// taskRepo makes root/acme/tasks.git holding the named example tasks under
// dir and returns its file URL (to push to) and first commit.
func taskRepo(t *testing.T, root, dir string, tasks ...string) (string, string) {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	for _, name := range tasks {
		copyExample(t, name, filepath.Join(work, dir, name))
	}
	gitOutput(t, work, "init", "--quiet", "--initial-branch=main")
	gitOutput(t, work, "add", ".")
	gitOutput(t, work, "commit", "--quiet", "-m", "tasks")
	gitOutput(t, work, "tag", "v1")
	bare := filepath.Join(root, "acme", "tasks.git")
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatal(err)
	}
	gitOutput(t, work, "clone", "--quiet", "--bare", work, bare)
	gitOutput(t, bare, "config", "uploadpack.allowFilter", "true")
	gitOutput(t, bare, "config", "uploadpack.allowAnySHA1InWant", "true")
	return "file://" + bare, gitOutput(t, work, "rev-parse", "HEAD")
}

func TestAddRepoDatasetOverHTTP(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	pushURL, first := taskRepo(t, root, "tasks", "fix-median", "word-frequency")
	repo := gitHTTPServer(t, root) + "/acme/tasks.git"
	e := newEnv(t, exampleRegistry)

	b, err := e.svc.AddFrom(ctx, ws, AddRequest{Repo: repo + "@main"})
	if err != nil {
		t.Fatalf("AddFrom(repo@main) = %v", err)
	}
	if b.Key != "acme-tasks-main" || b.Total != 2 || !strings.HasSuffix(b.Name, "/acme/tasks") {
		t.Fatalf("added %+v; want key acme-tasks-main, 2 tasks", b)
	}
	e.sync(t, b.Key)
	b = e.benchmark(t, b.Key)
	if b.Status != records.SyncReady || b.ReadyVersion != first[:12] {
		t.Fatalf("after sync: %s at %s (%s); want ready at %s", b.Status, b.ReadyVersion, b.SyncError, first[:12])
	}
	m, _ := e.manifest(t, b)
	if m.Source.Ref != repo+"@"+first {
		t.Errorf("manifest source %q, want %s@%s (the commit pinned)", m.Source.Ref, repo, first)
	}
	for _, task := range m.Tasks {
		if task.Location.GitCommitID != first || task.Location.GitURL != repo {
			t.Errorf("task %s location %+v; want %s at %s", task.Name, task.Location, repo, first)
		}
	}

	// Pinned to the tag and to the commit: these do not move.
	tag, err := e.svc.AddFrom(ctx, ws, AddRequest{Repo: repo + "@v1"})
	if err != nil {
		t.Fatal(err)
	}
	commit, err := e.svc.AddFrom(ctx, ws, AddRequest{Repo: repo + "@" + first})
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, tag.Key)
	e.sync(t, commit.Key)

	// The branch moves: the refresh records a new version; the old one
	// stays for runs that pinned it.
	second := pushChange(t, pushURL, "tasks/word-frequency/instruction.md", "\nAlso count digits.\n")
	e.clock.Advance(48 * time.Hour)
	e.refreshAll(t, time.Hour)
	moved := e.benchmark(t, b.Key)
	if moved.ReadyVersion != second[:12] || moved.ReadyDigest == b.ReadyDigest {
		t.Errorf("branch after refresh at %s (%s); want %s with a new digest", moved.ReadyVersion, moved.ReadyDigest, second[:12])
	}
	if _, _, err := e.rec.Benchmarks.Manifest(ctx, ws, b.Key, first[:12]); err != nil {
		t.Errorf("the version runs may pin is gone: %v", err)
	}
	for _, k := range []string{tag.Key, commit.Key} {
		if p := e.benchmark(t, k); p.ReadyVersion != first[:12] {
			t.Errorf("pinned %s moved to %s", k, p.ReadyVersion)
		}
	}
}

func TestAddRepoBadCases(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	taskRepo(t, root, "bench", "fix-median")
	repo := gitHTTPServer(t, root) + "/acme/tasks.git"
	e := newEnv(t, exampleRegistry)
	var fe *benchmark.FieldError

	if _, err := e.svc.AddFrom(ctx, ws, AddRequest{Repo: repo}); !errors.As(err, &fe) || !strings.Contains(fe.Message, "no task directories") {
		t.Errorf("tasks not under tasks/: %v; want a FieldError saying so", err)
	}
	b, err := e.svc.AddFrom(ctx, ws, AddRequest{Repo: repo, Path: "bench"})
	if err != nil || b.Total != 1 || b.Key != "acme-tasks-bench" {
		t.Errorf("with path bench: %+v, %v", b, err)
	}
	if _, err := e.svc.AddFrom(ctx, ws, AddRequest{Repo: repo + "@no-such-branch"}); !errors.Is(err, ErrDatasetNotFound) {
		t.Errorf("unknown branch: %v; want ErrDatasetNotFound", err)
	}
	for _, tc := range []struct{ repo, path, field string }{
		{"ftp://example.com/acme/tasks", "", "repo"},
		{"./local/dir", "", "repo"},
		{repo + "@bad..ref", "", "repo"},
		{repo, "../../etc", "repo or path"},
	} {
		if _, err := e.svc.AddFrom(ctx, ws, AddRequest{Repo: tc.repo, Path: tc.path}); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("AddFrom(%q, path %q) = %v; want a FieldError on %s", tc.repo, tc.path, err, tc.field)
		}
	}
	// The network guard, on by default, refuses the loopback server.
	e.svc.allowPrivate = false
	if _, err := e.svc.AddFrom(ctx, ws, AddRequest{Repo: repo, Path: "bench"}); !errors.As(err, &fe) || fe.Field != "repo" || !strings.Contains(fe.Message, "loopback") {
		t.Errorf("loopback repository under the default policy: %v; want a FieldError on repo naming loopback", err)
	}
	if list, _ := e.rec.Benchmarks.Benchmarks(ctx, ws); len(list) != 1 {
		t.Errorf("%d benchmarks written; want only the one good add", len(list))
	}
}

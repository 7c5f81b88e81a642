package registry

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// hostileTask writes a task directory holding a copy of an example task
// plus the given symbolic links (name → target) under dir/tasks/t.
func hostileTask(t *testing.T, dir string, links map[string]string) {
	t.Helper()
	task := filepath.Join(dir, "tasks", "t")
	if err := copyTree("../../examples/demo-bench", "fix-median", task); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		p := filepath.Join(task, name)
		_ = os.Remove(p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

// symlinkCases are links a task tree may not hold, and links it may.
func symlinkCases(t *testing.T) (refused []map[string]string, kept map[string]string) {
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:secret-hash"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []map[string]string{
			{"instruction.md": secret},                         // absolute, outside
			{"instruction.md": "../../../../../../etc/passwd"}, // relative, outside
			{"tests/up": "../.."},                              // the task's parent
			{"loop": "self/.."},                                // through a link, then up
			{"self": ".", "up": "self/.."},                     // a link to the root, then up and out
			{"dangling": "nothing-here"},                       // resolves nowhere
		}, map[string]string{
			"alias.md":        "instruction.md",
			"tests/alias.sh":  "test.sh",
			"tests/sibling":   "../instruction.md",
			"environment/dir": "../tests",
		}
}

func TestFetchRefusesLinksLeavingTheTask(t *testing.T) {
	refused, kept := symlinkCases(t)
	ctx := context.Background()
	for i, links := range refused {
		dir := t.TempDir()
		hostileTask(t, dir, links)
		writeFile(t, filepath.Join(dir, "registry.json"), `[{"name":"x","version":"1","tasks":[{"name":"t","path":"tasks/t"}]}]`)
		c, err := OpenWith(filepath.Join(dir, "registry.json"), Options{TempDir: t.TempDir(), AllowPrivateNetworks: true})
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(t.TempDir(), "task")
		_, err = c.FetchTask(ctx, harbor.TaskRef{Name: "t", Path: "tasks/t"}, dst)
		if err == nil || !strings.Contains(err.Error(), "does not resolve inside the task directory") {
			t.Errorf("case %d %v: FetchTask error = %v, want the link refused", i, links, err)
		}
		if data, err := os.ReadFile(filepath.Join(dst, "instruction.md")); err == nil && strings.Contains(string(data), "secret-hash") {
			t.Errorf("case %d: the outside file was copied into the task", i)
		}
	}

	dir := t.TempDir()
	hostileTask(t, dir, kept)
	writeFile(t, filepath.Join(dir, "registry.json"), `[{"name":"x","version":"1","tasks":[{"name":"t","path":"tasks/t"}]}]`)
	c, err := OpenWith(filepath.Join(dir, "registry.json"), Options{TempDir: t.TempDir(), AllowPrivateNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "task")
	if _, err := c.FetchTask(ctx, harbor.TaskRef{Name: "t", Path: "tasks/t"}, dst); err != nil {
		t.Fatalf("FetchTask with inside links: %v", err)
	}
	for name, target := range kept {
		if got, err := os.Readlink(filepath.Join(dst, name)); err != nil || got != target {
			t.Errorf("copied %s -> %q (%v), want a link to %q", name, got, err, target)
		}
	}
}

func TestFetchRefusesTaskPathThroughALink(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := copyTree("../../examples/demo-bench", "fix-median", filepath.Join(outside, "t")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "tasks")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "registry.json"), `[{"name":"x","version":"1","tasks":[{"name":"t","path":"tasks/t"}]}]`)
	c, err := OpenWith(filepath.Join(dir, "registry.json"), Options{TempDir: t.TempDir(), AllowPrivateNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.FetchTask(context.Background(), harbor.TaskRef{Name: "t", Path: "tasks/t"}, filepath.Join(t.TempDir(), "task"))
	if err == nil || !strings.Contains(err.Error(), "leaves the registry directory") {
		t.Errorf("FetchTask(path through an outside link) error = %v, want it refused", err)
	}
}

func TestGitFetchRefusesLinksLeavingTheTask(t *testing.T) {
	requireGit(t)
	refused, _ := symlinkCases(t)
	root := t.TempDir()
	work := filepath.Join(root, "work")
	hostileTask(t, work, refused[0])
	gitRun(t, work, "init", "--quiet", "--initial-branch=main")
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "--quiet", "-m", "hostile")
	bare := filepath.Join(root, "repo.git")
	gitRun(t, root, "clone", "--quiet", "--bare", work, bare)
	c, err := OpenWith(exampleRegistry, Options{TempDir: t.TempDir(), AllowPrivateNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.FetchTask(context.Background(), harbor.TaskRef{Name: "t", GitURL: "file://" + bare, Path: "tasks/t"}, filepath.Join(t.TempDir(), "task"))
	if err == nil || !strings.Contains(err.Error(), "tasks/t/instruction.md is a symbolic link") {
		t.Errorf("git FetchTask(instruction.md -> outside) error = %v, want the link refused by path", err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

package registry

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// bareRepo builds a bare git repository holding two example tasks under
// tasks/, with a second commit that changes tasks/beta. It returns the
// repository's file:// URL and both commits.
func bareRepo(t *testing.T) (url, first, second string) {
	t.Helper()
	requireGit(t)
	root := t.TempDir()
	work := filepath.Join(root, "work")
	for name, example := range map[string]string{"alpha": "fix-median", "beta": "word-frequency"} {
		if err := copyTree("../../examples/demo-bench", example, filepath.Join(work, "tasks", name)); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, work, "init", "--quiet", "--initial-branch=main")
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "--quiet", "-m", "first")
	first = gitRun(t, work, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(work, "tasks/beta/instruction.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, work, "commit", "--quiet", "-am", "second")
	second = gitRun(t, work, "rev-parse", "HEAD")
	bare := filepath.Join(root, "repo.git")
	gitRun(t, root, "clone", "--quiet", "--bare", work, bare)
	return "file://" + bare, first, second
}

func TestGitFetch(t *testing.T) {
	url, first, second := bareRepo(t)
	ctx := context.Background()
	c, err := OpenWith(exampleRegistry, Options{TempDir: t.TempDir(), AllowPrivateNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		ref         harbor.TaskRef
		wantCommit  string
		instruction string // "" = as in the example
		example     string
	}{
		{"pinned", harbor.TaskRef{Name: "alpha", GitURL: url, GitCommitID: first, Path: "tasks/alpha"}, first, "", "fix-median"},
		{"pinned older", harbor.TaskRef{Name: "beta", GitURL: url, GitCommitID: first, Path: "tasks/beta"}, first, "", "word-frequency"},
		{"HEAD", harbor.TaskRef{Name: "beta", GitURL: url, GitCommitID: "HEAD", Path: "tasks/beta"}, second, "changed\n", ""},
		{"no commit", harbor.TaskRef{Name: "alpha", GitURL: url, Path: "tasks/alpha/"}, second, "", "fix-median"},
		{"abbreviated", harbor.TaskRef{Name: "alpha", GitURL: url, GitCommitID: first[:12], Path: "tasks/alpha"}, first, "", "fix-median"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "task")
			got, err := c.FetchTask(ctx, tt.ref, dst)
			if err != nil {
				t.Fatalf("FetchTask: %v", err)
			}
			want := tt.ref
			want.GitCommitID = tt.wantCommit
			if diff := cmp.Diff(Fetched{Ref: want}, got); diff != "" {
				t.Errorf("FetchTask mismatch (-want +got):\n%s", diff)
			}
			if tt.example != "" {
				if a, b := digest(t, filepath.Join("../../examples/demo-bench", tt.example)), digest(t, dst); a != b {
					t.Errorf("fetched digest %s, want the example's %s", b, a)
				}
			}
			if tt.instruction != "" {
				data, _ := os.ReadFile(filepath.Join(dst, "instruction.md"))
				if string(data) != tt.instruction {
					t.Errorf("instruction.md = %q, want %q", data, tt.instruction)
				}
			}
			if _, err := os.Stat(filepath.Join(dst, ".git")); err == nil {
				t.Error("fetched task contains .git")
			}
		})
	}
	// first, second and the abbreviated id each got one checkout, shared by
	// the tasks at that commit.
	if n := len(c.git.repos); n != 3 {
		t.Errorf("git checkouts = %d, want 3", n)
	}
	root := c.git.root
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("Close left %s behind (stat: %v)", root, err)
	}
}

func TestGitFetchErrors(t *testing.T) {
	url, first, _ := bareRepo(t)
	missing := "file://" + filepath.Join(t.TempDir(), "nothing.git")
	tests := []struct {
		name    string
		ref     harbor.TaskRef
		wantErr []string
	}{
		{"missing path", harbor.TaskRef{Name: "x", GitURL: url, GitCommitID: first, Path: "tasks/nope"}, []string{`task x: path "tasks/nope" is not a directory in ` + url + " at " + first}},
		{"missing repository", harbor.TaskRef{Name: "x", GitURL: missing, Path: "tasks/alpha"}, []string{"task x: git ls-remote " + missing + " unreachable", "does not appear to be a git repository"}},
		{"missing commit", harbor.TaskRef{Name: "x", GitURL: url, GitCommitID: strings.Repeat("0", 40), Path: "tasks/alpha"}, []string{"task x: git fetch " + url + ": commit " + strings.Repeat("0", 40) + " not found in the repository"}},
		{"bad scheme", harbor.TaskRef{Name: "x", GitURL: "ext::sh -c id", Path: "tasks/alpha"}, []string{`task x: git_url "ext::sh -c id"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := OpenWith(exampleRegistry, Options{TempDir: t.TempDir(), AllowPrivateNetworks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.FetchTask(context.Background(), tt.ref, filepath.Join(t.TempDir(), "task"))
			if err == nil {
				t.Fatal("FetchTask succeeded")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("FetchTask error = %v, want it to contain %q", err, want)
				}
			}
		})
	}
}

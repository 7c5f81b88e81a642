package examples

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// bwrapInstallHint says how to get bubblewrap; the sandbox tests fail (never
// skip) without it.
const bwrapInstallHint = "bubblewrap (bwrap) is required to run the example tasks: install it with `apt-get install -y bubblewrap` (or run `make deps`)"

// seedDir is where a task keeps the files that seed /app (see README.md).
const seedDir = "environment/files"

// trial is one run of one task: a private /app seeded from the task's
// environment/files, plus /logs/agent and /logs/verifier, in a temp dir.
type trial struct {
	task harbor.Task
	root string
}

// newTrial prepares a fresh trial of task under a temp dir.
func newTrial(t *testing.T, task harbor.Task) *trial {
	t.Helper()
	tr := &trial{task: task, root: t.TempDir()}
	for _, dir := range []string{"app", "logs/agent", "logs/verifier"} {
		if err := os.MkdirAll(tr.path(dir), 0o755); err != nil {
			t.Fatalf("create %s: %v", dir, err)
		}
	}
	if err := copyTree(filepath.Join(task.Dir, seedDir), tr.path("app")); err != nil {
		t.Fatalf("seed /app of %s: %v", task.Name, err)
	}
	return tr
}

func (tr *trial) path(rel string) string { return filepath.Join(tr.root, filepath.FromSlash(rel)) }

// mount is one extra bind mount into the sandbox.
type mount struct {
	host, sandbox string
	writable      bool
}

// phase is what one sandboxed process sees and runs.
type phase struct {
	mounts  []mount
	env     map[string]string
	timeout time.Duration
	argv    []string
}

// runAgent runs argv as the agent: /app and /logs/agent writable, plus extra
// read-only mounts (/solution for the oracle, /agent for the command agent).
// It returns the combined output and the process error, if any.
func (tr *trial) runAgent(ctx context.Context, extra []mount, env map[string]string, argv ...string) (string, error) {
	mounts := append([]mount{{host: tr.path("logs/agent"), sandbox: "/logs/agent", writable: true}}, extra...)
	timeout := tr.task.Config.AgentTimeout()
	return tr.run(ctx, phase{mounts: mounts, env: env, timeout: timeout, argv: argv})
}

// runVerifier runs tests/test.sh with /tests read-only and /logs/verifier
// writable, then reads the reward it wrote.
func (tr *trial) runVerifier(ctx context.Context) (harbor.Reward, string, error) {
	mounts := []mount{
		{host: filepath.Join(tr.task.Dir, harbor.TestsDir), sandbox: "/tests"},
		{host: tr.path("logs/verifier"), sandbox: "/logs/verifier", writable: true},
	}
	out, err := tr.run(ctx, phase{mounts: mounts, timeout: tr.task.Config.VerifierTimeout(), argv: []string{"bash", "/tests/test.sh"}})
	if err != nil {
		return harbor.Reward{}, out, fmt.Errorf("verifier of %s: %w\n%s", tr.task.Name, err, out)
	}
	reward, err := harbor.ReadReward(tr.path("logs/verifier"))
	if err != nil {
		return harbor.Reward{}, out, fmt.Errorf("reward of %s: %w\n%s", tr.task.Name, err, out)
	}
	return reward, out, nil
}

// run executes one phase in bubblewrap: a tmpfs root with the host's /usr and
// /etc read-only, no network, its own pid/ipc/uts namespaces, no
// capabilities, a clean environment, and /app as the working directory.
func (tr *trial) run(ctx context.Context, p phase) (string, error) {
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	args := baseBwrapArgs()
	args = append(args, "--bind", tr.path("app"), "/app")
	for _, m := range p.mounts {
		flag := "--ro-bind"
		if m.writable {
			flag = "--bind"
		}
		args = append(args, flag, m.host, m.sandbox)
	}
	args = append(args, "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp")
	for k, v := range p.env {
		args = append(args, "--setenv", k, v)
	}
	args = append(args, "--chdir", "/app", "--")
	args = append(args, p.argv...)
	cmd := exec.CommandContext(ctx, "bwrap", args...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("timed out after %v: %w", p.timeout, ctx.Err())
	}
	return string(out), err
}

// baseBwrapArgs builds the sandbox's root filesystem. On merged-/usr systems
// /bin, /lib, /lib64 and /sbin are symlinks into /usr and are recreated as such.
func baseBwrapArgs() []string {
	args := []string{
		"--tmpfs", "/",
		"--ro-bind", "/usr", "/usr",
		"--ro-bind", "/etc", "/etc",
	}
	for _, dir := range []string{"/bin", "/lib", "/lib64", "/sbin"} {
		if target, err := os.Readlink(dir); err == nil {
			args = append(args, "--symlink", target, dir)
		} else {
			args = append(args, "--ro-bind-try", dir, dir)
		}
	}
	return append(args,
		"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--cap-drop", "ALL", "--clearenv",
	)
}

// requireBwrap fails the test when bubblewrap is missing or cannot build a sandbox.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("%s (%v)", bwrapInstallHint, err)
	}
	args := append(baseBwrapArgs(), "--", "true")
	if out, err := exec.Command("bwrap", args...).CombinedOutput(); err != nil {
		t.Fatalf("bwrap cannot create a sandbox here: %v\n%s\n%s", err, out, bwrapInstallHint)
	}
}

// copyTree copies the regular files and directories under src into dst,
// keeping permission bits (including setuid/setgid/sticky). A missing src
// copies nothing.
func copyTree(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var dirs []string
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, target)
			return os.MkdirAll(target, 0o755)
		case info.Mode().IsRegular():
			return copyFile(path, target, info.Mode())
		default:
			return fmt.Errorf("%s: only regular files and directories may seed /app", path)
		}
	})
	if err != nil {
		return err
	}
	// Directory modes last, so a read-only directory does not block its contents.
	for i := len(dirs) - 1; i >= 0; i-- {
		rel, _ := filepath.Rel(dst, dirs[i])
		info, err := os.Stat(filepath.Join(src, rel))
		if err != nil {
			return err
		}
		if err := os.Chmod(dirs[i], fileMode(info.Mode())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, fileMode(mode))
}

// fileMode keeps the permission and special bits of m in the form os.Chmod takes.
func fileMode(m fs.FileMode) fs.FileMode {
	return m & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// firstLines shortens output for failure messages.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

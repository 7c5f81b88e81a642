package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/compose"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// Harbor's [[verifier.collect]] hooks: once the agent is done, each hook's
// command runs in its service — main's first (under bash, as a phase of
// the main pod), then the sidecars' (under POSIX sh, in the service's own
// pod) — to snapshot runtime state into files before the environment
// ends. As in Harbor a hook is best effort: its failure (an exit code, a
// timeout) is logged, naming the task, the hook, its service and its
// output, and the trial goes on.

// runCollectHooks runs the task's collect hooks, main's then the sidecars'.
func (sv services) runCollectHooks(ctx context.Context) error {
	return sv.runCollectHooksOf(ctx, sv.t.task.Config.Verifier.Collect)
}

// runCollectHooksOf runs hooks, main's then the sidecars' (a step's pass
// runs the task's hooks and then its own, as Harbor does).
func (sv services) runCollectHooksOf(ctx context.Context, hooks []harbor.CollectHook) error {
	for _, mainPass := range []bool{true, false} {
		for i, h := range hooks {
			if (h.Service == compose.MainService) != mainPass {
				continue
			}
			if err := sv.runCollectHook(ctx, i, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// runCollectHook runs hook i; only a phase that cannot be run at all (the
// runner's failure) is an error.
func (sv services) runCollectHook(ctx context.Context, i int, h harbor.CollectHook) error {
	t := sv.t
	dir := filepath.Join(t.work, "collect", strconv.Itoa(i))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("collect hook: %w", err)
	}
	name := fmt.Sprintf("verifier.collect[%d]", i)
	p := phase{name: "collect_hook", timeout: h.Timeout(), stdout: filepath.Join(dir, "stdout.txt"), stderr: filepath.Join(dir, "stderr.txt")}
	var iso isolation = t.iso
	if h.Service == compose.MainService {
		pc, err := sv.collectMainCommand(h)
		if err != nil {
			return err
		}
		p.cmd = pc
	} else {
		sc := sv.sidecar(h.Service)
		if sc == nil || sc.iso == nil || sc.iso.pod == nil {
			t.log.Warn("collect hook not run: its service is not running", "task", sv.healthcheckTaskName(), "hook", name, "service", h.Service)
			return nil
		}
		u := sc.user
		if h.User != "" {
			var err error
			if u, err = resolveUser(sc.iso.layer.root, h.User); err != nil || !u.root() {
				t.log.Warn("collect hook not run: a sidecar's commands run as root only", "task", sv.healthcheckTaskName(), "hook", name, "service", h.Service, "user", h.User, "err", err)
				return nil
			}
		}
		p.cmd = phaseCommand{argv: []string{"sh", "-c", h.Command}, env: sc.env, user: u}
		iso = sc.iso
	}
	out, err := runPhase(ctx, iso, p)
	if err != nil {
		return fmt.Errorf("task %s: %s in service %s: %w", sv.healthcheckTaskName(), name, h.Service, err)
	}
	if out.Canceled {
		return fmt.Errorf("collect hook: runner stopped: %w", context.Cause(ctx))
	}
	switch {
	case out.TimedOut:
		t.log.Warn("collect hook failed; the trial goes on (Harbor's rule)", "task", sv.healthcheckTaskName(), "hook", name, "service", h.Service,
			"result", fmt.Sprintf("timed out after %s", h.Timeout()), "output", lastOutput(p.stdout, p.stderr))
	case out.ExitCode != 0:
		t.log.Warn("collect hook failed; the trial goes on (Harbor's rule)", "task", sv.healthcheckTaskName(), "hook", name, "service", h.Service,
			"result", fmt.Sprintf("exit code %d", out.ExitCode), "output", lastOutput(p.stdout, p.stderr))
	default:
		t.log.Info("collect hook done", "hook", name, "service", h.Service)
	}
	return nil
}

// collectMainCommand is a main hook's phase: the agent phase's sandbox
// settings with the environment's variables (none of the agent's) and the
// hook's user, else the image's.
func (sv services) collectMainCommand(h harbor.CollectHook) (phaseCommand, error) {
	t := sv.t
	pc := phaseCommand{script: h.Command, mounts: t.agentMounts(), tmpDir: t.host.Tmp, workDir: t.host.App}
	if err := t.imageSandbox().imagePhase(&pc, roleAgent); err != nil {
		return pc, err
	}
	env := baseEnv(t.seen.Tmp, t.seen.Tmp, t.seen.App)
	maps.Copy(env, t.task.Config.Environment.Env)
	pc.env = envList(env)
	if t.image != nil {
		spec := t.image.img.User
		if h.User != "" {
			spec = h.User
		}
		u, err := resolveUser(t.image.root(), spec)
		if err != nil {
			return pc, fmt.Errorf("task %s: collect hook user: %w", sv.healthcheckTaskName(), err)
		}
		pc.user = u
		pc.env = imageEnv(t.image.img, u, pc.env)
	}
	return pc, nil
}

// copyOutOfService copies src (an absolute path in the running service
// name's filesystem: a file or a directory tree) to dst on the host, never
// following a symlink of the service's out of its root (every step goes
// through an os.Root of its overlay). Symlinks inside are copied as
// regular files' contents only when they stay in the root; others are
// skipped. For artifacts with a `service`.
func (sv services) copyOutOfService(name, src, dst string) error {
	sc := sv.sidecar(name)
	if sc == nil || sc.iso == nil || sc.iso.layer == nil {
		return fmt.Errorf("service %s is not running", name)
	}
	root, err := os.OpenRoot(sc.iso.layer.root)
	if err != nil {
		return err
	}
	defer root.Close()
	rel := strings.TrimPrefix(filepath.Clean("/"+src), "/")
	if rel == "" {
		rel = "."
	}
	return fs.WalkDir(root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, strings.TrimPrefix(strings.TrimPrefix(p, rel), "/"))
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyRootFile(root, p, target)
		default:
			return nil // symlinks, devices, sockets: not copied
		}
	})
}

func copyRootFile(root *os.Root, rel, target string) error {
	in, err := root.Open(rel)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

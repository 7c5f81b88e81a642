package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/gauntlet-bench/gauntlet/pkg/confine"
	"github.com/gauntlet-bench/gauntlet/pkg/runner/executor"
)

// Each isolation of the runner is an executor.Executor: a Process (data) in,
// a typed exit out, on the same launch paths the trial's phases take (the
// pod for an image, bwrap over the host's rootfs, a plain process, the
// Fargate container). Run is one container's life: what it sets up (an
// overlay, a pod, cgroups, the network) goes when it returns.
// executortest.Run is the contract every one of them keeps
// (executor_test.go).

var (
	_ executor.Executor = (*imageExecutor)(nil)
	_ executor.Executor = (*hostExecutor)(nil)
	_ executor.Executor = (*processExecutor)(nil)
	_ executor.Executor = (*containerExecutor)(nil)
)

// runDirs names each Run's scratch directory within an executor's work dir.
type runDirs struct {
	work string
	n    atomic.Int64
}

func (d *runDirs) next() (string, error) {
	dir := filepath.Join(d.work, "run-"+strconv.FormatInt(d.n.Add(1), 10))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("executor: %w", err)
	}
	return dir, nil
}

// cgroupName is the cgroup of one Run, unique per process and run.
func (d *runDirs) cgroupName(dir string) string {
	return fmt.Sprintf("executor-%d-%s", os.Getpid(), filepath.Base(dir))
}

func limitsOf(l executor.Limits) resourceLimits {
	return resourceLimits{CPUs: l.CPUs, MemoryMB: l.MemoryMB, Pids: l.Pids}
}

// unlimitedPids is the pids limit of a run that sets none: the kernel's
// own ceiling (pid_max is at most 2^22), so the run still has a cgroup
// holding every process it started, which its tear-down kills and waits
// for (a PID namespace's processes die after its pid 1, not with it).
const unlimitedPids = 1 << 22

// teardownLimits are l with a pids cgroup always present (unlimitedPids).
func teardownLimits(l executor.Limits) resourceLimits {
	lim := limitsOf(l)
	if lim.Pids <= 0 {
		lim.Pids = unlimitedPids
	}
	return lim
}

func mountsOf(ms []executor.Mount) []mount {
	out := make([]mount, 0, len(ms))
	for _, m := range ms {
		out = append(out, mount{host: m.Source, target: m.Target, writable: !m.ReadOnly, file: m.File})
	}
	return out
}

// networkOf is the effective network mode of a process: an unknown or
// empty mode is none (fail closed), as a phase's is.
func networkOf(pc *phaseCommand, n executor.Network) {
	pc.netMode = effectiveNetwork(n.Mode, "")
	pc.network = pc.netMode == netPublic
	if pc.netMode == netAllowlist {
		pc.allowedHosts = n.AllowedHosts
		pc.env = append(pc.env, proxyEnv()...)
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// execute runs pc under iso (joined to cg, when not nil) and turns how it
// ended into the executor's typed exit; oomKills counts the kernel's kills
// for the memory limit of whatever holds the process (its cgroup, its pod's).
func execute(ctx context.Context, iso isolation, pc phaseCommand, cg *cgroup, p executor.Process, oomKills func() int) error {
	before := oomKills()
	var out phaseOutcome
	// A sandbox that fails to set up ran nothing of the process: it is
	// started again, as a phase is (runPhase).
	for attempt := 1; ; attempt++ {
		out = phaseOutcome{}
		ran, err := waitPhase(ctx, ctx, iso, phase{name: "process", cmd: pc, cgroup: cg}, orDiscard(p.Stdout), orDiscard(p.Stderr), &out)
		switch {
		case errors.Is(err, errSandboxSetup) && attempt < setupAttempts:
			continue
		case err != nil:
			return err
		case ran || out.Canceled:
		case attempt < setupAttempts:
			continue
		default:
			return fmt.Errorf("executor: %w (%d tries; exit code %d)", errSandboxSetup, attempt, out.ExitCode)
		}
		break
	}
	ee := &executor.ExitError{Code: out.ExitCode, Signal: out.Signal, OOMKilled: oomKills() > before}
	if out.Signal != 0 {
		ee.Code = 128 + int(out.Signal)
	}
	if out.Canceled || out.TimedOut {
		ee.Err = context.Cause(ctx)
	}
	if ee.Code == 0 && !ee.OOMKilled && ee.Err == nil {
		return nil
	}
	return ee
}

// imageExecutor runs each process in a pod of its own over a fresh overlay
// of the image: as the image's user or Process.User, a non-root one in the
// pod's identity-mapped user namespace; rootless when the runner is root of
// a user namespace of its own (no cgroups then: Limits.Pids becomes a
// non-root user's RLIMIT_NPROC, memory and cpu are not enforced).
type imageExecutor struct {
	dirs     runDirs
	bwrap    string
	self     string // the runner's static binary: pod-init and the user helper
	img      Image
	overlay  string
	rootless bool
}

// newImageExecutor runs processes in img; work holds the runs' overlays.
func newImageExecutor(bwrap, self string, img Image, overlay, work string) *imageExecutor {
	e := &imageExecutor{bwrap: bwrap, self: self, img: img, overlay: overlay, rootless: inUserNamespace()}
	e.dirs.work = work
	return e
}

// Run runs p in a pod of its own, torn down before it returns.
func (e *imageExecutor) Run(ctx context.Context, p executor.Process) (err error) {
	dir, err := e.dirs.next()
	if err != nil {
		return err
	}
	l, err := newLayer(filepath.Join(dir, "layer"), e.img.Lowers(), 0, e.overlay)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, l.close()) }()
	iso := &imageIsolation{bwrap: e.bwrap, img: e.img, self: e.self, layer: l, rootless: e.rootless}
	u, err := resolveUser(iso.root(), cmp.Or(p.User, e.img.User))
	if err != nil {
		return err
	}
	if err := iso.prepareRoot(u); err != nil {
		return err
	}
	mask, err := confine.WriteMaskFile(dir)
	if err != nil {
		return err
	}
	pc := phaseCommand{argv: p.Args, env: imageEnv(e.img, u, p.Env), user: u, cwd: p.Cwd, maskFile: mask}
	networkOf(&pc, p.Network)
	if err := iso.setResolver(pc.network); err != nil {
		return err
	}
	var cg *cgroup
	if e.rootless {
		if p.Limits.Pids > 0 && !u.root() {
			pc.nproc = p.Limits.Pids
		}
	} else {
		cg, _ = newCgroup(cgroupRoot, e.dirs.cgroupName(dir), limitsOf(p.Limits))
	}
	stderr, err := newCappedFile(filepath.Join(dir, "pod-bwrap.log"), 64<<10)
	if err != nil {
		_ = cg.remove()
		return err
	}
	defer stderr.Close()
	if _, err := iso.startPod(mountsOf(p.Mounts), mask, cg, !u.root(), stderr); err != nil {
		_ = cg.remove()
		return fmt.Errorf("%w: %s", err, lastLine(filepath.Join(dir, "pod-bwrap.log")))
	}
	// The pod's stop removes its cgroup: its OOM kills are read before.
	runErr := execute(ctx, iso, pc, nil, p, cg.oomKills)
	return errors.Join(runErr, iso.stopPod())
}

// hostExecutor runs each process in a bubblewrap sandbox over the host's
// /usr, /bin and /lib (the development mode --isolation=bwrap-host): root
// of no user namespace, no capability, its own PID, IPC, UTS and network
// namespaces, the process's mounts, a cgroup for its limits.
type hostExecutor struct {
	dirs  runDirs
	bwrap string
}

func newHostExecutor(bwrap, work string) *hostExecutor {
	e := &hostExecutor{bwrap: bwrap}
	e.dirs.work = work
	return e
}

// Run runs p in a sandbox of its own; Cwd "" is /.
func (e *hostExecutor) Run(ctx context.Context, p executor.Process) error {
	if p.User != "" {
		return fmt.Errorf("executor: the host-rootfs sandbox runs as its root only, not user %q", p.User)
	}
	dir, err := e.dirs.next()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	mask, err := confine.WriteMaskFile(dir)
	if err != nil {
		return err
	}
	etc := filepath.Join(dir, "etc")
	if err := writeEtcStubs(etc); err != nil {
		return err
	}
	pc := phaseCommand{argv: p.Args, env: p.Env, mounts: mountsOf(p.Mounts), cwd: cmp.Or(p.Cwd, "/"), etcDir: etc, maskFile: mask}
	networkOf(&pc, p.Network)
	cg, _ := newCgroup(cgroupRoot, e.dirs.cgroupName(dir), teardownLimits(p.Limits))
	defer func() { _ = cg.remove() }()
	return execute(ctx, bwrapIsolation{path: e.bwrap}, pc, cg, p, cg.oomKills)
}

// processExecutor runs each process as a plain child of the runner
// (--isolation=process, no sandbox): the runner's user and network, the
// host's paths (no mounts), a cgroup for its limits, its process group
// killed when it ends.
type processExecutor struct{ dirs runDirs }

func newProcessExecutor(work string) *processExecutor {
	e := &processExecutor{}
	e.dirs.work = work
	return e
}

// Run runs p on the host; Cwd is a host path ("" = /).
func (e *processExecutor) Run(ctx context.Context, p executor.Process) error {
	switch {
	case len(p.Mounts) > 0:
		return errors.New("executor: a plain process sees the host's paths: it has no mounts")
	case p.User != "":
		return fmt.Errorf("executor: a plain process runs as the runner's user, not %q", p.User)
	}
	dir, err := e.dirs.next()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cg, _ := newCgroup(cgroupRoot, e.dirs.cgroupName(dir), teardownLimits(p.Limits))
	defer func() { _ = cg.remove() }()
	pc := phaseCommand{argv: p.Args, env: p.Env, workDir: cmp.Or(p.Cwd, "/")}
	return execute(ctx, processIsolation{}, pc, cg, p, cg.oomKills)
}

// containerExecutor runs each process in the container the runner runs in
// (the Fargate in-container mode, --isolation=container): the container is
// the sandbox, so there are no mounts and no network namespace (the task's
// security group governs egress); its cgroup is the container's (the task
// size), whose OOM kills are counted. User "" is the unprivileged agent uid
// (Limits.Pids its RLIMIT_NPROC), "root" the verifier's root without the
// dangerous capabilities. Every process of the agent uid is killed when
// Run returns.
type containerExecutor struct{ iso *containerIsolation }

// Run runs p in the container; Cwd is a path of the container ("" = /).
func (e *containerExecutor) Run(ctx context.Context, p executor.Process) error {
	pc := phaseCommand{argv: p.Args, env: p.Env, workDir: cmp.Or(p.Cwd, "/")}
	switch p.User {
	case "":
		pc.role, pc.nproc = roleAgent, max(p.Limits.Pids, 0)
	case "root", "0":
		pc.role = roleVerifier
	default:
		return fmt.Errorf("executor: the container runs the agent uid (User \"\") or root, not %q", p.User)
	}
	if len(p.Mounts) > 0 {
		return errors.New("executor: the container is the sandbox: its processes see its own paths, it has no mounts")
	}
	oom := func() int { n, _ := containerOOMKills(cgroupRoot); return n }
	err := execute(ctx, e.iso, pc, nil, p, oom)
	if pc.role == roleAgent {
		err = errors.Join(err, e.iso.endAgent())
	}
	reapOrphans()
	return err
}

package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Default ids of the agent's user under container isolation: outside the
// ranges useradd hands out (system users < 1000, users 1000–60000), so no
// file of the image belongs to it.
const (
	DefaultAgentUID = 61000
	DefaultAgentGID = 61000
)

// Fixed paths of container isolation, besides Harbor's (AppMount …).
const (
	containerLogs      = "/logs"
	containerAgentHome = "/home/gauntlet-agent"
	containerRootHome  = "/root"
	containerTmp       = "/tmp"
)

// Internal subcommands of the runner binary that container isolation runs.
const (
	// execPhaseCommand sets no-new-privileges (and, for a root phase,
	// drops the dangerous capabilities from the bounding set), then execs
	// the rest of its arguments.
	execPhaseCommand = "exec-phase"
	// killAllCommand, started under the agent's uid, sends SIGKILL to
	// every process of that uid: kill(-1) is atomic against fork.
	killAllCommand = "kill-all"
)

// containerIsolation runs the phases in the container the runner runs in (an
// ECS Fargate task, where bubblewrap cannot get the namespaces it needs).
// The container is the sandbox, so the phases see the real /app, /logs,
// /tests and /solution. The runner is root; the install step and the agent
// run under an unprivileged uid and gid of their own with no supplementary
// groups, no-new-privileges and a session of their own; every process of
// that uid is killed when the agent phase ends. The verifier runs as root
// (tasks' tests install packages) without CAP_SYS_PTRACE and friends.
type containerIsolation struct {
	self     string // this binary: the exec and kill helpers
	uid, gid uint32
}

func newContainerIsolation(uid, gid int) (*containerIsolation, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("container isolation needs the runner to run as root (the ECS task definition sets user 0)")
	}
	if uid <= 0 || gid <= 0 {
		return nil, fmt.Errorf("container isolation: agent uid %d and gid %d must be > 0", uid, gid)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("container isolation: find own binary: %w", err)
	}
	if info, err := os.Stat(self); err != nil || info.Mode().Perm()&0o005 != 0o005 {
		return nil, fmt.Errorf("container isolation: the runner binary %s must be readable and executable by every uid (mode 0755)", self)
	}
	// Orphans of the phases are re-parented to the runner, which reaps them
	// between phases (it is the container's PID 1 in ECS anyway).
	if err := prctl(prSetChildSubreaper, 1); err != nil {
		return nil, fmt.Errorf("container isolation: become child subreaper: %w", err)
	}
	return &containerIsolation{self: self, uid: uint32(uid), gid: uint32(gid)}, nil
}

func (*containerIsolation) name() string { return IsolationContainer }

// traits: the container is Harbor's shared container, with the task's
// one network.
func (*containerIsolation) traits() isolationTraits { return isolationTraits{lingers: true} }

func (c *containerIsolation) layouts(_, _, agentsDir string) (host, seen layout) {
	l := layout{
		App: AppMount, AgentLogs: AgentLogMount, VerifierLogs: VerifierLogMount, Artifacts: ArtifactsMount,
		Tests: TestsMount, Solution: SolutionMount, Agents: agentsDir,
		Tmp: containerAgentHome, VerifierHome: containerRootHome, VerifierTmp: containerTmp,
	}
	return l, l
}

// launch starts a phase in the container. An agent phase's background
// processes keep running when it ends, as after `docker exec` in Harbor's
// shared container: a server the agent started serves the verifier. Its
// output is drained until they close it (a process killed by SIGPIPE at
// the phase's end would not serve anything). Every process of the agent's
// uid goes at the end of the trial (endAgent).
func (c *containerIsolation) launch(pc phaseCommand, cg *cgroup, stdout, stderr io.Writer) (launched, error) {
	cmd, err := c.command(pc)
	if err != nil {
		return launched{}, err
	}
	prepareProcess(cmd)
	cg.wrap(cmd)
	out, err := newDrainedOutput(stdout, stderr)
	if err != nil {
		return launched{}, err
	}
	cmd.Stdout, cmd.Stderr = out.stdoutW, out.stderrW
	err = cmd.Start()
	out.started()
	if err != nil {
		out.wait()
		return launched{}, fmt.Errorf("start: %w", err)
	}
	return launched{cmd: cmd, release: out.wait, lingers: pc.role == roleAgent || pc.role == roleEnvironment}, nil
}

func (c *containerIsolation) command(pc phaseCommand) (*exec.Cmd, error) {
	args := []string{execPhaseCommand}
	attr := &syscall.SysProcAttr{Setsid: true}
	if pc.role == roleAgent {
		attr.Credential = &syscall.Credential{Uid: c.uid, Gid: c.gid, Groups: []uint32{}}
		if pc.nproc > 0 {
			args = append(args, "--nproc", strconv.Itoa(pc.nproc))
		}
	} else {
		args = append(args, "--drop-caps")
	}
	if len(pc.argv) > 0 {
		args = append(append(args, "--"), pc.argv...)
	} else {
		args = append(args, "--", "bash", "-c", pc.script)
	}
	cmd := exec.Command(c.self, args...)
	cmd.Dir = pc.workDir
	cmd.Env = pc.env
	cmd.SysProcAttr = attr
	return cmd, nil
}

// prepareAgent lays out the container for the agent phase: no /tests, a
// /solution only for a harness that mounts it (root-owned, read-only to the
// agent), /app, /logs/agent and the agent's home owned by the agent's uid,
// /logs and /logs/verifier root's.
func (c *containerIsolation) prepareAgent(l layout, taskDir string, withSolution bool) error {
	for _, dir := range []string{l.Tests, l.Solution, l.AgentLogs, l.VerifierLogs, l.Artifacts} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("container: clear %s: %w", dir, err)
		}
	}
	for _, dir := range []string{containerLogs, l.AgentLogs, l.VerifierLogs, l.Artifacts, l.App, l.Tmp, l.VerifierHome} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("container: create %s: %w", dir, err)
		}
	}
	for dir, mode := range map[string]fs.FileMode{containerLogs: 0o755, l.VerifierLogs: 0o755, l.Tmp: 0o700, l.VerifierHome: 0o700} {
		if err := os.Chown(dir, 0, 0); err != nil {
			return fmt.Errorf("container: chown %s: %w", dir, err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("container: chmod %s: %w", dir, err)
		}
	}
	if withSolution {
		if err := installReadOnly(filepath.Join(taskDir, "solution"), l.Solution); err != nil {
			return err
		}
	}
	return nil
}

// serveStaticBin makes the platform's static binaries (dir, the runner's
// --static-bin-dir: in ECS the shared volume the init container filled)
// appear at StaticBinMount, where harnesses run them, as a symlink owned by
// root in a root-owned directory the agent cannot change. An image that
// holds a StaticBinMount of its own is refused: the platform's binaries,
// not the image's, must be what runs.
func (c *containerIsolation) serveStaticBin(dir string) error {
	if dir == "" || filepath.Clean(dir) == StaticBinMount {
		return nil
	}
	if target, err := os.Readlink(StaticBinMount); err == nil && target == dir {
		return nil // an earlier trial in this container served it
	}
	if _, err := os.Lstat(StaticBinMount); err == nil {
		return fmt.Errorf("container: the image already holds %s; the platform's static binaries (%s) cannot be served there", StaticBinMount, dir)
	}
	parent := filepath.Dir(StaticBinMount)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("container: create %s: %w", parent, err)
	}
	if err := os.Symlink(dir, StaticBinMount); err != nil {
		return fmt.Errorf("container: serve %s at %s: %w", dir, StaticBinMount, err)
	}
	return nil
}

// handOver gives the agent's uid the trees it works in (after the runner
// seeded /app and wrote the instruction). Symlinks are changed, never followed.
func (c *containerIsolation) handOver(dirs ...string) error {
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, int(c.uid), int(c.gid))
		})
		if err != nil {
			return fmt.Errorf("container: give %s to the agent uid: %w", dir, err)
		}
	}
	return nil
}

// endAgent kills every process of the agent's uid, checks that none is
// left and reaps the orphans re-parented to the runner: nothing of the
// agent survives the trial.
func (c *containerIsolation) endAgent() error {
	var left []int
	for range 5 {
		kill := exec.Command(c.self, killAllCommand)
		kill.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: c.uid, Gid: c.gid, Groups: []uint32{}}}
		kill.Env = []string{}
		if out, err := kill.CombinedOutput(); err != nil {
			return fmt.Errorf("container: kill the agent uid's processes: %w: %s", err, strings.TrimSpace(string(out)))
		}
		reapOrphans()
		if left = processesOf(c.uid); len(left) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("container: processes %v of the agent uid survived SIGKILL", left)
}

// prepareVerifier puts the task's tests at /tests, root-owned and read-only
// to everyone else, right before the verifier (as Harbor uploads them): a
// process the agent left running can read them from then on, as in
// Harbor's shared container, but neither change them nor write the
// verifier's logs (root's).
func (c *containerIsolation) prepareVerifier(l layout, taskDir string) error {
	if err := os.RemoveAll(l.Tests); err != nil {
		return fmt.Errorf("container: clear %s: %w", l.Tests, err)
	}
	return installReadOnly(filepath.Join(taskDir, "tests"), l.Tests)
}

// installReadOnly copies a task directory to dst owned by root, with no
// group or other write permission.
func installReadOnly(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := copyTree(src, dst, copyOptions{keepSymlinks: true}); err != nil {
		return fmt.Errorf("container: install %s: %w", dst, err)
	}
	return filepath.WalkDir(dst, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, 0, 0); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(path, info.Mode().Perm()&^0o022|dirSearch(d))
	})
}

// dirSearch keeps directories traversable for everyone.
func dirSearch(d fs.DirEntry) fs.FileMode {
	if d.IsDir() {
		return 0o555
	}
	return 0
}

// processesOf lists the live (not zombie) processes whose real or effective
// uid is uid.
func processesOf(uid uint32) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		if procOwnedBy(string(status), uid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func procOwnedBy(status string, uid uint32) bool {
	want := strconv.FormatUint(uint64(uid), 10)
	owned, zombie := false, false
	for _, line := range strings.Split(status, "\n") {
		key, value, _ := strings.Cut(line, ":")
		fields := strings.Fields(value)
		switch key {
		case "State":
			zombie = len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
		case "Uid":
			owned = len(fields) >= 2 && (fields[0] == want || fields[1] == want)
		}
	}
	return owned && !zombie
}

// reapOrphans collects every exited child (orphans re-parented to the
// runner); call it only while no phase's exec.Cmd is being waited for.
func reapOrphans() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

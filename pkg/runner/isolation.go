package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Isolation modes for Options.Isolation.
const (
	// IsolationBwrap runs every phase in its own bubblewrap sandbox.
	IsolationBwrap = "bwrap"
	// IsolationProcess runs every phase as a plain child process on the host:
	// no isolation at all, an explicit opt-in for machines without bubblewrap.
	IsolationProcess = "process"
)

// In-sandbox paths of the bubblewrap layout (Harbor's conventions).
const (
	AppMount          = "/app"
	AgentLogMount     = "/logs/agent"
	VerifierLogMount  = "/logs/verifier"
	TestsMount        = "/tests"
	SolutionMount     = "/solution"
	AgentsMount       = "/agent"
	InstructionPath   = AgentLogMount + "/instruction.md"
	UsagePath         = AgentLogMount + "/" + usageFile
	sandboxTmp        = "/tmp"
	sandboxHostname   = "sandbox"
	sandboxPath       = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	defaultBwrapPath  = "bwrap"
	sandboxLocale     = "C.UTF-8"
	sandboxTerminal   = "dumb"
	processWarningMsg = "sandbox isolation is OFF (--isolation=process): the agent runs as a plain process on this host with the runner's user rights and full network access"
)

// systemDirs are bound read-only into every bubblewrap sandbox; a directory
// that is a symlink on the host (e.g. /bin → usr/bin) becomes the same symlink.
var systemDirs = []string{"/usr", "/etc", "/bin", "/lib", "/lib64", "/sbin"}

// mount is one host directory made visible to a phase.
type mount struct {
	host     string
	target   string // in-sandbox path (bubblewrap layout)
	writable bool
}

// phaseCommand is what one phase runs, independent of the isolation.
type phaseCommand struct {
	script  string   // shell run with bash -c
	env     []string // complete environment, KEY=VALUE
	mounts  []mount
	tmpDir  string // host dir bound at /tmp; "" = a fresh tmpfs
	workDir string // host path of the working directory (process isolation)
	network bool
}

// isolation turns a phase command into a process to start.
type isolation interface {
	command(pc phaseCommand) (*exec.Cmd, error)
	// paths gives the paths the phase's scripts see for the work dir's parts.
	paths(hostPaths layout) layout
}

// layout names the directories a phase sees: in-sandbox paths under
// bubblewrap, host paths under process isolation.
type layout struct {
	App, AgentLogs, VerifierLogs, Tests, Solution, Agents, Tmp string
}

func newIsolation(mode, bwrapPath string) (isolation, error) {
	switch mode {
	case "", IsolationBwrap:
		if bwrapPath == "" {
			bwrapPath = defaultBwrapPath
		}
		path, err := exec.LookPath(bwrapPath)
		if err != nil {
			return nil, fmt.Errorf("bubblewrap not found at %q (install it: apt-get install bubblewrap; or opt out of isolation with --isolation=process): %w", bwrapPath, err)
		}
		return bwrapIsolation{path: path}, nil
	case IsolationProcess:
		return processIsolation{}, nil
	}
	return nil, fmt.Errorf("isolation %q: want %q or %q", mode, IsolationBwrap, IsolationProcess)
}

type bwrapIsolation struct{ path string }

func (bwrapIsolation) paths(host layout) layout {
	l := layout{App: AppMount, AgentLogs: AgentLogMount, VerifierLogs: VerifierLogMount,
		Tests: TestsMount, Solution: SolutionMount, Tmp: sandboxTmp}
	if host.Agents != "" {
		l.Agents = AgentsMount
	}
	return l
}

func (b bwrapIsolation) command(pc phaseCommand) (*exec.Cmd, error) {
	args, err := bwrapArgs(pc)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.path, args...)
	// bwrap hands its own environment to the sandboxed command; secrets go
	// through the environment, never argv, which any local user can read.
	cmd.Env = pc.env
	return cmd, nil
}

// bwrapArgs builds the sandbox: a tmpfs root (a read-only bind of / could not
// gain the /app, /logs… mount points) with the system directories bound
// read-only, private /dev, /proc and /tmp, the phase's mounts, new PID, IPC
// and UTS namespaces (and network unless allowed), no capabilities.
func bwrapArgs(pc phaseCommand) ([]string, error) {
	args := []string{"--tmpfs", "/"}
	for _, dir := range systemDirs {
		info, err := os.Lstat(dir)
		if err != nil {
			continue // e.g. no /lib64 on this architecture
		}
		if info.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(dir)
			if err != nil {
				return nil, fmt.Errorf("read symlink %s: %w", dir, err)
			}
			args = append(args, "--symlink", target, dir)
			continue
		}
		args = append(args, "--ro-bind", dir, dir)
	}
	args = append(args, "--dev", "/dev", "--proc", "/proc")
	if pc.tmpDir != "" {
		args = append(args, "--bind", pc.tmpDir, sandboxTmp)
	} else {
		args = append(args, "--tmpfs", sandboxTmp)
	}
	for _, m := range pc.mounts {
		flag := "--ro-bind"
		if m.writable {
			flag = "--bind"
		}
		args = append(args, flag, m.host, m.target)
	}
	args = append(args,
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", sandboxHostname,
		"--die-with-parent", "--new-session", "--cap-drop", "ALL")
	if !pc.network {
		args = append(args, "--unshare-net")
	}
	args = append(args, "--chdir", AppMount, "bash", "-c", pc.script)
	return args, nil
}

type processIsolation struct{}

func (processIsolation) paths(host layout) layout { return host }

func (processIsolation) command(pc phaseCommand) (*exec.Cmd, error) {
	cmd := exec.Command("bash", "-c", pc.script)
	cmd.Dir = pc.workDir
	cmd.Env = pc.env
	return cmd, nil
}

// prepareProcess puts the phase process in its own process group, so a
// timeout kills everything it started, and makes the kernel kill it if the
// runner dies.
func prepareProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// hostLayout is the work dir's layout on the host.
func hostLayout(workDir, taskDir, agentsDir string) layout {
	return layout{
		App:          filepath.Join(workDir, "app"),
		AgentLogs:    filepath.Join(workDir, "logs", "agent"),
		VerifierLogs: filepath.Join(workDir, "logs", "verifier"),
		Tests:        filepath.Join(taskDir, "tests"),
		Solution:     filepath.Join(taskDir, "solution"),
		Agents:       agentsDir,
		Tmp:          filepath.Join(workDir, "agent-tmp"),
	}
}

package runner

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/gauntlet-bench/gauntlet/pkg/confine"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Isolation modes for Options.Isolation: the sandbox protocol's
// (sandbox.IsolationBwrap …), named here for the runner's own code.
const (
	IsolationBwrap     = sandbox.IsolationBwrap
	IsolationHostBwrap = sandbox.IsolationHostBwrap
	IsolationProcess   = sandbox.IsolationProcess
	// IsolationContainer: the phases see the container's real /app, /logs,
	// /tests and /solution, and the agent runs under a uid of its own (see
	// containerIsolation).
	IsolationContainer = sandbox.IsolationContainer
)

// In-sandbox paths of the bubblewrap layout (Harbor's conventions).
const (
	AppMount             = "/app"
	AgentLogMount        = harness.AgentLogDir
	VerifierLogMount     = "/logs/verifier"
	TestsMount           = "/tests"
	SolutionMount        = "/solution"
	AgentsMount          = "/agent"
	sandboxTmp           = "/tmp"
	sandboxHostname      = "sandbox"
	sandboxPath          = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	defaultBwrapPath     = "bwrap"
	sandboxLocale        = "C.UTF-8"
	sandboxTerminal      = "dumb"
	hostRootfsWarningMsg = "sandbox root is the HOST's /usr, /bin, /lib (--isolation=bwrap-host, a development opt-in): the task's image is not used, so the agent and verifier do not see the task's environment"
	processWarningMsg    = "sandbox isolation is OFF (--isolation=process): the agent runs as a plain process on this host with the runner's user rights and full network access"
)

// systemDirs are bound read-only into every host-rootfs bubblewrap sandbox; a
// directory that is a symlink on the host (e.g. /bin → usr/bin) becomes the
// same symlink. /etc is not among them: see hostEtcFiles.
var systemDirs = []string{"/usr", "/bin", "/lib", "/lib64", "/sbin"}

// hostEtcFiles are the only parts of the host's /etc a host-rootfs sandbox
// sees (read-only, where they exist): what the dynamic loader, TLS and the
// Debian alternatives need. passwd and group are stubs the runner writes;
// resolv.conf is bound only when the phase has the network. Never
// /etc/shadow or any other host configuration.
var hostEtcFiles = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/ssl/certs",
	"/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/nsswitch.conf", "/etc/localtime",
	"/etc/mime.types", "/etc/protocols", "/etc/services", "/etc/python3", "/etc/python3.11",
}

// mount is one host directory (or file) made visible to a phase.
type mount struct {
	host     string
	target   string // in-sandbox path (bubblewrap layout)
	writable bool
	file     bool // a file, not a directory (its mount point is a file)
}

// phaseRole says whose phase it is: the agent's (install step and agent)
// or the verifier's.
type phaseRole int

const (
	roleAgent phaseRole = iota
	roleVerifier
	// roleEnvironment: the task's own processes under container
	// isolation ([environment.healthcheck]): root without the dangerous
	// capabilities, as the verifier, but what they start lingers, as
	// after the agent's phases (containerservices.go).
	roleEnvironment
)

// phaseCommand is what one phase runs, independent of the isolation.
type phaseCommand struct {
	role   phaseRole
	script string // shell run with bash -c
	// argv, when set, is run instead of script, without a shell (image
	// isolation: a sidecar service's command, its healthcheck's CMD).
	argv []string
	// cwd is the working directory as the phase sees it in a bubblewrap
	// sandbox ("" = /app; the image's WORKDIR in a pod).
	cwd     string
	env     []string // complete environment, KEY=VALUE
	mounts  []mount
	tmpDir  string // host dir bound at /tmp; "" = a fresh tmpfs
	workDir string // host path of the working directory (process isolation)
	network bool
	// netMode is the phase's effective network mode (netPublic,
	// netAllowlist, netNone) in bubblewrap sandboxes.
	netMode string
	// allowedHosts are an allowlist phase's reachable hosts.
	allowedHosts []string
	// user is who the phase runs as under image isolation.
	user imageUser
	// etcDir holds the passwd and group stubs of a host-rootfs sandbox.
	etcDir string
	// maskFile is the empty file bound over the masked files of /proc
	// (confine.BwrapProcArgs) in bubblewrap sandboxes.
	maskFile string
	// identityUserNS enters the phase into its pod's user namespace, which
	// has the identity map (image isolation, non-root image user).
	identityUserNS bool
	// nproc, when > 0, is the RLIMIT_NPROC of a phase under container
	// isolation (its pids limit, which no cgroup enforces there).
	nproc int
}

// isolation turns a phase command into a process to start.
type isolation interface {
	name() string
	command(pc phaseCommand) (*exec.Cmd, error)
	// layouts gives a trial's directories as the runner finds them (host)
	// and as the phases' scripts see them (seen).
	layouts(workDir, taskDir, agentsDir string) (host, seen layout)
	// traits are what the trial needs to know of the isolation, as data.
	traits() isolationTraits
}

// isolationTraits are an isolation's facts the trial acts on, so that it
// asks them rather than which isolation it has.
type isolationTraits struct {
	// lingers: the trial's environment outlives its phases (a pod, a
	// container: what the agent leaves running runs on into the
	// verifier), so the agent's files are read only once it has ended.
	lingers bool
	// ownNetwork: a phase runs in a network namespace of its own, where
	// it reaches the model gateway through the in-sandbox forwarder.
	ownNetwork bool
	// warning is logged at the trial's start (a development mode).
	warning string
}

// layout names the directories of a trial: in-sandbox paths under
// bubblewrap, host paths under process isolation, the container's own
// paths under container isolation. Tmp is the agent's HOME and TMPDIR.
type layout struct {
	App, AgentLogs, VerifierLogs, Tests, Solution, Agents, Tmp string
	VerifierHome, VerifierTmp                                  string
	// Artifacts is Harbor's /logs/artifacts ("" = not provided).
	Artifacts string
}

func newIsolation(opts Options) (isolation, error) {
	mode, bwrapPath := opts.Isolation, opts.BwrapPath
	switch mode {
	case "", IsolationBwrap, IsolationHostBwrap:
		if bwrapPath == "" {
			bwrapPath = defaultBwrapPath
		}
		path, err := exec.LookPath(bwrapPath)
		if err != nil {
			return nil, fmt.Errorf("bubblewrap not found at %q (install it: apt-get install bubblewrap; or opt out of isolation with --isolation=process): %w", bwrapPath, err)
		}
		if mode == IsolationHostBwrap {
			return bwrapIsolation{path: path}, nil
		}
		return newImageIsolation(path, opts)
	case IsolationProcess:
		return processIsolation{}, nil
	case IsolationContainer:
		uid, gid := opts.AgentUID, opts.AgentGID
		if uid == 0 {
			uid = DefaultAgentUID
		}
		if gid == 0 {
			gid = DefaultAgentGID
		}
		return newContainerIsolation(uid, gid)
	}
	return nil, fmt.Errorf("isolation %q: want %q, %q, %q or %q", mode, IsolationBwrap, IsolationHostBwrap, IsolationContainer, IsolationProcess)
}

type bwrapIsolation struct{ path string }

func (bwrapIsolation) name() string { return IsolationHostBwrap }

// traits: each host-rootfs phase is a sandbox of its own, with its own
// network namespace.
func (bwrapIsolation) traits() isolationTraits {
	return isolationTraits{ownNetwork: true, warning: hostRootfsWarningMsg}
}

func (bwrapIsolation) layouts(workDir, taskDir, agentsDir string) (host, seen layout) {
	host = hostLayout(workDir, taskDir, agentsDir)
	seen = layout{App: AppMount, AgentLogs: AgentLogMount, VerifierLogs: VerifierLogMount,
		Tests: TestsMount, Solution: SolutionMount, Tmp: sandboxTmp, VerifierHome: sandboxTmp, VerifierTmp: sandboxTmp}
	if agentsDir != "" {
		seen.Agents = AgentsMount
	}
	return host, seen
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
// read-only, private /dev, /proc (masked and read-only where runc makes it
// so: the phase runs as uid 0, which may write most of /proc/sys even
// without a capability) and /tmp, the phase's mounts, new PID, IPC and UTS
// namespaces (and network unless allowed), no capabilities.
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
	for _, f := range hostEtcFiles {
		args = append(args, "--ro-bind-try", f, f)
	}
	if pc.etcDir != "" {
		args = append(args, "--ro-bind", filepath.Join(pc.etcDir, "passwd"), "/etc/passwd",
			"--ro-bind", filepath.Join(pc.etcDir, "group"), "/etc/group",
			"--ro-bind", filepath.Join(pc.etcDir, "hosts"), "/etc/hosts")
		if pc.network {
			args = append(args, "--ro-bind", filepath.Join(pc.etcDir, "resolv.conf"), "/etc/resolv.conf")
		}
	}
	args = append(args, "--dev", "/dev", "--proc", "/proc")
	masks, err := confine.BwrapProcArgs(pc.maskFile)
	if err != nil {
		return nil, err
	}
	args = append(args, masks...)
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
	// The network namespace is always the sandbox's own: public gets
	// slirp4netns in it, never the host's namespace (see launchBwrap).
	args = append(args,
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--hostname", sandboxHostname,
		"--die-with-parent", "--new-session", "--cap-drop", "ALL", "--info-fd", "3", "--block-fd", "4")
	args = append(args, "--chdir", cmp.Or(pc.cwd, AppMount))
	if len(pc.argv) > 0 {
		return append(append(args, "bash", "-c", hostStartedMarker+`exec "$@"`, "bash"), pc.argv...), nil
	}
	return append(args, "bash", "-c", hostStartedMarker+pc.script), nil
}

// hostStartedMarker opens a host-rootfs phase's script: the host's bash
// tells the runner the sandbox is set up (see startedFD), and closes the
// fd so nothing of the phase holds it.
var hostStartedMarker = fmt.Sprintf("printf 1 >&%[1]d; exec %[1]d>&-; ", startedFD)

// launch starts a host-rootfs phase like an image phase: cgroups and the
// network attached before the command runs.
func (b bwrapIsolation) launch(pc phaseCommand, cg *cgroup, stdout, stderr io.Writer) (launched, error) {
	args, err := bwrapArgs(pc)
	if err != nil {
		return launched{}, err
	}
	slirp, _ := exec.LookPath("slirp4netns")
	return launchBwrap(b.path, args, slirp, pc, cg, stdout, stderr)
}

// launchBwrap starts a host-rootfs phase's bwrap with args (which hold --info-fd 3 --block-fd 4,
// --unshare-net, and have the sandbox write to startedFD) and the sandbox's
// seccomp filter (seccomp.go), joins its processes to cg, gives the
// sandbox's network namespace its network mode (slirp4netns for public,
// the egress proxy for allowlist, nothing for no-network) and only then
// lets the phase's command run.
func launchBwrap(bwrap string, args []string, slirp string, pc phaseCommand, cg *cgroup, stdout, stderr io.Writer) (launched, error) {
	var pipes [6]*os.File // info, block and started: read end, write end
	for i := 0; i < len(pipes); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(pipes[:i]...)
			return launched{}, fmt.Errorf("sandbox: %w", err)
		}
		pipes[i], pipes[i+1] = r, w
	}
	infoR, infoW, blockR, blockW, startedR, startedW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5]
	defer infoR.Close()
	defer blockW.Close()
	filter, err := seccompFile()
	if err != nil {
		closeFiles(infoW, blockR, startedR, startedW)
		return launched{}, fmt.Errorf("sandbox: %w", err)
	}
	defer filter.Close()
	// Fd 5 is the seccomp filter bwrap installs before the command.
	cmd := exec.Command(bwrap, append([]string{"--seccomp", "5"}, args...)...)
	cmd.Env = pc.env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{infoW, blockR, filter, startedW}
	cmd.WaitDelay = waitDelay
	prepareProcess(cmd)
	err = cmd.Start()
	closeFiles(infoW, blockR, startedW)
	if err != nil {
		startedR.Close()
		return launched{}, fmt.Errorf("start bwrap: %w", err)
	}
	l := launched{cmd: cmd, release: func() {}, ran: startedByte(startedR)}
	fail := func(err error) (launched, error) {
		killGroup(cmd.Process.Pid)
		l.release()
		_ = cmd.Wait()
		startedR.Close()
		return launched{}, err
	}
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(io.LimitReader(infoR, 4096)).Decode(&info); err != nil || info.ChildPID <= 0 {
		return fail(fmt.Errorf("sandbox: %w: bwrap reported no sandbox pid (%v)", errSandboxSetup, err))
	}
	if err := cg.join(cmd.Process.Pid, info.ChildPID); err != nil {
		return fail(err)
	}
	switch pc.netMode {
	case netPublic:
		stop, err := startSlirp(slirp, info.ChildPID)
		if err != nil {
			return fail(err)
		}
		l.release = stop
	case netAllowlist:
		proxy, err := startEgressProxy(info.ChildPID, pc.allowedHosts)
		if err != nil {
			return fail(err)
		}
		l.release = proxy.stop
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			// The sandbox is gone already: bwrap failed in its setup
			// after reporting the pid. Its exit (and the missing started
			// byte) says so once the phase is waited for.
			return l, nil
		}
		return fail(fmt.Errorf("sandbox: release the phase: %w", err))
	}
	return l, nil
}

type processIsolation struct{}

func (processIsolation) name() string { return IsolationProcess }

// traits: a plain phase's process group ends with it; it has the
// runner's network.
func (processIsolation) traits() isolationTraits {
	return isolationTraits{warning: processWarningMsg}
}

func (processIsolation) layouts(workDir, taskDir, agentsDir string) (host, seen layout) {
	host = hostLayout(workDir, taskDir, agentsDir)
	return host, host
}

func (processIsolation) command(pc phaseCommand) (*exec.Cmd, error) {
	cmd := exec.Command("bash", "-c", pc.script)
	if len(pc.argv) > 0 {
		// Through bash, which looks the program up on the phase's PATH.
		cmd = exec.Command("bash", append([]string{"-c", `exec "$@"`, "bash"}, pc.argv...)...)
	}
	cmd.Dir = pc.workDir
	cmd.Env = pc.env
	return cmd, nil
}

// prepareProcess puts the phase process in its own process group (or keeps
// the session of its own the isolation asked for, which is one too), so a
// timeout kills everything it started, and makes the kernel kill it if the
// runner dies.
func prepareProcess(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = !cmd.SysProcAttr.Setsid
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
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
		VerifierHome: filepath.Join(workDir, "agent-tmp"),
		VerifierTmp:  filepath.Join(workDir, "agent-tmp"),
	}
}

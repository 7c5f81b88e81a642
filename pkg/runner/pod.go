package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gauntlet-bench/gauntlet/pkg/confine"
)

// A pod is an image trial's one running environment, as Harbor's container
// is: bubblewrap over the attempt's overlay with the trial's mounts, its
// own PID, IPC, UTS, network and cgroup namespaces and one cgroup, started
// once, with the runner's pod-init as its pid 1 (podinit.go). Every phase
// (install, agent, verifier) is a process entered into it with nsenter, as
// `docker exec` enters a container: it shares the pod's filesystem, process
// tree, loopback and limits, so a server the agent leaves running in the
// background still serves the verifier. Only a timeout kills a phase's own
// process group; the pod, and whatever still runs in it, goes at the end of
// the trial (pod.stop). One container today; the shape (a spec holding the
// pod's mounts and limits, a start, phases entered into it, one network
// namespace the pod owns, a stop) is what a pod of several containers would
// keep, each container its own spec.

// podReadyTimeout bounds how long the pod's bwrap may take from its start
// to its pid 1 running (bwrap's setup; the machine may be loaded).
const podReadyTimeout = time.Minute

// podStopTimeout bounds the wait for the pod's processes to be gone once
// its pid 1 is killed (the kernel kills the rest of its PID namespace).
const podStopTimeout = 10 * time.Second

// podSpec is what a pod is started with.
type podSpec struct {
	bwrap    string
	root     string  // the merged overlay: the pod's /
	mounts   []mount // the trial's mounts, fixed for the pod's life
	maskFile string  // confine's empty file for /proc's masked files
	self     string  // the runner's static binary: pod-init and the user helper
	// userNS starts the pod in a user namespace of its own with the
	// identity map: a phase of a non-root image user enters it.
	userNS bool
	cg     *cgroup   // the pod's limits (nil: none)
	stderr io.Writer // bwrap's own messages
	// netns, when set, is the network namespace the pod joins instead of
	// one of its own (/proc/<pid>/ns/net of the trial's main pod): a
	// sidecar service's pod (services.go), reached by name on the shared
	// loopback. Its network mode is the main pod's.
	netns string
}

// pod is a started pod.
type pod struct {
	spec    podSpec
	nsenter string
	slirp   string
	bwrap   *exec.Cmd
	// pid is the pod's pid 1 as the runner sees it; pidfd refers to it
	// without the risk of a reused pid.
	pid    int
	pidfd  int
	exited chan struct{}
	net    podNetwork
	once   sync.Once
}

// podNetwork is the network mode the pod's namespace has now.
type podNetwork struct {
	set   bool
	mode  string
	hosts []string
	stop  func()
}

// podArgs is the pod's bubblewrap command line (after --seccomp 5): fds 3
// and 4 are bwrap's info and block fds, 6 pod-init's ready fd.
func podArgs(s podSpec) ([]string, error) {
	args := []string{"--bind", s.root, "/", "--dev", "/dev", "--proc", "/proc"}
	// runc's masked and read-only paths: as root of the host's user
	// namespace a phase could otherwise rewrite the host's kernel settings
	// (kernel.core_pattern: a program of its choosing run as host root at
	// the next crash).
	masks, err := confine.BwrapProcArgs(s.maskFile)
	if err != nil {
		return nil, fmt.Errorf("image sandbox: %w", err)
	}
	args = append(args, masks...)
	for _, m := range s.mounts {
		flag := "--ro-bind"
		if m.writable {
			flag = "--bind"
		}
		args = append(args, flag, m.host, m.target)
	}
	args = append(args, "--ro-bind", s.self, userHelperPath,
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--hostname", sandboxHostname, "--die-with-parent", "--new-session",
		// pod-init itself is pid 1, not bwrap's reaper: a process of the
		// pod can then signal neither (`kill -9 -1` spares pid 1), as in a
		// container, and the pod lives until the runner ends it.
		"--as-pid-1",
		"--info-fd", "3", "--block-fd", "4", "--cap-drop", "ALL", "--chdir", "/",
		"--", userHelperPath, podInitCommand, "--ready-fd", strconv.Itoa(startedFD))
	if s.netns == "" {
		args = append([]string{"--unshare-net"}, args...)
	}
	return args, nil
}

// startPod starts the pod, trying again (up to setupAttempts) when bwrap
// fails in its own setup, as a phase is.
func startPod(s podSpec) (*pod, []string, error) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, nil, fmt.Errorf("image sandbox: util-linux's nsenter is not installed (apt-get install util-linux): %w", err)
	}
	slirp, _ := exec.LookPath("slirp4netns")
	var failures []string
	for attempt := 1; ; attempt++ {
		p := &pod{spec: s, nsenter: nsenter, slirp: slirp, pidfd: -1, exited: make(chan struct{})}
		err := p.start()
		if err == nil {
			return p, failures, nil
		}
		if !errors.Is(err, errSandboxSetup) {
			return nil, failures, err
		}
		if attempt == setupAttempts {
			return nil, failures, fmt.Errorf("image sandbox: %w (%d tries; the last: %v)", errSandboxSetup, attempt, err)
		}
		failures = append(failures, err.Error())
	}
}

// start runs bwrap, which sets the sandbox up and stops before pod-init
// (its block fd) while the runner moves it into the pod's cgroup and
// shields it from the OOM killer, then waits for pod-init to report.
func (p *pod) start() error {
	var pipes [6]*os.File // info, block and ready: read end, write end
	for i := 0; i < len(pipes); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(pipes[:i]...)
			return fmt.Errorf("image sandbox: %w", err)
		}
		pipes[i], pipes[i+1] = r, w
	}
	infoR, infoW, blockR, blockW, readyR, readyW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5]
	defer closeFiles(infoR, blockW, readyR)
	filter, err := seccompFile()
	if err != nil {
		closeFiles(infoW, blockR, readyW)
		return fmt.Errorf("image sandbox: %w", err)
	}
	defer filter.Close()
	args, err := podArgs(p.spec)
	if err != nil {
		closeFiles(infoW, blockR, readyW)
		return err
	}
	cmd := exec.Command(p.spec.bwrap, append([]string{"--seccomp", "5"}, args...)...)
	if p.spec.netns != "" {
		// nsenter joins the network namespace, then execs bwrap (the same
		// process: its fds, cgroup and pid are bwrap's).
		cmd = exec.Command(p.nsenter, append([]string{"--net=" + p.spec.netns, "--", p.spec.bwrap, "--seccomp", "5"}, args...)...)
	}
	cmd.Env = []string{} // pod-init needs none; phases bring their own
	cmd.Stderr = p.spec.stderr
	cmd.ExtraFiles = []*os.File{infoW, blockR, filter, readyW}
	prepareProcess(cmd)
	if p.spec.userNS {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings, cmd.SysProcAttr.GidMappings = identityMap, identityMap
		cmd.SysProcAttr.GidMappingsEnableSetgroups = true
	}
	err = cmd.Start()
	closeFiles(infoW, blockR, readyW)
	if err != nil {
		return fmt.Errorf("start bwrap: %w", err)
	}
	p.bwrap = cmd
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	fail := func(err error) error {
		p.kill()
		<-p.exited
		return err
	}
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(io.LimitReader(infoR, 4096)).Decode(&info); err != nil || info.ChildPID <= 0 {
		return fail(fmt.Errorf("%w: bwrap reported no sandbox pid (%v)", errSandboxSetup, err))
	}
	p.pid = info.ChildPID
	if p.pidfd, err = unix.PidfdOpen(p.pid, 0); err != nil {
		return fail(fmt.Errorf("%w: pidfd of the pod's pid 1: %v", errSandboxSetup, err))
	}
	if err := p.spec.cg.join(cmd.Process.Pid, p.pid); err != nil {
		return fail(err)
	}
	// pid 1 holds the pod: the OOM killer takes the processes that use the
	// memory, never it (a container whose init dies is gone).
	for _, pid := range []int{cmd.Process.Pid, p.pid} {
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid), []byte("-1000"), 0o644)
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		return fail(fmt.Errorf("%w: release the pod: %v", errSandboxSetup, err))
	}
	_ = readyR.SetReadDeadline(time.Now().Add(podReadyTimeout))
	if n, err := readyR.Read(make([]byte, 1)); n != 1 {
		return fail(fmt.Errorf("%w: the pod's pid 1 did not start (%v)", errSandboxSetup, err))
	}
	return nil
}

// kill ends the pod: SIGKILL to its pid 1 (the kernel then kills every
// other process of its PID namespace) and to bwrap.
func (p *pod) kill() {
	if p.pidfd >= 0 {
		_ = unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
	}
	if p.bwrap != nil && p.bwrap.Process != nil {
		_ = p.bwrap.Process.Kill()
	}
}

// stop ends the pod and everything still running in it, its network and
// its cgroup. It is safe to call more than once.
func (p *pod) stop() error {
	var err error
	p.once.Do(func() {
		p.stopNetwork()
		p.kill()
		deadline := time.Now().Add(podStopTimeout)
		select {
		case <-p.exited:
		case <-time.After(podStopTimeout):
			err = fmt.Errorf("image sandbox: the pod's bwrap did not exit within %s of SIGKILL", podStopTimeout)
		}
		// bwrap, killed itself, exits before the pod's pid 1 has: wait for
		// that one too, which the kernel lets exit only once every other
		// process of its PID namespace is gone (without a cgroup to empty
		// — a rootless runner's pod — nothing else would wait for them).
		if err == nil && !p.waitPID1(time.Until(deadline)) {
			err = fmt.Errorf("image sandbox: the pod's pid 1 did not exit within %s of SIGKILL", podStopTimeout)
		}
		if p.pidfd >= 0 {
			_ = unix.Close(p.pidfd)
			p.pidfd = -1
		}
		err = errors.Join(err, p.spec.cg.remove())
	})
	return err
}

// waitPID1 waits up to d for the pod's pid 1 to have exited (its pidfd
// turns readable then); it reports whether it has.
func (p *pod) waitPID1(d time.Duration) bool {
	if p.pidfd < 0 {
		return true
	}
	for {
		fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(max(d, 0).Milliseconds()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return true // nothing to wait on: the kill was sent
		}
		return n > 0
	}
}

// setNetwork gives the pod's network namespace a phase's mode: slirp4netns
// for public, the egress proxy for allowlist, loopback alone for
// no-network. It changes only what differs from the mode the namespace has;
// whatever runs in the pod from an earlier phase gets the new mode too.
func (p *pod) setNetwork(mode string, hosts []string) error {
	if p.net.set && p.net.mode == mode && slices.Equal(p.net.hosts, hosts) {
		return nil
	}
	p.stopNetwork()
	n := podNetwork{set: true, mode: mode, hosts: slices.Clone(hosts), stop: func() {}}
	switch mode {
	case netPublic:
		stop, err := startSlirp(p.slirp, p.pid)
		if err != nil {
			return err
		}
		n.stop = stop
	case netAllowlist:
		proxy, err := startEgressProxy(p.pid, hosts)
		if err != nil {
			return err
		}
		n.stop = proxy.stop
	}
	p.net = n
	return nil
}

func (p *pod) stopNetwork() {
	if p.net.stop != nil {
		p.net.stop()
	}
	p.net = podNetwork{}
}

// enterArgs is the nsenter command line that runs the phase's command in
// the pod: every namespace of the pod (its user namespace for a phase of a
// non-root user when the pod has one), its root, then the user helper,
// which drops to the phase's capabilities or user, loads the seccomp
// filter (fd 5) and reports on fd 6 before it execs.
func (p *pod) enterArgs(pc phaseCommand, workDir string) []string {
	args := []string{"--target", strconv.Itoa(p.pid), "--mount", "--pid", "--net", "--ipc", "--uts", "--cgroup"}
	if pc.identityUserNS {
		args = append(args, "--user")
	}
	// The target's root and working directory (pod-init's: the pod's /),
	// never the runner's: nsenter keeps the caller's otherwise.
	args = append(args, "--root", "--wd", "--", userHelperPath, execPhaseCommand,
		"--seccomp-fd", "5", "--started-fd", strconv.Itoa(startedFD), "--chdir", workDir)
	if pc.user.root() {
		args = append(args, "--docker-caps")
	} else {
		args = append(args, "--uid", strconv.FormatUint(uint64(pc.user.uid), 10),
			"--gid", strconv.FormatUint(uint64(pc.user.gid), 10), "--groups", joinIDs(pc.user.groups))
		if pc.nproc > 0 {
			args = append(args, "--nproc", strconv.Itoa(pc.nproc))
		}
	}
	if len(pc.argv) > 0 {
		return append(append(args, "--"), pc.argv...)
	}
	return append(args, "--", "bash", "-c", pc.script)
}

// launch starts a phase in the pod, as `docker exec` does: the pod's
// network set to the phase's mode, then nsenter, joined to the pod's cgroup
// before it runs (cgroup.wrap), in a session of its own whose process group
// is what a timeout kills. Its output goes through pipes the runner drains
// until their last writer is gone, so a background process that keeps the
// phase's stdout is neither blocked nor killed by SIGPIPE when the phase
// ends.
func (p *pod) launch(pc phaseCommand, workDir string, stdout, stderr io.Writer) (launched, error) {
	// nsenter names the pod by its pid: make sure that pid is still the
	// pod's pid 1 (a pidfd cannot refer to a reused pid).
	if err := unix.PidfdSendSignal(p.pidfd, 0, nil, 0); err != nil {
		return launched{}, fmt.Errorf("image sandbox: the pod is gone: %w", err)
	}
	if pc.identityUserNS && !p.spec.userNS {
		return launched{}, errors.New("image sandbox: a phase of a non-root user needs the pod's user namespace, which this pod was started without")
	}
	if p.spec.netns == "" {
		if err := p.setNetwork(pc.netMode, pc.allowedHosts); err != nil {
			return launched{}, err
		}
	}
	startedR, startedW, err := os.Pipe()
	if err != nil {
		return launched{}, fmt.Errorf("image sandbox: %w", err)
	}
	filter, err := seccompFile()
	if err != nil {
		closeFiles(startedR, startedW)
		return launched{}, fmt.Errorf("image sandbox: %w", err)
	}
	defer filter.Close()
	out, err := newDrainedOutput(stdout, stderr)
	if err != nil {
		closeFiles(startedR, startedW)
		return launched{}, err
	}
	cmd := exec.Command(p.nsenter, p.enterArgs(pc, workDir)...)
	cmd.Env = pc.env
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = out.stdoutW, out.stderrW
	cmd.ExtraFiles = []*os.File{nil, nil, filter, startedW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	prepareProcess(cmd)
	p.spec.cg.wrap(cmd)
	err = cmd.Start()
	out.started()
	startedW.Close()
	if err != nil {
		startedR.Close()
		out.wait()
		return launched{}, fmt.Errorf("image sandbox: start nsenter: %w", err)
	}
	return launched{cmd: cmd, release: out.wait, ran: startedByte(startedR), lingers: true}, nil
}

// podStderrPath is where a trial's pod keeps its bwrap's messages (the
// runner's work dir, which no sandbox mounts).
func podStderrPath(work string) string { return filepath.Join(work, "pod-bwrap.log") }

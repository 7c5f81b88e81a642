package runner

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/confine"
	"github.com/gauntlet-bench/gauntlet/pkg/slirp"
)

// In-sandbox paths of the image layout besides Harbor's /app, /logs/...,
// /tests and /solution.
const (
	// InstalledAgentMount is where the agent bundle dir is mounted read-only.
	InstalledAgentMount = "/installed-agent"
	// StaticBinMount is where the platform's static helper binaries are
	// mounted read-only (in every phase).
	StaticBinMount = "/opt/gauntlet/bin"
	// ArtifactsMount is Harbor's /logs/artifacts, writable in every phase.
	ArtifactsMount = "/logs/artifacts"
	// userHelperPath is where the runner binary is bound, read-only, in
	// every image phase: it drops capabilities (and, for a non-root image
	// user, becomes that user) and execs the phase's command.
	userHelperPath = "/opt/gauntlet/.user-helper"
)

// dockerDefaultCapNums are Docker's default capabilities for a
// container's root: a root image user gets exactly these (effective,
// permitted and bounding), so apt, chown and friends behave as under
// Docker.
var dockerDefaultCapNums = confine.DockerCapabilityNumbers

// imageIsolation runs a trial in one pod (pod.go): bubblewrap on the
// attempt's overlay over the task's image (`bwrap --bind <merged> /`,
// private /dev, /proc, PID, IPC, UTS, network and cgroup namespaces, the
// trial's mounts), which every phase enters. A root image user runs as
// root without a user namespace and keeps Docker's default capabilities.
// A non-root one enters a user namespace of the pod's own with the identity
// map (so its uid and the image files' owners are the host's, and its
// capabilities the namespace's) through the runner's own binary (exec-phase
// --uid), which drops every capability and the bounding set and becomes
// that uid and gid, as a container runtime does. (bwrap --unshare-user
// --uid N from root would map N to host root.)
type imageIsolation struct {
	bwrap  string
	img    Image
	self   string // the runner binary (static), bound for non-root users
	layer  *layer
	policy string // the operator's network ceiling
	// rootless: the runner is root of a user namespace of its own.
	rootless bool
	// pod is the trial's running environment once started.
	pod *pod
	// joinNet, when set, is the network namespace the pod joins (a
	// sidecar service's pod: the main pod's).
	joinNet string
}

func (*imageIsolation) name() string { return IsolationBwrap }

// traits: the trial's pod runs until the trial ends, in a network
// namespace of its own.
func (*imageIsolation) traits() isolationTraits {
	return isolationTraits{lingers: true, ownNetwork: true}
}

// root is the image as built, without the attempt's writes: where the
// runner reads its users and checks programs.
func (i *imageIsolation) root() string {
	if i.layer != nil {
		return i.layer.view
	}
	return i.img.Lowers()[0]
}

func (i *imageIsolation) layouts(_, taskDir, agentsDir string) (host, seen layout) {
	logs := i.layer.logsDir()
	host = layout{
		App:          filepath.Join(i.layer.root, i.img.WorkDir()),
		AgentLogs:    filepath.Join(logs, "agent"),
		VerifierLogs: filepath.Join(logs, "verifier"),
		Artifacts:    filepath.Join(logs, "artifacts"),
		Tests:        filepath.Join(taskDir, "tests"),
		Solution:     filepath.Join(taskDir, "solution"),
		Agents:       agentsDir,
		Tmp:          filepath.Join(i.layer.root, "tmp"),
		VerifierHome: filepath.Join(i.layer.root, "tmp"),
		VerifierTmp:  filepath.Join(i.layer.root, "tmp"),
	}
	seen = layout{App: i.img.WorkDir(), AgentLogs: AgentLogMount, VerifierLogs: VerifierLogMount, Artifacts: ArtifactsMount,
		Tests: TestsMount, Solution: SolutionMount, Tmp: sandboxTmp, VerifierHome: sandboxTmp, VerifierTmp: sandboxTmp}
	if agentsDir != "" {
		seen.Agents = AgentsMount
	}
	return host, seen
}

// prepareRoot readies the merged root for the phases: /tmp 1777, the
// working directory (created if missing, owned by the image user when not
// root, as a build's WORKDIR would leave it), /etc/hosts, and the mount
// points of the phases' binds (created as root now: the image's own
// directories are root's).
func (i *imageIsolation) prepareRoot(u imageUser) error {
	root := i.layer.root
	tmp := filepath.Join(root, "tmp")
	if err := mkdirInRoot(root, "/tmp", 0o1777); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o1777|os.ModeSticky); err != nil {
		return fmt.Errorf("image sandbox: chmod /tmp: %w", err)
	}
	wd := i.img.WorkDir()
	if _, err := os.Lstat(filepath.Join(root, wd)); errors.Is(err, os.ErrNotExist) {
		if err := mkdirInRoot(root, wd, 0o755); err != nil {
			return err
		}
		if !u.root() {
			if err := os.Lchown(filepath.Join(root, wd), int(u.uid), int(u.gid)); err != nil {
				return fmt.Errorf("image sandbox: chown working dir %s: %w", wd, err)
			}
		}
	}
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + sandboxHostname + "\n"
	return writeInRoot(root, "/etc/hosts", hosts)
}

// setResolver writes the phase's /etc/resolv.conf: slirp4netns's DNS
// forwarder when the phase has the network, nothing otherwise.
func (i *imageIsolation) setResolver(public bool) error {
	conf := "# no network in this phase\n"
	if public {
		conf = "nameserver " + slirp.DNS + "\n"
	}
	return writeInRoot(i.layer.root, "/etc/resolv.conf", conf)
}

// mkdirInRoot creates dir (absolute inside root) and its parents, refusing
// any existing component that is a symlink: the image could point one at
// the host's files, and the runner is root.
func mkdirInRoot(root, dir string, perm os.FileMode) error {
	cur := root
	for _, part := range strings.Split(strings.Trim(filepath.Clean(dir), "/"), "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		info, err := os.Lstat(cur)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.Mkdir(cur, perm); err != nil {
				return fmt.Errorf("image sandbox: create %s: %w", dir, err)
			}
		case err != nil:
			return fmt.Errorf("image sandbox: %w", err)
		case !info.IsDir():
			return fmt.Errorf("image sandbox: %s in the image is not a directory (a symlink or file), cannot mount on it", strings.TrimPrefix(cur, root))
		}
	}
	return nil
}

// writeInRoot replaces file (absolute inside root) with content, never
// through a symlink of the image: it may run while a phase's background
// processes change the tree, so every step goes through an os.Root of the
// merged overlay, which no symlink leads out of.
func writeInRoot(root, file, content string) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("image sandbox: %w", err)
	}
	defer r.Close()
	rel := strings.TrimPrefix(filepath.Clean(file), "/")
	if err := r.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return fmt.Errorf("image sandbox: create %s: %w", filepath.Dir(file), err)
	}
	// Replaced, never written in place: the entry may be a symlink (the
	// image's, or one a phase planted).
	if err := r.Remove(rel); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("image sandbox: replace %s: %w", file, err)
	}
	f, err := r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("image sandbox: write %s: %w", file, err)
	}
	_, err = io.WriteString(f, content)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("image sandbox: write %s: %w", file, err)
	}
	return nil
}

// command is not used for image phases: launch starts them.
func (i *imageIsolation) command(phaseCommand) (*exec.Cmd, error) {
	return nil, errors.New("image sandbox: phases start through launch")
}

func joinIDs(ids []uint32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(s, ",")
}

// launch enters the phase into the trial's running pod (pod.go). A phase
// of a non-root image user enters the pod's user namespace, mapped
// identically (a rootless runner's phases are in its namespace already).
// The phase's limits are the pod's: cg is not used.
func (i *imageIsolation) launch(pc phaseCommand, _ *cgroup, stdout, stderr io.Writer) (launched, error) {
	if i.pod == nil {
		return launched{}, errors.New("image sandbox: no pod is running for the phase to enter")
	}
	pc.identityUserNS = !pc.user.root() && !i.rootless
	return i.pod.launch(pc, cmp.Or(pc.cwd, i.img.WorkDir()), stdout, stderr)
}

// startPod starts the trial's pod over the layer with the trial's mounts
// and limits. userNS: some phase's user is not root.
func (i *imageIsolation) startPod(mounts []mount, maskFile string, cg *cgroup, userNS bool, stderr io.Writer) ([]string, error) {
	for _, m := range mounts {
		ensure := ensureMountPoint
		if m.file {
			ensure = ensureFileMountPoint
		}
		if err := ensure(i.layer.root, m.target); err != nil {
			return nil, err
		}
	}
	if err := ensureFileMountPoint(i.layer.root, userHelperPath); err != nil {
		return nil, err
	}
	p, retries, err := startPod(podSpec{bwrap: i.bwrap, root: i.layer.root, mounts: mounts, maskFile: maskFile,
		self: i.self, userNS: userNS && !i.rootless, cg: cg, stderr: stderr, netns: i.joinNet})
	if err != nil {
		return retries, err
	}
	i.pod = p
	return retries, nil
}

// stopPod ends the trial's pod, if one runs.
func (i *imageIsolation) stopPod() error {
	if i.pod == nil {
		return nil
	}
	return i.pod.stop()
}

// identityMap maps every id to itself: the ids, and so the owners of
// the image's files, are the host's, while the capabilities of the
// namespace's processes are the namespace's alone.
var identityMap = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}

// startedFD is the fd on which the sandbox tells the runner that its setup
// is done and the phase's command is about to run: the user helper writes
// a byte there (host-rootfs phases: the script's first command), so a
// non-zero exit without it is bubblewrap's own failure.
const startedFD = 6

// startedByte returns the check that the sandbox wrote its started byte on
// r; it is asked once bwrap has exited, so every write end is closed (the
// helper closes its own before the exec) and the read ends at once. It
// closes r.
func startedByte(r *os.File) func() bool {
	return func() bool {
		defer r.Close()
		// A write end that outlived bwrap would block the read: the
		// deadline turns that into "not started" rather than a hang.
		_ = r.SetReadDeadline(time.Now().Add(time.Second))
		n, _ := r.Read(make([]byte, 1))
		return n == 1
	}
}

func closeFiles(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// startSlirp gives the network namespace of pid the public network
// (package slirp), or says that slirp4netns is missing.
func startSlirp(bin string, pid int) (stop func(), err error) {
	if bin == "" {
		return nil, errors.New("image sandbox: the phase needs public network but slirp4netns is not installed (apt-get install slirp4netns)")
	}
	stop, err = slirp.Start(bin, pid)
	if err != nil {
		return nil, fmt.Errorf("image sandbox: %w", err)
	}
	return stop, nil
}

// launcher is an isolation that starts a phase itself: image isolation
// enters it into the trial's pod; the host-rootfs mode attaches the
// phase's cgroups and network between bwrap's setup and the phase's
// command; container isolation keeps what an agent phase leaves running.
type launcher interface {
	launch(pc phaseCommand, cg *cgroup, stdout, stderr io.Writer) (launched, error)
}

func newImageIsolation(bwrap string, opts Options) (*imageIsolation, error) {
	if opts.Image == nil {
		return nil, errors.New("bwrap isolation runs the task's image and none was given (--image; the driver resolves the spec's image): there is no fallback to the host's root filesystem; for development only, --isolation=bwrap-host runs on the host's")
	}
	if err := opts.Image.Check(); err != nil {
		return nil, err
	}
	self := opts.SelfPath
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("image sandbox: find the runner binary: %w", err)
		}
		self = exe
	}
	return &imageIsolation{bwrap: bwrap, img: *opts.Image, self: self, policy: opts.NetworkCeiling, rootless: inUserNamespace()}, nil
}

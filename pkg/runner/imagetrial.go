package runner

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/confine"

	"golang.org/x/sys/unix"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/slirp"
)

// Effective network modes of a phase.
const (
	netPublic    = harbor.NetworkPublic
	netNone      = harbor.NetworkNone
	netAllowlist = harbor.NetworkAllowlist
)

// maxDiffBytes bounds the diff artifact of a kept writable layer.
const maxDiffBytes = 1 << 30

// DiffArtifact is the artifact a kept writable layer is written to.
const DiffArtifact = "diff.tar.gz"

// setUpLayer mounts the attempt's writable root (image isolation only) and
// logs what is and is not enforced.
func (is imageSandbox) setUpLayer() error {
	t := is.t
	if t.image == nil {
		if _, host := t.iso.(bwrapIsolation); host {
			t.log.Warn("limits", "storage", "NOT enforced in the host-rootfs development mode (no quota filesystem)",
				"network", "each phase in its own network namespace, as in image sandboxes")
			t.noteLimit("storage NOT enforced (host-rootfs development mode)")
			t.noteLimit("network: each phase in its own network namespace")
		}
		return nil
	}
	if wd := t.task.Config.Environment.Workdir; wd != "" {
		// Harbor runs every command of the main environment with
		// [environment].workdir as its cwd, over the image's WORKDIR.
		t.log.Info("working directory from [environment].workdir", "workdir", wd, "image_workdir", t.image.img.WorkingDir)
		t.image.img.WorkingDir = wd
	}
	storage := t.task.Config.Environment.StorageMB
	source := "task storage_mb"
	if storage == 0 {
		storage, source = t.opts.StorageMB, "platform default"
		if storage == 0 {
			storage = DefaultStorageMB
		}
	}
	if storage < 0 {
		storage = 0
	}
	rootless := t.image.rootless
	t.rootless = rootless
	if rootless {
		is.noteRootless()
	}
	// The layer's mounts live under a per-attempt dir named by a hash, so
	// every path overlayfs options carry is free of the characters they
	// cannot.
	sum := sha256.Sum256([]byte(t.work))
	dir := filepath.Join(t.work, "layer-"+hex.EncodeToString(sum[:4]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("image sandbox: create %s: %w", dir, err)
	}
	asked := storage
	if rootless {
		// A loop device is the host root's alone.
		storage = 0
	}
	l, err := newLayer(dir, t.image.img.Lowers(), storage, t.opts.Overlay)
	if err != nil {
		return err
	}
	t.layer, t.image.layer = l, l
	t.log.Info("image sandbox", "image", t.image.img.Ref, "rootfs", l.view, "layers", len(l.lowers),
		"user", userOrRoot(t.image.img.User), "working_dir", t.image.img.WorkDir(), "overlay", l.driver)
	switch {
	case rootless && asked > 0:
		t.log.Warn("limits", "storage", fmt.Sprintf("%d MB (%s) NOT enforced: a rootless runner cannot loop-mount the attempt's own filesystem; the writable layer is on the host's disk", asked, source))
		t.noteLimit(fmt.Sprintf("storage %d MB NOT enforced (rootless runner: no filesystem of the attempt's own)", asked))
	case storage > 0:
		t.log.Info("limits", "storage", fmt.Sprintf("%d MB (%s), enforced by the attempt's own ext4 filesystem holding its writable layer, /tmp and /logs: a full disk is the agent's ENOSPC", storage, source))
		t.noteLimit(fmt.Sprintf("storage %d MB applied (%s, the attempt's own filesystem)", storage, source))
		if free := hostFreeMB(t.work); free >= 0 && free < int64(storage) {
			t.log.Warn("the host has less free disk than the attempt's storage limit", "host_free_mb", free, "storage_mb", storage)
		}
	default:
		t.log.Warn("limits", "storage", "NOT enforced (storage limit disabled by the operator)")
		t.noteLimit("storage NOT enforced (disabled by the operator)")
	}
	t.noteLimit("network: one network namespace for the trial (its pod's), each phase's mode applied at its start")
	t.log.Info("limits", "network", "one network namespace for the trial, its mode set at each phase's start: public through slirp4netns without the host's loopback, allowlist through an egress proxy on the sandbox's loopback, no-network with loopback only")
	return nil
}

// noteRootless logs and notes what a rootless runner's user namespace
// holds: its own uid as root and, with subordinate ids, uids 1…N.
func (is imageSandbox) noteRootless() {
	t := is.t
	if n := namespaceIDs(); n > 0 {
		t.log.Info("rootless image sandbox", "ids", fmt.Sprintf("root is the runner's own uid; uids and gids 1-%d are its subordinate ids", n))
		t.noteLimit(fmt.Sprintf("rootless: root is the runner's uid, uids 1-%d its subordinate ids", n))
		return
	}
	t.log.Warn("rootless image sandbox", "ids", "root is the runner's own uid and no other uid exists (no subordinate ids in /etc/subuid and /etc/subgid, or no newuidmap): an image user that is not root cannot run")
	t.noteLimit("rootless: root is the runner's uid, no other uid (no subordinate ids)")
}

func userOrRoot(u string) string {
	if u == "" {
		return "root"
	}
	return u
}

func hostFreeMB(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * st.Bsize >> 20
}

// isStaticELF reports whether file is an ELF executable without a program
// interpreter (statically linked), which runs in any image.
func isStaticELF(file string) bool {
	f, err := elf.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// closeLayer writes the diff artifact when asked, then unmounts and deletes
// the attempt's writable root: nothing of it survives the attempt.
func (is imageSandbox) closeLayer() {
	t := is.t
	if t.layer == nil {
		return
	}
	if err := t.layer.close(); err != nil {
		t.log.Warn("writable layer not fully removed", "err", err)
	}
	t.layer = nil
}

// keepDiff writes the writable layer as artifacts/diff.tar.gz when the
// options ask for it.
func (is imageSandbox) keepDiff() {
	t := is.t
	if t.layer == nil || !t.opts.KeepDiff {
		return
	}
	if err := t.layer.writeDiff(filepath.Join(t.out, ArtifactsDir, DiffArtifact), maxDiffBytes); err != nil {
		t.log.Warn("diff artifact not written", "err", err)
		return
	}
	t.log.Info("writable layer kept", "artifact", DiffArtifact)
}

// prepareImageDirs creates /logs/{agent,verifier,artifacts} on the
// attempt's filesystem, owned by the phase users that write them, and
// readies the merged root.
func (is imageSandbox) prepareImageDirs() error {
	t := is.t
	if _, err := confine.WriteMaskFile(t.work); err != nil {
		return err
	}
	agentUser, err := is.phaseUser(roleAgent)
	if err != nil {
		return err
	}
	verifierUser, err := is.phaseUser(roleVerifier)
	if err != nil {
		return err
	}
	if t.rootless {
		for _, u := range []imageUser{agentUser, verifierUser} {
			if !u.root() && (!idMapped("/proc/self/uid_map", u.uid) || !idMapped("/proc/self/gid_map", u.gid)) {
				return fmt.Errorf("image sandbox: the image user %q (uid %d, gid %d) does not exist in the rootless runner's user namespace: give the runner's user subordinate ids in /etc/subuid and /etc/subgid (usermod --add-subuids, --add-subgids) and install newuidmap (apt-get install uidmap), or run the runner as root", u.spec, u.uid, u.gid)
			}
		}
	}
	owners := map[string]imageUser{t.host.AgentLogs: agentUser, t.host.Artifacts: agentUser, t.host.VerifierLogs: verifierUser}
	for dir, u := range owners {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		if err := os.Chown(dir, int(u.uid), int(u.gid)); err != nil {
			return fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	if info, err := os.Stat(t.image.self); err != nil || !isStaticELF(t.image.self) || info.Mode().Perm()&0o005 != 0o005 {
		return fmt.Errorf("image sandbox: the runner binary %s runs inside the image, so it must be a statically linked executable readable by every uid (build it with CGO_ENABLED=0; make build does)", t.image.self)
	}
	return t.image.prepareRoot(agentUser)
}

// phaseUser is who runs a phase: task.toml's [agent].user or
// [verifier].user, else the image's USER.
func (is imageSandbox) phaseUser(role phaseRole) (imageUser, error) {
	t := is.t
	spec := t.image.img.User
	override := t.task.Config.Agent.User
	if role == roleVerifier {
		override = t.task.Config.Verifier.User
	}
	if override != "" {
		spec = override
	}
	return resolveUser(t.image.root(), spec)
}

// imagePhase completes a phase command for the sandbox it runs in: under
// image isolation its user, network mode, the image's environment, its
// mount points and /etc/resolv.conf; in a host-rootfs sandbox the /etc
// stubs.
func (is imageSandbox) imagePhase(pc *phaseCommand, role phaseRole) error {
	t := is.t
	_, host := t.iso.(bwrapIsolation)
	if t.image == nil && !host {
		return nil
	}
	override, hosts := t.task.Config.Agent.NetworkMode, t.task.Config.Agent.AllowedHosts
	if role == roleVerifier {
		override, hosts = t.task.Config.Verifier.NetworkMode, t.task.Config.Verifier.AllowedHosts
	}
	if len(hosts) == 0 {
		hosts = t.task.Config.Environment.AllowedHosts
	}
	asked := t.phaseNetwork(override)
	mode := effectiveNetwork(asked, t.opts.NetworkCeiling)
	if mode != asked && asked != "" {
		t.log.Warn("phase network restricted", "asked", asked, "given", mode, "ceiling", t.opts.NetworkCeiling)
	}
	pc.netMode, pc.network = mode, mode == netPublic
	pc.maskFile = is.maskFile()
	if mode == netAllowlist {
		pc.allowedHosts = hosts
		pc.env = append(pc.env, proxyEnv()...)
		t.log.Info("phase egress through the allow-listing proxy", "allowed_hosts", strings.Join(hosts, ","))
	}
	if host {
		pc.etcDir = is.etcStubs()
		return nil
	}
	u, err := is.phaseUser(role)
	if err != nil {
		return err
	}
	pc.user = u
	pc.env = imageEnv(t.image.img, u, pc.env)
	return t.image.setResolver(pc.network)
}

// effectiveNetwork is the phase's network mode under the operator's
// ceiling; an unknown or empty mode is no-network (fail closed).
func effectiveNetwork(asked, ceiling string) string {
	rank := map[string]int{netPublic: 2, netAllowlist: 1, netNone: 0}
	mode := asked
	if _, ok := rank[mode]; !ok {
		mode = netNone
	}
	if c, ok := rank[ceiling]; ok && c < rank[mode] {
		mode = ceiling
	}
	return mode
}

// ensureMountPoint makes target a real directory of the merged root: the
// agent may have replaced it (or a parent) with a symlink between phases,
// which would send the bind elsewhere; that entry is removed.
func ensureMountPoint(root, target string) error {
	cur := root
	for _, part := range strings.Split(strings.Trim(filepath.Clean(target), "/"), "/") {
		cur = filepath.Join(cur, part)
		info, err := os.Lstat(cur)
		if err == nil && !info.IsDir() {
			if err := os.RemoveAll(cur); err != nil {
				return fmt.Errorf("image sandbox: clear mount point %s: %w", target, err)
			}
			err = os.ErrNotExist
		}
		if errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(cur, 0o755); err != nil {
				return fmt.Errorf("image sandbox: create mount point %s: %w", target, err)
			}
		} else if err != nil {
			return fmt.Errorf("image sandbox: %w", err)
		}
	}
	return nil
}

// ensureFileMountPoint makes target a regular file of the merged root.
func ensureFileMountPoint(root, target string) error {
	if err := ensureMountPoint(root, filepath.Dir(target)); err != nil {
		return err
	}
	path := filepath.Join(root, target)
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("image sandbox: clear mount point %s: %w", target, err)
		}
	}
	return writeInRoot(root, target, "")
}

// podMounts are the mounts of the trial's pod, for every phase: the union
// of the roles' (roleMounts: Harbor's /logs directories, command agents'
// scripts, the platform's helpers), writable where a role writes, less
// what the image's overlay holds — /app, and /tests and /solution, which
// are uploaded into it for the phase that gets them — then /logs/artifacts,
// the harness's bundle and, when the agent's harness or the verifier's
// judge reaches a model gateway, the gateway's socket directory and the
// forwarder.
func (is imageSandbox) podMounts(rig *agentRig) ([]mount, error) {
	t := is.t
	inOverlay := map[string]bool{AppMount: true, TestsMount: true, SolutionMount: true}
	var m []mount
	at := map[string]int{}
	for _, role := range []phaseRole{roleAgent, roleVerifier} {
		for _, rm := range t.roleMounts(role) {
			if i, ok := at[rm.target]; ok {
				m[i].writable = m[i].writable || rm.writable
				continue
			}
			if !inOverlay[rm.target] {
				at[rm.target] = len(m)
				m = append(m, rm)
			}
		}
	}
	m = append(m, mount{host: t.host.Artifacts, target: ArtifactsMount, writable: true})
	switch {
	case t.opts.InstalledAgentDir != "":
		m = append(m, mount{host: t.opts.InstalledAgentDir, target: InstalledAgentMount})
	case rig != nil && rig.bundle != "":
		m = append(m, mount{host: rig.bundle, target: harness.BundleMount})
	}
	if t.task.Compose != nil {
		vols, err := t.services().volumeMounts(t.task.Compose.Main, t.image.root())
		if err != nil {
			return nil, err
		}
		m = append(m, vols...)
	}
	if rig != nil && rig.gw != nil || t.spec.JudgeModel != "" {
		socket, err := is.podGatewaySocket()
		if err != nil {
			return nil, err
		}
		forwarder, err := t.rigging().forwarderBinary()
		if err != nil {
			return nil, err
		}
		m = append(m, mount{host: filepath.Dir(socket), target: gatewayMount},
			mount{host: forwarder, target: forwarderPath, file: true})
	}
	return m, nil
}

// podGatewaySocket is where the model gateways of a pod's trial listen:
// one directory, bound into the pod for the whole trial, which the agent's
// gateway and then the verifier's judge gateway use in turn (each removes
// its socket when it closes).
func (is imageSandbox) podGatewaySocket() (string, error) {
	t := is.t
	if t.podSocket == "" {
		path, tmp, err := t.rigging().gatewaySocketPath("gateway")
		if err != nil {
			return "", fmt.Errorf("model gateway: socket: %w", err)
		}
		t.podSocket, t.podSocketTmp = path, tmp
	}
	return t.podSocket, nil
}

// startPod starts the trial's pod (image isolation) with its mounts and
// its cgroup, after uploading the solution for a harness that gets it.
func (is imageSandbox) startPod(rig *agentRig) error {
	t := is.t
	if t.harness.MountsSolution {
		if err := uploadDir(t.layer.root, t.host.Solution, SolutionMount); err != nil {
			return fmt.Errorf("image sandbox: %w", err)
		}
	}
	mounts, err := is.podMounts(rig)
	if err != nil {
		return err
	}
	agentUser, err := is.phaseUser(roleAgent)
	if err != nil {
		return err
	}
	verifierUser, err := is.phaseUser(roleVerifier)
	if err != nil {
		return err
	}
	var cg *cgroup
	if !t.rootless {
		cg, t.podLimits = newCgroup(cgroupRoot, t.cgroupName("pod"), t.limits())
	}
	stderr, err := newCappedFile(podStderrPath(t.work), 64<<10)
	if err != nil {
		_ = cg.remove()
		return err
	}
	t.podStderr = stderr
	started := time.Now()
	// A multi-step task's later steps may run as other users (steps.go).
	userNS := !agentUser.root() || !verifierUser.root() || t.steps.nonRootUser()
	if len(t.image.img.Entrypoint) > 0 && !userNS {
		// The entrypoint runs as the image's own user (entrypoint.go).
		imageUser, err := resolveUser(t.image.root(), t.image.img.User)
		if err != nil {
			return fmt.Errorf("image entrypoint: %w", err)
		}
		userNS = !imageUser.root()
	}
	retries, err := t.image.startPod(mounts, is.maskFile(), cg, userNS, stderr)
	for _, failure := range retries {
		t.log.Warn("the pod's sandbox failed to set up; started it again", "failure", failure, "bwrap", lastLine(podStderrPath(t.work)))
	}
	if err != nil {
		_ = cg.remove()
		return fmt.Errorf("%w: %s", err, lastLine(podStderrPath(t.work)))
	}
	t.log.Info("pod started", "pid", t.image.pod.pid, "user_namespace", t.image.pod.spec.userNS,
		"duration", time.Since(started).Round(time.Microsecond).String())
	return nil
}

// podLost reports whether the trial's pod was started and its pid 1 is
// gone (nothing can be entered into it any more).
func (is imageSandbox) podLost() bool {
	p := is.t.image
	if p == nil || p.pod == nil {
		return false
	}
	return unix.PidfdSendSignal(p.pod.pidfd, 0, nil, 0) != nil
}

// stopPod ends the trial's pod and everything still running in it, its
// sidecar services too (image isolation; nothing otherwise). It is safe to
// call more than once.
func (is imageSandbox) stopPod() {
	is.t.services().stopServices()
	is.stopMainPod()
}

// stopMainPod ends the main pod and what runs in it, leaving the sidecar
// services running (a separate verifier's trial stops main before it
// collects the services' artifacts, as Harbor does).
func (is imageSandbox) stopMainPod() {
	t := is.t
	if t.image == nil || t.image.pod == nil {
		return
	}
	if err := t.image.stopPod(); err != nil {
		t.log.Warn("the pod did not stop cleanly", "err", err)
	} else {
		t.log.Info("pod stopped: no process of the trial is left")
	}
	ctx, cancel := context.WithTimeout(context.Background(), entrypointReapTimeout)
	t.services().stopEntrypoint(ctx)
	cancel()
	if t.podStderr != nil {
		_ = t.podStderr.Close()
		t.podStderr = nil
	}
	if t.podSocketTmp != "" {
		_ = os.RemoveAll(t.podSocketTmp)
		t.podSocketTmp = ""
	}
}

// prepareImageVerifier readies the running pod for the verifier, as
// Harbor does its container: /logs/verifier emptied (whatever the agent
// put there) and the task's tests uploaded to /tests.
func (is imageSandbox) prepareImageVerifier() error {
	t := is.t
	u, err := is.phaseUser(roleVerifier)
	if err != nil {
		return err
	}
	if err := emptyDir(t.host.VerifierLogs, u.uid, u.gid); err != nil {
		return fmt.Errorf("clear verifier logs: %w", err)
	}
	if err := uploadDir(t.layer.root, t.host.Tests, TestsMount); err != nil {
		return fmt.Errorf("image sandbox: %w", err)
	}
	return nil
}

// storageNote says, for an agent failure, that the attempt's storage limit
// is full (so the failure was most likely its ENOSPC).
func (is imageSandbox) storageNote() string {
	t := is.t
	full, used := t.layer.full()
	if !full {
		return ""
	}
	return fmt.Sprintf("; the attempt's storage limit is full (%d MB used): the agent got ENOSPC", used)
}

// etcStubs is the dir of a host-rootfs sandbox's /etc/passwd and /etc/group.
func (is imageSandbox) etcStubs() string { return filepath.Join(is.t.work, "etc-stubs") }

// maskFile is the empty file bound over /proc's masked files: in the
// trial's work dir, which no sandbox mounts.
func (is imageSandbox) maskFile() string { return filepath.Join(is.t.work, confine.MaskFileName) }

// writeEtcStubs writes passwd and group naming only root and nobody: a
// host-rootfs sandbox never sees the host's accounts.
func writeEtcStubs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":  "root:x:0:\nnogroup:x:65534:\n",
		"hosts":  "127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\t" + sandboxHostname + "\n",
		// slirp4netns's DNS forwarder: the host's resolver may be on its
		// loopback, which the sandbox never reaches.
		"resolv.conf": "nameserver " + slirp.DNS + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s stub: %w", name, err)
		}
	}
	return nil
}

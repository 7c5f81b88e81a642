package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// A separate verifier ([verifier] environment_mode = "separate"), as
// Harbor runs it: once the agent is done the trial's pod is stopped, the
// declared artifacts and /logs/artifacts are copied out, and the verifier
// runs in a fresh pod over its own image (built from the task's tests/ at
// sync, which provides /tests/test.sh itself: no tests are uploaded) with
// only those artifacts, each at its original path. The agent's /app, /tmp
// and /logs/agent are not there (unless declared as artifacts).

// verifierNoTestScript is the exception a separate verifier's image
// without /tests/test.sh ends an attempt with.
const verifierNoTestScript = "VerifierNoTestScript"

// separateVerifier reports whether the trial's verifier runs in an
// environment of its own.
func (vf verification) separateVerifier() bool { return vf.t.task.Config.Verifier.Separate() }

// prepareSeparateVerifier stops the trial's pod, collects the artifacts,
// and starts the verifier's pod over the verifier's image with them. From
// then on the trial's isolation, image, verifier logs and network
// baseline are the verifier environment's, so the verifier phase runs as
// in shared mode. A verifier image without /tests/test.sh is the task's
// error (an exception without reward, naming the task and the file).
func (vf verification) prepareSeparateVerifier() (ok bool, err error) {
	t := vf.t
	if t.container != nil {
		return t.verification().prepareHandoffVerifier() // verifierhandoff.go
	}
	if t.image == nil || t.opts.VerifierImage == nil {
		return false, fmt.Errorf("task %s has a separate verifier ([verifier] environment_mode = %q): it runs under image isolation with the verifier's image (--verifier-image, pinned at sync), and none was given", t.task.Name, harbor.VerifierSeparate)
	}
	main := t.image
	// As Harbor: main stops, then the artifacts are pulled (main's from its
	// stopped filesystem, the services' from the running services), then
	// the services stop.
	t.imageSandbox().stopMainPod()
	t.log.Info("main environment stopped for the separate verifier")
	err = vf.collectDeclared()
	t.services().stopServices()
	if err != nil {
		return false, err
	}
	ve := t.task.Config.VerifierEnvironment()
	vi := &imageIsolation{bwrap: main.bwrap, img: *t.opts.VerifierImage, self: main.self, policy: main.policy, rootless: main.rootless}
	if ve.Workdir != "" {
		vi.img.WorkingDir = ve.Workdir // [verifier.environment].workdir over the image's WORKDIR, as for the main one
	}
	storage := ve.StorageMB
	if storage == 0 {
		storage = t.opts.StorageMB
		if storage == 0 {
			storage = DefaultStorageMB
		}
	}
	if storage < 0 || t.rootless {
		storage = 0
	}
	sum := sha256.Sum256([]byte(t.work + "\x00verifier"))
	dir := filepath.Join(t.work, "vlayer-"+hex.EncodeToString(sum[:4]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("separate verifier: create %s: %w", dir, err)
	}
	l, err := newLayer(dir, vi.img.Lowers(), storage, t.opts.Overlay)
	if err != nil {
		return false, fmt.Errorf("separate verifier: %w", err)
	}
	vi.layer, t.verifierLayer = l, l
	t.log.Info("separate verifier environment", "image", vi.img.Ref, "overlay", l.driver)
	// The verifier image provides the tests itself.
	if !hasRegularFile(l.root, TestsMount+"/test.sh") {
		vf.exceptNoReward(verifierNoTestScript, fmt.Sprintf("task %s: the separate verifier's image %s does not provide %s/test.sh (built from tests/Dockerfile: COPY test.sh there; Harbor uploads no tests into a separate verifier)", t.task.Name, vi.img.Ref, TestsMount))
		return false, nil
	}
	spec := t.task.Config.Verifier.User
	if spec == "" {
		spec = vi.img.User
	}
	u, err := resolveUser(vi.root(), spec)
	if err != nil {
		return false, fmt.Errorf("separate verifier: %w", err)
	}
	logs := l.logsDir()
	vlogs, arts := filepath.Join(logs, "verifier"), filepath.Join(logs, "artifacts")
	for _, d := range []string{vlogs, arts} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return false, fmt.Errorf("separate verifier: %w", err)
		}
		if err := os.Chown(d, int(u.uid), int(u.gid)); err != nil {
			return false, fmt.Errorf("separate verifier: %w", err)
		}
	}
	if err := vi.prepareRoot(u); err != nil {
		return false, err
	}
	// Handed over: /logs/artifacts (the agent's publish directory) and the
	// declared artifacts at their own paths; nothing else of the agent's.
	if skipped, err := copyTree(t.host.Artifacts, arts, copyOptions{budget: maxArtifactBytes}); err != nil {
		return false, fmt.Errorf("separate verifier: hand over %s: %w", ArtifactsMount, err)
	} else {
		for _, s := range skipped {
			t.log.Warn("artifact not handed to the verifier", "file", ArtifactsMount+"/"+s)
		}
	}
	if t.declared != "" {
		if err := placeArtifacts(l.root, vf.declaredArtifacts(), t.declaredEntries, t.declared); err != nil {
			return false, fmt.Errorf("separate verifier: %w", err)
		}
	}
	// From here the trial's environment is the verifier's.
	t.iso, t.image = vi, vi
	t.host.VerifierLogs, t.host.App = vlogs, filepath.Join(l.root, vi.img.WorkDir())
	t.seen.App = vi.img.WorkDir()
	t.spec.Network = ve.NetworkMode // the separate verifier's network baseline
	t.task.Config.Environment.Env = ve.Env
	return true, vf.startVerifierPod(u, ve)
}

// startVerifierPod starts the separate verifier's pod: its logs, the
// handed-over /logs/artifacts, the platform's helpers and, for a judge,
// the model gateway; limits from [verifier.environment].
func (vf verification) startVerifierPod(u imageUser, ve harbor.EnvironmentConfig) error {
	t := vf.t
	vl := filepath.Dir(t.host.VerifierLogs)
	mounts := []mount{
		{host: t.host.VerifierLogs, target: VerifierLogMount, writable: true},
		{host: filepath.Join(vl, "artifacts"), target: ArtifactsMount, writable: true},
	}
	if t.opts.StaticBinDir != "" {
		mounts = append(mounts, mount{host: t.opts.StaticBinDir, target: StaticBinMount})
	}
	if t.spec.JudgeModel != "" {
		t.podSocket, t.podSocketTmp = "", ""
		socket, err := t.imageSandbox().podGatewaySocket()
		if err != nil {
			return err
		}
		forwarder, err := t.rigging().forwarderBinary()
		if err != nil {
			return err
		}
		mounts = append(mounts, mount{host: filepath.Dir(socket), target: gatewayMount},
			mount{host: forwarder, target: forwarderPath, file: true})
	}
	lim := resourceLimits{CPUs: ve.CPUs, MemoryMB: ve.MemoryMB, Pids: t.opts.PidsLimit}
	if lim.Pids == 0 {
		lim.Pids = DefaultPidsLimit
	}
	var cg *cgroup
	if !t.rootless {
		cg, t.podLimits = newCgroup(cgroupRoot, t.cgroupName("verifier-pod"), lim)
	}
	stderr, err := newCappedFile(filepath.Join(t.work, "verifier-pod-bwrap.log"), 64<<10)
	if err != nil {
		_ = cg.remove()
		return err
	}
	t.podStderr = stderr
	started := time.Now()
	retries, err := t.image.startPod(mounts, t.imageSandbox().maskFile(), cg, !u.root(), stderr)
	for _, failure := range retries {
		t.log.Warn("the verifier pod's sandbox failed to set up; started it again", "failure", failure)
	}
	if err != nil {
		_ = cg.remove()
		return fmt.Errorf("separate verifier: %w: %s", err, lastLine(filepath.Join(t.work, "verifier-pod-bwrap.log")))
	}
	t.log.Info("verifier pod started", "pid", t.image.pod.pid, "duration", time.Since(started).Round(time.Microsecond).String())
	return nil
}

// closeVerifierLayer removes the separate verifier's writable root.
func (vf verification) closeVerifierLayer() {
	t := vf.t
	if t.verifierLayer == nil {
		return
	}
	if err := t.verifierLayer.close(); err != nil {
		t.log.Warn("verifier layer not fully removed", "err", err)
	}
	t.verifierLayer = nil
}

// hasRegularFile reports whether root holds a regular file at name
// (absolute in root), symlinks resolved inside root only.
func hasRegularFile(root, name string) bool {
	r, err := os.OpenRoot(root)
	if err != nil {
		return false
	}
	defer r.Close()
	info, err := r.Stat(filepath.Clean(name)[1:])
	if errors.Is(err, fs.ErrNotExist) || err != nil {
		return false
	}
	return info.Mode().IsRegular()
}

package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkImageSandboxStart measures an image sandbox's start with the
// image cached: from nothing to the agent command having run — the
// attempt's quota filesystem (sparse ext4, mkfs, loop mount), the overlay
// over the cached rootfs, the root's preparation, the pod's cgroup
// (memory, cpu, pids), the pod (bwrap with private /dev, /proc and
// namespaces, the cgroup join, pod-init as its pid 1) and the first phase
// entered into it (nsenter, the helper, bash running `true`), until it
// exited. The layer alone (quota filesystem and overlay) is
// layer-ms-median; a second phase entered into the running pod (what each
// phase after the first costs) is exec-ms-median; tear-down (the pod
// killed, its cgroup removed, unmounts, removal) is teardown-ms-median.
//
// Sub-benchmarks: rootfs is the image as one directory (the store before
// layers were shared); layers=8 is the same image as the store now keeps
// it, a stack of layer directories — the rootfs at the bottom and seven
// small layers above it (files, a whiteout, an opaque directory) — plus
// the read-only view of the stack the runner reads the image's users in.
func BenchmarkImageSandboxStart(b *testing.B) {
	img := testImage(b)
	b.Run("rootfs", func(b *testing.B) { benchImageSandboxStart(b, img) })
	b.Run("layers=8", func(b *testing.B) { benchImageSandboxStart(b, stackedImage(b, img, 7)) })
}

// stackedImage puts n small layers over img's rootfs, as the image store
// unpacks them.
func stackedImage(b *testing.B, img Image, n int) Image {
	b.Helper()
	root := b.TempDir()
	layers := []string{img.Rootfs}
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("l%d", i))
		for _, d := range []string{"etc", "opt/layer", "usr/local/bin"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for _, f := range []string{fmt.Sprintf("etc/layer-%d", i), fmt.Sprintf("usr/local/bin/tool-%d", i), "opt/layer/file"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("layer\n"), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if i > 0 {
			if err := syscall.Mknod(filepath.Join(dir, fmt.Sprintf("etc/layer-%d", i-1)), syscall.S_IFCHR, 0); err != nil {
				b.Fatal(err)
			}
			if err := syscall.Setxattr(filepath.Join(dir, "opt/layer"), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
				b.Fatal(err)
			}
		}
		layers = append([]string{dir}, layers...)
	}
	img.Layers, img.Rootfs = layers, ""
	return img
}

func benchImageSandboxStart(b *testing.B, img Image) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal("bubblewrap is required: apt-get install bubblewrap")
	}
	iso := &imageIsolation{bwrap: bwrap, img: img, self: runnerBinary}
	user := imageUser{home: "/root"}
	var starts, layers, execs, teardowns []time.Duration
	enter := func(pc phaseCommand) {
		var stderr bytes.Buffer
		started, err := iso.launch(pc, nil, &bytes.Buffer{}, &stderr)
		if err != nil {
			b.Fatalf("launch: %v: %s", err, stderr.String())
		}
		if err := started.cmd.Wait(); err != nil {
			b.Fatalf("phase: %v: %s", err, stderr.String())
		}
		started.release()
		if !started.ran() {
			b.Fatalf("phase did not start: %s", stderr.String())
		}
	}
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(b.TempDir(), "w")
		began := time.Now()
		l, err := newLayer(dir, img.Lowers(), DefaultStorageMB, OverlayAuto)
		if err != nil {
			b.Fatal(err)
		}
		layers = append(layers, time.Since(began))
		iso.layer = l
		if err := iso.prepareRoot(user); err != nil {
			b.Fatal(err)
		}
		logs := filepath.Join(l.logsDir(), "agent")
		if err := os.MkdirAll(logs, 0o755); err != nil {
			b.Fatal(err)
		}
		cg, _ := newCgroup(cgroupRoot, fmt.Sprintf("bench-%d-%d", os.Getpid(), i), resourceLimits{CPUs: 1, MemoryMB: 512, Pids: DefaultPidsLimit})
		var podErr bytes.Buffer
		if _, err := iso.startPod([]mount{{host: logs, target: AgentLogMount, writable: true}}, testMaskFile(b), cg, false, &podErr); err != nil {
			b.Fatalf("pod: %v: %s", err, podErr.String())
		}
		pc := phaseCommand{script: "true", env: imageEnv(img, user, nil), netMode: netNone, user: user}
		enter(pc)
		starts = append(starts, time.Since(began))
		again := time.Now()
		enter(pc)
		execs = append(execs, time.Since(again))
		down := time.Now()
		if err := iso.stopPod(); err != nil {
			b.Fatal(err)
		}
		iso.pod = nil
		if err := l.close(); err != nil {
			b.Fatal(err)
		}
		teardowns = append(teardowns, time.Since(down))
	}
	b.ReportMetric(medianMS(starts), "ms-median")
	b.ReportMetric(medianMS(layers), "layer-ms-median")
	b.ReportMetric(medianMS(execs), "exec-ms-median")
	b.ReportMetric(medianMS(teardowns), "teardown-ms-median")
}

// BenchmarkDockerRunStart measures `docker run --rm --network none` of the
// same rootfs (docker import of the same tree) running `true`, on a Docker
// engine the benchmark starts itself (dockerd with its own data root and
// socket, no iptables, no bridge) and stops by its pid at the end.
func BenchmarkDockerRunStart(b *testing.B) {
	img := testImage(b)
	sock, err := benchDocker.start(img.Rootfs)
	if err != nil {
		b.Fatal(err)
	}
	var runs []time.Duration
	for b.Loop() {
		began := time.Now()
		out, err := exec.Command("docker", "-H", "unix://"+sock, "run", "--rm", "--network", "none", benchDockerImage, "/bin/true").CombinedOutput()
		if err != nil {
			b.Fatalf("docker run: %v: %s", err, out)
		}
		runs = append(runs, time.Since(began))
	}
	b.ReportMetric(medianMS(runs), "ms-median")
}

func medianMS(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}

const benchDockerImage = "gauntlet-bench/minbase:latest"

// benchDocker is the Docker engine the Docker benchmark starts (once per
// test binary); TestMain stops it.
var benchDocker dockerEngine

type dockerEngine struct {
	once sync.Once
	dir  string
	cmd  *exec.Cmd
	sock string
	err  error
}

func (e *dockerEngine) start(rootfs string) (string, error) {
	e.once.Do(func() { e.sock, e.err = e.boot(rootfs) })
	return e.sock, e.err
}

func (e *dockerEngine) boot(rootfs string) (string, error) {
	if _, err := exec.LookPath("dockerd"); err != nil {
		return "", fmt.Errorf("the Docker comparison needs dockerd (apt-get install docker.io): %v", err)
	}
	dir, err := os.MkdirTemp("", "gauntlet-bench-docker-")
	if err != nil {
		return "", err
	}
	e.dir = dir
	sock := filepath.Join(dir, "docker.sock")
	log, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		return "", err
	}
	e.cmd = exec.Command("dockerd", "--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--host", "unix://"+sock, "--pidfile", filepath.Join(dir, "docker.pid"), "--iptables=false", "--bridge=none")
	e.cmd.Stdout, e.cmd.Stderr = log, log
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := e.cmd.Start(); err != nil {
		return "", fmt.Errorf("start dockerd: %w", err)
	}
	// Wait for dockerd to answer, asking again on a ticker.
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for exec.Command("docker", "-H", "unix://"+sock, "info").Run() != nil {
		select {
		case <-deadline:
			data, _ := os.ReadFile(log.Name())
			return "", fmt.Errorf("dockerd did not come up in 60 s: %s", tailString(string(data), 2000))
		case <-tick.C:
		}
	}
	tarCmd := exec.Command("tar", "-C", rootfs, "--numeric-owner", "-c", ".")
	imp := exec.Command("docker", "-H", "unix://"+sock, "import", "-", benchDockerImage)
	pipe, err := tarCmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	imp.Stdin = pipe
	if err := tarCmd.Start(); err != nil {
		return "", err
	}
	out, err := imp.CombinedOutput()
	if werr := tarCmd.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return "", fmt.Errorf("docker import: %v: %s", err, out)
	}
	return sock, nil
}

// stop ends dockerd by its pid and removes its data.
func (e *dockerEngine) stop() {
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = e.cmd.Process.Kill()
		<-done
	}
	// Its overlay2 mounts go with it; anything left is unmounted first.
	if data, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], e.dir) {
				_ = syscall.Unmount(f[4], syscall.MNT_DETACH)
			}
		}
	}
	_ = os.RemoveAll(e.dir)
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

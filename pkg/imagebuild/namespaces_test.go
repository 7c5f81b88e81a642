package imagebuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"golang.org/x/sys/unix"

	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
)

// rootlessAccount is the unprivileged account `make deps` creates (with
// subordinate ids) for the rootless tests.
const rootlessAccount = "gauntlet-rootless"

// buildAsEnv makes the test binary, started as another user, run one build
// (a JSON helperBuild) instead of the tests: the rootless test's builder.
const buildAsEnv = "GAUNTLET_IMAGEBUILD_HELPER_BUILD"

type helperBuild struct {
	Dir, ContextDir, Dockerfile, Out string
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(buildAsEnv); spec != "" {
		if err := runHelperBuild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "helper build:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runHelperBuild(spec string) error {
	var h helperBuild
	if err := json.Unmarshal([]byte(spec), &h); err != nil {
		return err
	}
	df, err := os.ReadFile(h.Dockerfile)
	if err != nil {
		return err
	}
	b, err := New(Config{Dir: h.Dir, Import: keepLayout(h.Out)})
	if err != nil {
		return err
	}
	_, err = b.Build(context.Background(), Request{Key: strings.Repeat("5a", 32), ContextDir: h.ContextDir, Dockerfile: df, Log: os.Stderr})
	return err
}

// keepLayout is an importer that moves the built OCI layout to out.
func keepLayout(out string) Importer {
	return func(_ context.Context, dir, _ string) (string, error) {
		return "oci:" + out, os.Rename(dir, out)
	}
}

// hostView is what of the host a RUN step must not see, made by the test.
type hostView struct {
	markerToken string   // the argument of a sleep the test runs
	hostOnly    []string // command-line fragments of host processes
	pid1        string   // the host's /proc/1/cmdline, NULs as spaces
	namespaces  map[string]string
	hostname    string
	shmKey      int    // a SysV shared memory segment's key
	devShmFile  string // a file in the host's /dev/shm
}

func newHostView(t *testing.T) hostView {
	t.Helper()
	v := hostView{markerToken: fmt.Sprintf("%d.%d", 3600+rand.IntN(3600), os.Getpid()), hostOnly: []string{os.Args[0]},
		namespaces: map[string]string{}}
	marker := exec.Command("sleep", v.markerToken)
	if err := marker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = marker.Process.Kill(); _ = marker.Wait() })
	pid1, err := os.ReadFile("/proc/1/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	v.pid1 = strings.TrimSpace(strings.ReplaceAll(string(pid1), "\x00", " "))
	for _, ns := range []string{"pid", "ipc", "uts"} {
		if v.namespaces[ns], err = os.Readlink("/proc/self/ns/" + ns); err != nil {
			t.Fatal(err)
		}
	}
	if v.hostname, err = os.Hostname(); err != nil {
		t.Fatal(err)
	}
	for v.shmKey = 0x67740000 + os.Getpid()%0xffff; ; v.shmKey++ {
		id, err := unix.SysvShmGet(v.shmKey, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			t.Fatalf("create a SysV shared memory segment: %v", err)
		}
		t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
		break
	}
	f, err := os.CreateTemp("/dev/shm", "gauntlet-build-probe-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	v.devShmFile = filepath.Base(f.Name())
	return v
}

// probeDockerfile writes what a RUN step sees of processes, namespaces,
// the hostname and IPC into /probe of the image.
var probeDockerfile = "FROM scratch\nADD rootfs.tar /\nRUN [\"/bin/bash\", \"-c\", " + strconv.Quote(`set -e; mkdir /probe
for p in /proc/[0-9]*; do printf '%s %s\n' "${p#/proc/}" "$( { tr '\0' ' ' < $p/cmdline; } 2>/dev/null)"; done > /probe/ps
readlink /proc/self/ns/pid /proc/self/ns/ipc /proc/self/ns/uts > /probe/ns
cat /proc/sys/kernel/hostname > /probe/hostname
cat /proc/sysvipc/shm > /probe/sysvipc-shm
ls -A /dev/shm > /probe/dev-shm`) + "]\n"

// assertSeesOnlyItsOwn fails unless the probe files of a build show a PID
// namespace holding the build alone (buildah as pid 1), namespaces other
// than the host's, and none of the host's objects.
func (v hostView) assertSeesOnlyItsOwn(t *testing.T, files map[string]string) {
	t.Helper()
	ps := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(files["probe/ps"]), "\n") {
		pid, cmdline, _ := strings.Cut(line, " ")
		ps[pid] = strings.TrimSpace(cmdline)
	}
	if !strings.Contains(ps["1"], "buildah") {
		t.Errorf("pid 1 of the RUN step is %q, want the build's buildah (all: %v)", ps["1"], ps)
	}
	if ps["1"] == v.pid1 {
		t.Errorf("the RUN step's pid 1 is the host's (%q)", v.pid1)
	}
	for pid, cmdline := range ps {
		for _, hostOnly := range append([]string{v.markerToken}, v.hostOnly...) {
			if strings.Contains(cmdline, hostOnly) {
				t.Errorf("the RUN step sees host process %s: %q", pid, cmdline)
			}
		}
	}
	nsLinks := strings.Fields(files["probe/ns"])
	if len(nsLinks) != 3 {
		t.Fatalf("probe/ns = %q, want three namespace links", files["probe/ns"])
	}
	for i, ns := range []string{"pid", "ipc", "uts"} {
		if nsLinks[i] == v.namespaces[ns] {
			t.Errorf("the RUN step is in the host's %s namespace (%s)", ns, nsLinks[i])
		}
	}
	if got := strings.TrimSpace(files["probe/hostname"]); got == "" || got == v.hostname {
		t.Errorf("the RUN step's hostname is %q, want its own, not the host's %q", got, v.hostname)
	}
	for _, line := range strings.Split(files["probe/sysvipc-shm"], "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == strconv.Itoa(v.shmKey) {
			t.Errorf("the RUN step sees the host's SysV shared memory segment: %q", line)
		}
	}
	if strings.Contains(files["probe/dev-shm"], v.devShmFile) {
		t.Errorf("the RUN step sees the host's /dev/shm (%q lists %s)", files["probe/dev-shm"], v.devShmFile)
	}
}

// TestBuildRunStepsSeeOnlyTheirOwnProcesses: a Dockerfile's RUN step, as
// root and as a builder that is not root, is in PID, IPC and UTS
// namespaces of its own: it sees neither a process the test runs nor the
// test itself nor the host's pid 1, nor a SysV segment or /dev/shm file
// the test makes, and has its own hostname.
func TestBuildRunStepsSeeOnlyTheirOwnProcesses(t *testing.T) {
	requireRoot(t)
	host := newHostView(t)
	t.Run("root", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		b, err := New(Config{Dir: filepath.Join(dir, "buildah"), Import: keepLayout(out)})
		if err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		if _, err := b.Build(context.Background(), Request{Key: strings.Repeat("5b", 32), ContextDir: probeContext(t, dir),
			Dockerfile: []byte(probeDockerfile), Log: &log}); err != nil {
			t.Fatalf("Build: %v\n%s", err, log.String())
		}
		host.assertSeesOnlyItsOwn(t, layoutFiles(t, out))
	})
	t.Run("rootless", func(t *testing.T) {
		u, err := user.Lookup(rootlessAccount)
		if err != nil {
			t.Fatalf("the rootless build runs as the account %s, which `make deps` creates: %v", rootlessAccount, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// The account's own dir: a test's temp dirs are 0700 root's.
		dir, err := os.MkdirTemp("", "imagebuild-rootless-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		helper := filepath.Join(dir, "imagebuild.test")
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", self, helper).CombinedOutput(); err != nil {
			t.Fatalf("copy the test binary: %v: %s", err, out)
		}
		ctxDir := probeContext(t, dir)
		dockerfile := filepath.Join(dir, "Dockerfile")
		if err := os.WriteFile(dockerfile, []byte(probeDockerfile), 0o644); err != nil {
			t.Fatal(err)
		}
		// buildah's rootless runtime files, kept out of a shared /tmp/containers-user-<uid>.
		runtimeDir := filepath.Join(dir, "run")
		if err := os.Mkdir(runtimeDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("chown", "-R", u.Uid+":"+u.Gid, dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v: %s", err, out)
		}
		out := filepath.Join(dir, "out")
		spec, _ := json.Marshal(helperBuild{Dir: filepath.Join(dir, "buildah"), ContextDir: ctxDir, Dockerfile: dockerfile, Out: out})
		cmd := exec.Command(helper)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_RUNTIME_DIR=" + runtimeDir, buildAsEnv + "=" + string(spec)}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		if log, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the build as %s: %v\n%s", rootlessAccount, err, log)
		}
		rootlessHost := host
		rootlessHost.hostOnly = append(rootlessHost.hostOnly, helper)
		rootlessHost.assertSeesOnlyItsOwn(t, layoutFiles(t, out))
	})
}

// probeContext makes a build context in dir holding the Debian base
// rootfs (make base-images) as rootfs.tar.
func probeContext(t *testing.T, dir string) string {
	t.Helper()
	ctxDir := filepath.Join(dir, "context")
	if err := os.Mkdir(ctxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(testrootfs.BaseDir(), "debian-bookworm-minbase.tar")
	if out, err := exec.Command("cp", base, filepath.Join(ctxDir, "rootfs.tar")).CombinedOutput(); err != nil {
		t.Fatalf("the Debian base image (make base-images): %v: %s", err, out)
	}
	return ctxDir
}

// layoutFiles flattens the one image of an OCI layout.
func layoutFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("layout %s: %v, want one image", dir, err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return flatten(t, img)
}

// BenchmarkStepNamespaces is what the namespaces of a bud cost: a command
// (/bin/true in buildah's place) started as bud is (new PID, IPC, UTS and
// mount namespaces, /proc and /dev/shm mounted) against the same command
// started plainly.
func BenchmarkStepNamespaces(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Fatal("run as root: the namespaces are made by root here")
	}
	builder := &Builder{cfg: Config{Buildah: "/bin/true"}}
	for _, bc := range []struct {
		name      string
		runsSteps bool
	}{{"plain", false}, {"namespaces", true}} {
		b.Run(bc.name, func(b *testing.B) {
			program, argv := builder.cfg.Buildah, []string(nil)
			if bc.runsSteps {
				program, argv = builder.wrap(nil, false, true)
			}
			for b.Loop() {
				if out, err := exec.Command(program, argv...).CombinedOutput(); err != nil {
					b.Fatalf("%s: %v: %s", program, err, out)
				}
			}
		})
	}
}

// BenchmarkBudRunStep is a whole `buildah bud` of one RUN step (`RUN true`
// FROM the Debian base, no layer cache so the step runs every time),
// started plainly and in the namespaces Build starts it in.
func BenchmarkBudRunStep(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Fatal("run as root: the benchmark starts bud in namespaces only root makes here")
	}
	dir := b.TempDir()
	builder, err := New(Config{Dir: filepath.Join(dir, "buildah"), Import: keepLayout(filepath.Join(dir, "base")), Network: NetworkHost})
	if err != nil {
		b.Fatal(err)
	}
	ctxDir := filepath.Join(dir, "context")
	if err := os.Mkdir(ctxDir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Link(filepath.Join(testrootfs.BaseDir(), "debian-bookworm-minbase.tar"), filepath.Join(ctxDir, "rootfs.tar")); err != nil {
		b.Fatalf("the Debian base image (make base-images): %v", err)
	}
	baseKey := strings.Repeat("5c", 32)
	var log strings.Builder
	if _, err := builder.Build(context.Background(), Request{Key: baseKey, ContextDir: ctxDir, Dockerfile: []byte("FROM scratch\nADD rootfs.tar /\n"), Log: &log}); err != nil {
		b.Fatalf("build the base: %v\n%s", err, log.String())
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		b.Fatal(err)
	}
	files := map[string]string{"registries.conf": "", "policy.json": `{"default":[{"type":"insecureAcceptAnything"}]}`,
		"Dockerfile": "FROM localhost/gauntlet-build:" + shortKey(baseKey) + "\nRUN true\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	bud := append(builder.global(work), "bud", "--signature-policy", filepath.Join(work, "policy.json"), "--isolation", "chroot",
		"--pull=false", "-t", "localhost/bench:1", "-f", filepath.Join(work, "Dockerfile"), ctxDir)
	for _, bc := range []struct {
		name      string
		runsSteps bool
	}{{"plain", false}, {"namespaces", true}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				var log strings.Builder
				if err := builder.run(context.Background(), &log, bud, NetworkHost, bc.runsSteps); err != nil {
					b.Fatalf("bud: %v\n%s", err, log.String())
				}
			}
		})
	}
}

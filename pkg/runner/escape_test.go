package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/internal/testnetns"
	"github.com/gauntlet-bench/gauntlet/pkg/confine"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// escapeAllModes runs the escape suite's probes in every network mode, not
// only the public one (the mode with the most reach).
var escapeAllModes = flag.Bool("escape-all-modes", false, "run the escape suite in every network mode")

// The escape suite: a real agent (a static Go probe, run by the command
// harness) in a real image sandbox tries what an attacker would, and every
// attempt must be denied or contained, and the attempt recorded as the
// agent's failure. The fork bomb, disk fill and memory cases are the
// TestImageSandbox{PidsLimit,StorageLimit,MemoryLimit} tests.

// buildEscapeProbe builds testdata/escapeprobe static into a directory
// mounted at /opt/gauntlet/bin.
func buildEscapeProbe(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "escapeprobe"), "./testdata/escapeprobe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build escapeprobe: %v\n%s", err, out)
	}
	return dir
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])[:16]
}

func listNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return "[" + strings.Join(names, ",") + "]"
}

func TestEscapeSuite(t *testing.T) {
	img := testImage(t)
	bin := buildEscapeProbe(t)

	// What a platform keeps on the host, planted where the test can: a
	// data dir with a database and the operator token, and another
	// attempt's work dir with its files.
	host := t.TempDir()
	canaries := map[string]string{
		"data/gauntlet.db":                         "SQLite format 3 canary-db",
		"data/operator-token":                      "canary-operator-token",
		"data/blobs/runs/r1/result.json":           "{\"canary\":1}",
		"attempt-2/work/disk/upper/app/secret.txt": "canary-other-attempt",
		"attempt-2/out/artifacts/agent/log.txt":    "canary-other-attempt-log",
	}
	for rel, body := range canaries {
		p := filepath.Join(host, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The platform API and any other service on the host's loopback.
	var ports []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go testnetns.Serve(ln, "host-service")
		ports = append(ports, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}

	args := []string{"read=/etc/shadow", "read=/etc/hostname", "list=/root", "list=/etc", fmt.Sprintf("ptrace=%d", os.Getpid())}
	for rel := range canaries {
		args = append(args, "read="+filepath.Join(host, rel))
	}
	args = append(args, "list="+host, "list=/proc/1/root"+host)
	for _, p := range ports {
		args = append(args, "dial=127.0.0.1:"+p, "dial=10.0.2.2:"+p, "dial=[::1]:"+p)
	}
	command := StaticBinMount + "/escapeprobe " + strings.Join(args, " ") + " > /logs/agent/probe.txt"

	// What the sandbox may see is the image's own, never the host's.
	want := map[string]string{
		"read /etc/shadow":                    fileDigest(t, filepath.Join(img.Rootfs, "etc/shadow")),
		"list /root":                          listNames(t, filepath.Join(img.Rootfs, "root")),
		fmt.Sprintf("ptrace %d", os.Getpid()): "ESRCH",
		"list " + host:                        "ENOENT",
		"list /proc/1/root" + host:            "ENOENT",
		"mount":                               "EPERM",
		"remount_root":                        "EPERM",
		"clone_userns":                        "EPERM", // refused by the seccomp filter
		"clone_mountns":                       "EPERM",
		"clone_netns":                         "EPERM",
		"clone_pidns":                         "EPERM",
		"mknod":                               "ok",     // Docker's MKNOD: the device is created...
		"mknod_read":                          "EACCES", // ...but /tmp is nodev
	}
	if _, err := os.Stat(filepath.Join(img.Rootfs, "etc/hostname")); err != nil {
		want["read /etc/hostname"] = "ENOENT"
	} else {
		want["read /etc/hostname"] = fileDigest(t, filepath.Join(img.Rootfs, "etc/hostname"))
	}
	for rel := range canaries {
		want["read "+filepath.Join(host, rel)] = "ENOENT"
	}
	for _, p := range ports {
		for _, h := range []string{"127.0.0.1:", "10.0.2.2:", "[::1]:"} {
			want["dial "+h+p] = "unreachable"
		}
	}

	modes := []string{harbor.NetworkPublic}
	if *escapeAllModes {
		modes = append(modes, harbor.NetworkNone, harbor.NetworkAllowlist)
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := runImageTrial(t, command, img, Options{StaticBinDir: bin}, func(s *sandbox.Spec) { s.Network = mode })
			got := parseProbe(r.artifact(t, "agent/probe.txt"))
			t.Logf("probe answers:\n%s", r.artifact(t, "agent/probe.txt"))
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			// User namespaces: neither a clone flag nor unshare(1) may
			// make one (a user namespace hands its creator every
			// capability over the namespaces it then makes).
			for _, k := range []string{"clone_userns", "unshare_userns_syscall"} {
				if got[k] == "ok" || got[k] == "exit 0" {
					t.Errorf("%s = %q: the sandbox created a user namespace", k, got[k])
				}
			}
			// Raw sockets are Docker's NET_RAW, contained by the
			// sandbox's own network namespace: it has only its loopback
			// and, when public, slirp4netns's tap0.
			wantIfs := "lo"
			if mode == harbor.NetworkPublic {
				wantIfs = "lo,tap0"
			}
			if got["interfaces"] != wantIfs {
				t.Errorf("interfaces = %q, want %q", got["interfaces"], wantIfs)
			}
			if n, err := strconv.Atoi(got["visible_pids"]); err != nil || n > 10 {
				t.Errorf("visible_pids = %q, want the sandbox's few processes (a PID namespace of its own)", got["visible_pids"])
			}
			ex := r.result.ExceptionInfo
			if ex == nil || ex.ExceptionType != harbor.ExceptionAgentExit {
				t.Errorf("exception = %+v, want the agent's failure (%s)", ex, harbor.ExceptionAgentExit)
			}
		})
	}
	// The host is unchanged: every canary still holds what it held.
	for rel, body := range canaries {
		if data, err := os.ReadFile(filepath.Join(host, rel)); err != nil || string(data) != body {
			t.Errorf("host file %s changed: %q, %v", rel, data, err)
		}
	}
}

// emptyDigest is what the probe reads from a masked file: nothing.
const emptyDigest = "sha256:e3b0c44298fc1c14"

// kernelAttack is the part of the escape suite aimed at the host's kernel
// through /proc, /sys and syscalls, which must be refused in every
// isolation: its probe arguments and what this host has of each path.
type kernelAttack struct {
	args                  []string
	writable, maskedFiles []string // present on this host
	maskedDirs, absent    []string
	canary, dial          string // a host file and a host loopback address
}

// Kernel settings of every /proc/sys class, and the other read-only paths,
// opened for writing (never written: the open is the test).
var kernelSettings = []string{
	"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/printk_ratelimit_burst", "/proc/sys/kernel/modprobe",
	"/proc/sys/vm/overcommit_memory", "/proc/sys/vm/drop_caches",
	"/proc/sys/fs/file-max", "/proc/sys/fs/protected_symlinks",
	"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/core/somaxconn",
	"/proc/sys/user/max_user_namespaces",
	"/proc/sys/dev/tty/ldisc_autoload", "/proc/sys/debug/exception-trace", "/proc/sys/abi/vsyscall32",
	"/proc/sysrq-trigger", "/proc/irq/default_smp_affinity",
}

func newKernelAttack(t *testing.T) kernelAttack {
	t.Helper()
	var k kernelAttack
	for _, p := range kernelSettings {
		if _, err := os.Stat(p); err == nil {
			k.writable = append(k.writable, p)
			k.args = append(k.args, "openw="+p)
		} else {
			k.absent = append(k.absent, p)
		}
	}
	if len(k.writable) < 8 || k.writable[0] != "/proc/sys/kernel/core_pattern" {
		t.Fatalf("this host has too few of the kernel settings to attack: %v", k.writable)
	}
	for _, p := range confine.MaskedPaths {
		info, err := os.Stat(p)
		switch {
		case err != nil || strings.HasPrefix(p, "/sys/"):
			// /sys: the sandbox has no sysfs at all.
			k.absent = append(k.absent, p)
			k.args = append(k.args, "list="+p)
		case info.IsDir():
			k.maskedDirs = append(k.maskedDirs, p)
			k.args = append(k.args, "list="+p, "create="+p+"/escape")
		default:
			k.maskedFiles = append(k.maskedFiles, p)
			k.args = append(k.args, "read="+p)
		}
	}
	k.args = append(k.args, "list=/sys", "syscalls", fmt.Sprintf("ptrace=%d", os.Getpid()))
	// A host file and a host loopback service, as in TestEscapeSuite.
	k.canary = filepath.Join(t.TempDir(), "canary")
	if err := os.WriteFile(k.canary, []byte("canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go testnetns.Serve(ln, "host-service")
	k.dial = ln.Addr().String()
	k.args = append(k.args, "read="+k.canary, "dial="+k.dial)
	return k
}

// check asserts the probe's answers. hostRoot says the phase runs as uid 0
// of the host's user namespace, to whom /proc/sys's file modes allow
// writing: only the read-only mount can refuse it, with EROFS.
func (k kernelAttack) check(t *testing.T, got map[string]string, hostRoot bool) {
	t.Helper()
	for _, p := range k.writable {
		v := got["openw "+p]
		// /proc/sys/user answers only its user namespace's owner: EACCES
		// comes before the mount is asked.
		strict := hostRoot && !strings.HasPrefix(p, "/proc/sys/user/")
		if v == "ok" || v == "" || (strict && v != "EROFS") {
			t.Errorf("open %s for writing = %q, want refused (EROFS as root)", p, v)
		}
	}
	for _, p := range k.maskedFiles {
		if v := got["read "+p]; v != emptyDigest {
			t.Errorf("read masked %s = %q, want it empty (%s)", p, v, emptyDigest)
		}
	}
	for _, p := range k.maskedDirs {
		if v := got["list "+p]; v != "[]" {
			t.Errorf("list masked %s = %q, want []", p, v)
		}
		if v := got["create "+p+"/escape"]; v == "ok" || v == "" {
			t.Errorf("create in masked %s = %q, want refused", p, v)
		}
	}
	for _, p := range k.absent {
		if v, asked := got["list "+p]; asked && v != "ENOENT" {
			t.Errorf("list %s = %q, want ENOENT", p, v)
		}
	}
	if v := got[fmt.Sprintf("ptrace %d", os.Getpid())]; v != "ESRCH" {
		t.Errorf("ptrace of the test process = %q, want ESRCH (a PID namespace of its own)", v)
	}
	if v := got["read "+k.canary]; v != "ENOENT" {
		t.Errorf("read host file %s = %q, want ENOENT", k.canary, v)
	}
	if v := got["dial "+k.dial]; v != "unreachable" {
		t.Errorf("dial host loopback %s = %q, want unreachable", k.dial, v)
	}
	if v := got["list /sys"]; v != "[]" && v != "ENOENT" {
		t.Errorf("list /sys = %q, want no sysfs (an empty directory or none)", v)
	}
	for _, name := range []string{"keyctl", "add_key", "bpf", "perf_event_open", "init_module", "kexec_load", "setns",
		"userfaultfd", "clock_settime", "swapon", "reboot", "pivot_root", "acct", "umount2", "open_by_handle_at"} {
		if v := got["sys_"+name]; v != "EPERM" {
			t.Errorf("syscall %s = %q, want EPERM (Docker's seccomp profile)", name, v)
		}
	}
}

// TestEscapeSuiteKernelInterfaces attacks the host's kernel from every
// isolation the local platform runs: an image as root, an image as a
// non-root user, a rootless runner, and the host-rootfs development mode.
// A write to kernel.core_pattern from an image sandbox as root was open
// before /proc/sys was made read-only.
func TestEscapeSuiteKernelInterfaces(t *testing.T) {
	k := newKernelAttack(t)
	bin := buildSharedEscapeProbe(t)
	command := StaticBinMount + "/escapeprobe " + strings.Join(k.args, " ") + " > /logs/agent/probe.txt"
	hostSettings := map[string]string{}
	for _, p := range k.writable {
		if data, err := os.ReadFile(p); err == nil {
			hostSettings[p] = string(data)
		}
	}
	img := testImage(t)
	answers := func(t *testing.T, text string) map[string]string {
		t.Logf("probe answers:\n%s", text)
		return parseProbe(text)
	}
	t.Run("image as root", func(t *testing.T) {
		r := runImageTrial(t, command, img, Options{StaticBinDir: bin}, nil)
		k.check(t, answers(t, r.artifact(t, "agent/probe.txt")), true)
	})
	t.Run("image as a non-root user", func(t *testing.T) {
		img := img
		img.User = "agent"
		r := runImageTrial(t, command, img, Options{StaticBinDir: bin}, nil)
		k.check(t, answers(t, r.artifact(t, "agent/probe.txt")), false)
	})
	t.Run("host rootfs", func(t *testing.T) {
		spec := baseSpec(t, "command")
		spec.Command = command
		r := runTrial(t, spec, Options{Isolation: IsolationHostBwrap, StaticBinDir: bin})
		k.check(t, answers(t, r.artifact(t, "agent/probe.txt")), true)
	})
	t.Run("rootless runner", func(t *testing.T) {
		as := rootlessUser(t)
		spec := baseSpec(t, "command")
		spec.Command = command
		r := runRootless(t, as, spec, rootlessImage(t, as), "--static-bin-dir", bin)
		if r.code != sandbox.ExitOK {
			t.Fatalf("runner exit %d:\n%s", r.code, r.output)
		}
		k.check(t, answers(t, r.artifact(t, "agent/probe.txt")), false)
	})
	for p, before := range hostSettings {
		if data, err := os.ReadFile(p); err != nil || string(data) != before {
			t.Errorf("host setting %s changed: %q, was %q (%v)", p, data, before, err)
		}
	}
}

// buildSharedEscapeProbe builds the probe into a directory every account
// can read (the rootless runner runs as another user than the test).
func buildSharedEscapeProbe(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "escapeprobe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "escapeprobe"), "./testdata/escapeprobe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build escapeprobe: %v\n%s", err, out)
	}
	return dir
}

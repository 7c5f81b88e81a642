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

package runner

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/internal/testnetns"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// The rootless tests run the real sandbox-runner binary as an unprivileged
// account, as `gauntlet local` started by a user who is not root runs it:
// the runner enters a user namespace of its own and mounts the attempt's
// overlay there. `make deps` creates the account with subordinate ids (and
// installs uidmap and fuse-overlayfs); nobody (65534) has none.

// rootlessAccount is the unprivileged account with subordinate ids.
const rootlessAccount = "gauntlet-rootless"

type account struct{ uid, gid int }

func rootlessUser(t testing.TB) account {
	t.Helper()
	u, err := user.Lookup(rootlessAccount)
	if err != nil {
		t.Fatalf("the rootless tests run the runner as the account %s, which `make deps` creates (useradd --system, with subordinate ids): %v", rootlessAccount, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if _, ok := lookupSubordinate("/etc/subuid", []string{u.Username, u.Uid}); !ok {
		t.Fatalf("%s has no subordinate uids in /etc/subuid (make deps gives it some)", rootlessAccount)
	}
	for _, bin := range []string{"newuidmap", "fuse-overlayfs"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("the rootless tests need %s (make deps installs it: apt-get install uidmap fuse-overlayfs)", bin)
		}
	}
	return account{uid: uid, gid: gid}
}

var rootlessRootfs struct {
	sync.Mutex
	dirs map[int]string // by owner uid
}

// rootlessImage is the test image as an image store running as owner
// unpacks it: every file owner's (it cannot chown), so root's inside the
// runner's user namespace. The copy is kept per machine, like the test
// image itself.
func rootlessImage(t testing.TB, owner account) Image {
	t.Helper()
	img := testImage(t)
	o := &rootlessRootfs
	o.Lock()
	defer o.Unlock()
	if dir, ok := o.dirs[owner.uid]; ok {
		img.Rootfs = dir
		return img
	}
	dir := img.Rootfs + "-rootless-" + strconv.Itoa(owner.uid)
	if _, err := os.Stat(dir); err != nil {
		tmp := dir + ".tmp"
		_ = os.RemoveAll(tmp)
		if out, err := exec.Command("cp", "-a", img.Rootfs, tmp).CombinedOutput(); err != nil {
			t.Fatalf("copy the test rootfs: %v: %s", err, out)
		}
		owners := fmt.Sprintf("%d:%d", owner.uid, owner.gid)
		if out, err := exec.Command("chown", "-R", "-h", owners, tmp).CombinedOutput(); err != nil {
			t.Fatalf("chown the test rootfs: %v: %s", err, out)
		}
		if err := os.Rename(tmp, dir); err != nil {
			t.Fatal(err)
		}
	}
	if o.dirs == nil {
		o.dirs = map[int]string{}
	}
	o.dirs[owner.uid] = dir
	img.Rootfs = dir
	return img
}

type rootlessRun struct {
	trialRun
	output string // the runner's stdout and stderr
	code   int    // its exit code
}

// assertLimits fails unless result.json's limits hold each of want.
func (r rootlessRun) assertLimits(t *testing.T, want ...string) {
	t.Helper()
	var extra ResultExtra
	if err := json.Unmarshal(r.result.Extra[ResultExtraKey], &extra); err != nil {
		t.Fatalf("result.json %s: %v", ResultExtraKey, err)
	}
	all := strings.Join(extra.Limits, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("limits %q lack %q", extra.Limits, w)
		}
	}
}

// runRootless runs spec in img with the runner binary as the account as.
func runRootless(t testing.TB, as account, spec sandbox.Spec, img Image, args ...string) rootlessRun {
	t.Helper()
	return runBinary(t, &as, spec, img, args...)
}

// runBinary runs spec in img with the runner binary, as the account as
// (nil: as root, this test's own uid).
func runBinary(t testing.TB, as *account, spec sandbox.Spec, img Image, args ...string) rootlessRun {
	t.Helper()
	dir, err := os.MkdirTemp("", "rootless-trial-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if as != nil {
		if err := os.Chown(dir, as.uid, as.gid); err != nil {
			t.Fatal(err)
		}
	}
	if as != nil {
		// The checkout may sit under a directory only root can enter (a
		// fresh clone in mktemp's 0700 dir): the account gets its own copy
		// of the task.
		task := filepath.Join(dir, "task")
		if out, err := exec.Command("cp", "-r", spec.Task.Dir, task).CombinedOutput(); err != nil {
			t.Fatalf("copy the task: %v: %s", err, out)
		}
		if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", as.uid, as.gid), task).CombinedOutput(); err != nil {
			t.Fatalf("chown the task: %v: %s", err, out)
		}
		spec.Task.Dir = task
	}
	imgJSON, err := json.Marshal(img)
	if err != nil {
		t.Fatal(err)
	}
	imgFile := filepath.Join(dir, "image.json")
	if err := os.WriteFile(imgFile, imgJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(runnerBinary, append([]string{"--image", imgFile, "--out", out, "--work", filepath.Join(dir, "work")}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir, SpecEnv + "=" + string(specJSON)}
	if as != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(as.uid), Gid: uint32(as.gid), Groups: []uint32{}}}
	}
	output, err := cmd.CombinedOutput()
	r := rootlessRun{trialRun: trialRun{out: out}, output: string(output)}
	if exit, ok := err.(*exec.ExitError); ok {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("sandbox-runner: %v", err)
	}
	if r.code == sandbox.ExitOK {
		if r.result, err = harbor.ReadTrialResult(filepath.Join(out, "result.json")); err != nil {
			t.Fatalf("read result.json: %v\nrunner output:\n%s", err, output)
		}
	}
	return r
}

const rootlessProbe = `{
echo "user=$(id -u):$(id -g)"
echo "cwd=$(pwd)"
echo "image_var=$IMAGE_VAR"
echo "tests=$([ -e /tests ] && echo visible || echo absent)"
echo "capeff=$(grep CapEff /proc/self/status | cut -f2)"
echo "etc_write=$(touch /etc/probe 2>/dev/null && echo yes || echo no)"
echo "rm_image_dir=$(rm -rf /etc/default && mkdir /etc/default && [ -z "$(ls -A /etc/default)" ] && echo yes || echo no)"
echo "root_owner=$(stat -c %u /etc)"
echo "nnp=$(grep NoNewPrivs /proc/self/status | cut -f2)"
echo "earlier=$([ -e /etc/earlier-attempt ] && echo visible || echo absent)"
} > /logs/agent/probe.txt
touch /etc/earlier-attempt
echo gauntlet > /app/answer.txt`

func TestRootlessImageSandbox(t *testing.T) {
	as := rootlessUser(t)
	img := rootlessImage(t, as)
	tests := []struct {
		name, overlay, user, driver string
		want                        map[string]string
	}{
		{name: "kernel overlay, root user", overlay: OverlayKernel, driver: "kernel overlayfs", want: map[string]string{
			"user": "0:0", "capeff": "00000000a80425fb", "etc_write": "yes", "rm_image_dir": "yes"}},
		{name: "fuse-overlayfs, root user", overlay: OverlayFuse, driver: "fuse-overlayfs", want: map[string]string{
			"user": "0:0", "capeff": "00000000a80425fb", "etc_write": "yes", "rm_image_dir": "yes"}},
		{name: "kernel overlay, non-root user", overlay: OverlayKernel, user: "agent", driver: "kernel overlayfs", want: map[string]string{
			"user": "1000:1000", "capeff": "0000000000000000", "etc_write": "no", "rm_image_dir": "no"}},
		{name: "fuse-overlayfs, non-root user", overlay: OverlayFuse, user: "agent", driver: "fuse-overlayfs", want: map[string]string{
			"user": "1000:1000", "capeff": "0000000000000000", "etc_write": "no", "rm_image_dir": "no"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img := img
			img.User = tc.user
			spec := baseSpec(t, "command")
			spec.Command = rootlessProbe
			// Twice: the second attempt must not see the first's changes.
			for attempt := 1; attempt <= 2; attempt++ {
				r := runRootless(t, as, spec, img, "--overlay", tc.overlay, "--pids-limit", "200")
				if r.code != sandbox.ExitOK {
					t.Fatalf("attempt %d: runner exit %d:\n%s", attempt, r.code, r.output)
				}
				want := map[string]string{"cwd": "/app", "image_var": "from-image", "tests": "absent", "root_owner": "0", "nnp": "1", "earlier": "absent"}
				for k, v := range tc.want {
					want[k] = v
				}
				if diff := cmp.Diff(want, parseProbe(r.artifact(t, "agent/probe.txt"))); diff != "" {
					t.Errorf("attempt %d: probe inside the rootless sandbox (-want +got):\n%s", attempt, diff)
				}
				if tc.user == "" && (r.result.VerifierResult == nil || r.result.VerifierResult.Rewards["reward"] != 1) {
					t.Errorf("attempt %d: verifier result = %+v, want reward 1 (the verifier phase ran in the image too)", attempt, r.result.VerifierResult)
				}
				if log := r.artifact(t, "runner.log"); !strings.Contains(log, "overlay="+strconv.Quote(tc.driver)) && !strings.Contains(log, "overlay="+tc.driver+"\n") {
					t.Errorf("attempt %d: runner.log does not name the overlay driver %q:\n%s", attempt, tc.driver, log)
				}
				wantLimits := []string{"rootless: root is the runner's uid, uids 1-65536 its subordinate ids",
					"storage 10240 MB NOT enforced (rootless runner", "memory limit 256 MB NOT enforced (rootless runner"}
				if tc.user != "" {
					wantLimits = append(wantLimits, "pids limit 200 applied (RLIMIT_NPROC of the agent uid")
				}
				r.assertLimits(t, wantLimits...)
			}
			for _, f := range []string{"etc/probe", "etc/earlier-attempt"} {
				if _, err := os.Lstat(filepath.Join(img.Rootfs, f)); err == nil {
					t.Errorf("the image's cached rootfs was written: %s exists", f)
				}
			}
			if _, err := os.Stat(filepath.Join(img.Rootfs, "etc/default/useradd")); err != nil {
				t.Errorf("the image's cached rootfs lost a file the attempt removed: %v", err)
			}
		})
	}
}

func TestRootlessImageSandboxNetworkModes(t *testing.T) {
	as := rootlessUser(t)
	img := rootlessImage(t, as)
	probe := networkProbe(t)
	for mode, reach := range map[string][2]string{harbor.NetworkPublic: {"hello-from-netns", "1"}, harbor.NetworkNone: {"unreachable", "0"}} {
		t.Run(mode, func(t *testing.T) {
			spec := baseSpec(t, "command")
			spec.Command, spec.Network = probe, mode
			r := runRootless(t, as, spec, img)
			if r.code != sandbox.ExitOK {
				t.Fatalf("runner exit %d:\n%s", r.code, r.output)
			}
			want := map[string]string{"netns": reach[0], "resolv": reach[1], "host_loopback": "unreachable", "slirp_host": "unreachable"}
			if diff := cmp.Diff(want, parseProbe(r.artifact(t, "agent/probe.txt"))); diff != "" {
				t.Errorf("network in the rootless sandbox (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRootlessAllowlistGoesThroughTheEgressProxy: the egress proxy listens
// in a rootless sandbox's network (the runner, root of its own user
// namespace, enters it) and lets through only the allowed host.
func TestRootlessAllowlistGoesThroughTheEgressProxy(t *testing.T) {
	as := rootlessUser(t)
	img := rootlessImage(t, as)
	nsHost, nsPort, _ := net.SplitHostPort(testnetns.Server(t, "hello-from-netns"))
	probe := fmt.Sprintf(proxyProbeFuncs+`
{ echo "allowed=$(proxy %s:%s)"; echo "not_allowed=$(proxy 10.213.250.9:80)"; echo "direct=$(direct %s %s)"; } > /logs/agent/probe.txt`,
		nsHost, nsPort, nsHost, nsPort)
	spec := baseSpec(t, "command")
	spec.Task.Dir = allowlistTask(t, nsHost)
	spec.Network = harbor.NetworkAllowlist
	spec.Command = probe
	r := runRootless(t, as, spec, img)
	if r.code != sandbox.ExitOK {
		t.Fatalf("runner exit %d:\n%s", r.code, r.output)
	}
	want := map[string]string{"allowed": "hello-from-netns", "not_allowed": "HTTP/1.1 403", "direct": "unreachable"}
	if diff := cmp.Diff(want, parseProbe(r.artifact(t, "agent/probe.txt"))); diff != "" {
		t.Errorf("allowlist egress in the rootless sandbox (-want +got):\n%s", diff)
	}
}

func TestRootlessWithoutSubordinateIDsRunsRootAndRefusesOtherUsers(t *testing.T) {
	rootlessUser(t) // the tools it checks for
	nobody := account{uid: 65534, gid: 65534}
	img := rootlessImage(t, nobody)
	spec := baseSpec(t, "command")
	spec.Command = `{ echo "user=$(id -u):$(id -g)"; echo "etc_write=$(touch /etc/probe 2>/dev/null && echo yes || echo no)"; } > /logs/agent/probe.txt`
	r := runRootless(t, nobody, spec, img)
	if r.code != sandbox.ExitOK {
		t.Fatalf("runner exit %d:\n%s", r.code, r.output)
	}
	if diff := cmp.Diff(map[string]string{"user": "0:0", "etc_write": "yes"}, parseProbe(r.artifact(t, "agent/probe.txt"))); diff != "" {
		t.Errorf("probe (-want +got):\n%s", diff)
	}
	r.assertLimits(t, "rootless: root is the runner's uid, no other uid (no subordinate ids)")

	img.User = "agent"
	r = runRootless(t, nobody, spec, img)
	if r.code != sandbox.ExitInfra || !strings.Contains(r.output, `the image user \"agent\" (uid 1000, gid 1000) does not exist in the rootless runner's user namespace`) {
		t.Errorf("non-root image user without subordinate ids: exit %d, want %d and an error naming the user and the fix:\n%s", r.code, sandbox.ExitInfra, r.output)
	}
}

// BenchmarkTrialThroughTheRunnerBinary times whole trials (environment
// setup, an agent phase running true, the fixture's verifier, teardown)
// of the sandbox-runner binary: as root (kernel overlay on the attempt's
// own ext4, cgroups) and rootless (its own user namespace; kernel overlay
// or fuse-overlayfs, no quota filesystem).
func BenchmarkTrialThroughTheRunnerBinary(b *testing.B) {
	as := rootlessUser(b)
	spec := baseSpec(b, "command")
	spec.Command = "echo gauntlet > /app/answer.txt"
	cases := []struct {
		name string
		as   *account
		img  Image
		args []string
	}{
		{name: "root", img: testImage(b)},
		{name: "rootless-kernel", as: &as, img: rootlessImage(b, as), args: []string{"--overlay", OverlayKernel}},
		{name: "rootless-fuse", as: &as, img: rootlessImage(b, as), args: []string{"--overlay", OverlayFuse}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				r := runBinary(b, c.as, spec, c.img, c.args...)
				if r.code != sandbox.ExitOK || r.result.VerifierResult == nil || r.result.VerifierResult.Rewards["reward"] != 1 {
					b.Fatalf("trial: exit %d, verifier %+v:\n%s", r.code, r.result.VerifierResult, r.output)
				}
			}
		})
	}
}

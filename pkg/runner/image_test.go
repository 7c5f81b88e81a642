package runner

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/internal/testnetns"
	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// The image tests run real phases in a real image: the Debian minbase
// rootfs the images branch builds with mmdebstrap (make base-images),
// unpacked once per machine into a test image with a few additions, then
// used as the lower of every attempt's overlay, exactly as the image
// store's cache entry is.

// testImage returns the test image (see internal/testrootfs).
func testImage(t testing.TB) Image {
	t.Helper()
	requireBwrap(t)
	return Image{
		Ref: "test/minbase:" + testrootfs.Version, Rootfs: testrootfs.Dir(t),
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "IMAGE_VAR=from-image"},
		WorkingDir: "/app",
	}
}

// runImageTrial runs command as the fixture task's agent in img.
func runImageTrial(t *testing.T, command string, img Image, opts Options, edit func(*sandbox.Spec)) trialRun {
	t.Helper()
	spec := baseSpec(t, "command")
	spec.Command = command
	if edit != nil {
		edit(&spec)
	}
	opts.Image = &img
	opts.Isolation = IsolationBwrap
	r := runTrial(t, spec, opts)
	assertNoMountsUnder(t, filepath.Dir(r.out))
	return r
}

// assertNoMountsUnder fails if any mount of the attempt survived it.
func assertNoMountsUnder(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir) {
			t.Errorf("mount %s left behind after the attempt", fields[4])
		}
	}
}

const imageProbe = `{
echo "user=$(id -u):$(id -g)"
echo "home=$HOME"
echo "cwd=$(pwd)"
echo "image_var=$IMAGE_VAR"
echo "tool=$(image-tool)"
echo "tests=$([ -e /tests ] && echo visible || echo absent)"
echo "solution=$([ -e /solution ] && echo visible || echo absent)"
echo "host_bwrap=$([ -e /usr/bin/bwrap ] && echo visible || echo absent)"
echo "seed=$(cat /app/seed.txt)"
echo "tmp=$(stat -c %a /tmp)"
echo "capeff=$(grep CapEff /proc/self/status | cut -f2)"
echo "etc_write=$(touch /etc/probe 2>/dev/null && echo yes || echo no)"
echo "chown=$(touch /tmp/c && chown 0:0 /tmp/c 2>/dev/null && chown 1000:1000 /tmp/c 2>/dev/null && echo yes || echo no)"
echo "root_owner=$(stat -c %u /etc)"
echo "sysrq=$( (echo h > /proc/sysrq-trigger) 2>/dev/null && echo writable || echo denied)"
echo "logs=$([ -d /logs/artifacts ] && [ -w /logs/agent ] && echo ok || echo missing)"
echo "nnp=$(grep NoNewPrivs /proc/self/status | cut -f2)"
echo "capbnd=$(grep CapBnd /proc/self/status | cut -f2)"
echo "userns=$(readlink /proc/self/ns/user)"
echo "uid_map=$(cat /proc/self/uid_map | tr -s ' ' | sed 's/^ //')"
} > /logs/agent/probe.txt`

func TestImageSandboxAppliesTheImageConfig(t *testing.T) {
	img := testImage(t)
	tests := []struct {
		name string
		user string
		want map[string]string
	}{
		{name: "root user gets Docker's capabilities", user: "", want: map[string]string{
			"user": "0:0", "home": "/root", "capeff": "00000000a80425fb", "capbnd": "00000000a80425fb", "etc_write": "yes", "chown": "yes",
			"userns": "the host's",
		}},
		// In a user namespace of its own, mapped identically: the host's
		// uid 1000 and the image files' real owners (root_owner 0).
		{name: "non-root user", user: "agent", want: map[string]string{
			"user": "1000:1000", "home": "/home/agent", "capeff": "0000000000000000", "capbnd": "0000000000000000", "etc_write": "no", "chown": "no",
			"userns": "its own",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img := img
			img.User = tc.user
			r := runImageTrial(t, imageProbe, img, Options{}, nil)
			want := map[string]string{
				"cwd": "/app", "image_var": "from-image", "tool": "image-tool", "tests": "absent", "solution": "absent",
				"host_bwrap": "absent", "seed": "seed", "tmp": "1777", "root_owner": "0", "sysrq": "denied", "logs": "ok", "nnp": "1",
				"uid_map": "0 0 4294967295",
			}
			for k, v := range tc.want {
				want[k] = v
			}
			got := parseProbe(r.artifact(t, "agent/probe.txt"))
			host, err := os.Readlink("/proc/self/ns/user")
			if err != nil {
				t.Fatal(err)
			}
			if got["userns"] == host {
				got["userns"] = "the host's"
			} else if strings.HasPrefix(got["userns"], "user:[") {
				got["userns"] = "its own"
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("probe inside the image sandbox (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImageSandboxCreatesAMissingWorkingDir(t *testing.T) {
	img := testImage(t)
	img.WorkingDir = "/srv/work/here"
	img.User = "agent"
	r := runImageTrial(t, `{ echo "cwd=$(pwd)"; echo "owner=$(stat -c %u .)"; } > /logs/agent/probe.txt`, img, Options{}, nil)
	if diff := cmp.Diff(map[string]string{"cwd": "/srv/work/here", "owner": "1000"}, parseProbe(r.artifact(t, "agent/probe.txt"))); diff != "" {
		t.Errorf("working dir (-want +got):\n%s", diff)
	}
}

func TestImageSandboxOraclePassesAndSeesTestsOnlyInTheVerifier(t *testing.T) {
	img := testImage(t)
	spec := baseSpec(t, "oracle")
	r := runTrial(t, spec, Options{Image: &img, Isolation: IsolationBwrap})
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("oracle reward = %v, want 1 (exception %+v)", got, r.result.ExceptionInfo)
	}
	if _, err := os.Stat(filepath.Join(img.Rootfs, "app", "answer.txt")); err == nil {
		t.Error("the oracle's /app/answer.txt reached the image's cached rootfs")
	}
}

func TestImageSandboxAttemptsAreIsolated(t *testing.T) {
	img := testImage(t)
	write := `echo one > /etc/attempt-marker; echo one > /app/attempt.txt; echo one > /tmp/attempt.txt; rm /app/seed.txt`
	runImageTrial(t, write, img, Options{}, nil)
	read := `{ for f in /etc/attempt-marker /app/attempt.txt /tmp/attempt.txt /app/seed.txt; do echo "$f=$([ -e $f ] && echo present || echo absent)"; done; } > /logs/agent/probe.txt`
	r := runImageTrial(t, read, img, Options{}, nil)
	want := map[string]string{"/etc/attempt-marker": "absent", "/app/attempt.txt": "absent", "/tmp/attempt.txt": "absent", "/app/seed.txt": "present"}
	if diff := cmp.Diff(want, parseProbe(r.artifact(t, "agent/probe.txt"))); diff != "" {
		t.Errorf("second attempt sees the first one's changes (-want +got):\n%s", diff)
	}
	for _, f := range []string{"etc/attempt-marker", "app/attempt.txt"} {
		if _, err := os.Stat(filepath.Join(img.Rootfs, f)); err == nil {
			t.Errorf("%s reached the image's cached rootfs", f)
		}
	}
	if _, err := os.Stat(filepath.Join(img.Rootfs, "app", "seed.txt")); err != nil {
		t.Errorf("the first attempt's rm reached the cache: %v", err)
	}
}

func TestImageSandboxKeepsTheDiffWhenAsked(t *testing.T) {
	img := testImage(t)
	r := runImageTrial(t, `echo changed > /app/new.txt; rm /app/seed.txt`, img, Options{KeepDiff: true}, nil)
	out, err := exec.Command("tar", "-tzf", filepath.Join(r.out, ArtifactsDir, DiffArtifact)).CombinedOutput()
	if err != nil {
		t.Fatalf("diff artifact: %v: %s", err, out)
	}
	for _, want := range []string{"app/new.txt", "app/.wh.seed.txt"} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("diff artifact lacks %s; it holds:\n%s", want, out)
		}
	}
}

func TestImageSandboxMemoryLimitIsAnOOMAgentError(t *testing.T) {
	img := testImage(t)
	r := runImageTrial(t, `head -c 400000000 /dev/zero | tail > /dev/null`, img, Options{}, func(s *sandbox.Spec) { s.MemoryMB = 64 })
	ex := r.result.ExceptionInfo
	if ex == nil || ex.ExceptionType != harbor.ExceptionAgentOOM || !strings.HasPrefix(ex.ExceptionMessage, "oom:") {
		t.Errorf("exception = %+v, want %s with an oom: message", ex, harbor.ExceptionAgentOOM)
	}
}

func TestImageSandboxPidsLimitContainsAForkBomb(t *testing.T) {
	img := testImage(t)
	// A bounded fork bomb: 200 sleepers where 40 processes are allowed
	// (perl-base is in every Debian image; its fork fails at once where
	// bash's retries for seconds).
	bomb := `perl -e 'my @kids; for (1..200) { my $p = fork(); last unless defined $p; if ($p == 0) { sleep 30; exit 0 } push @kids, $p }
print "forked=", scalar(@kids), "\n"; kill "KILL", @kids; waitpid($_, 0) for @kids' > /logs/agent/probe.txt`
	r := runImageTrial(t, bomb, img, Options{PidsLimit: 40}, nil)
	forked, err := strconv.Atoi(parseProbe(r.artifact(t, "agent/probe.txt"))["forked"])
	if err != nil || forked >= 40 || forked < 10 {
		t.Errorf("processes the bomb forked = %d (%v), want between 10 and the limit 40", forked, err)
	}
	if log := r.artifact(t, "runner.log"); !strings.Contains(log, "pids limit 40 applied") {
		t.Errorf("runner.log does not record the pids limit:\n%s", log)
	}
}

func TestImageSandboxStorageLimitIsTheAgentsENOSPC(t *testing.T) {
	img := testImage(t)
	fill := `dd if=/dev/zero of=/app/big bs=1M count=200 2> /logs/agent/app.txt; dd if=/dev/zero of=/tmp/big bs=1M count=200 2> /logs/agent/tmp.txt; exit 1`
	r := runImageTrial(t, fill, img, Options{StorageMB: 64}, nil)
	for _, f := range []string{"agent/app.txt", "agent/tmp.txt"} {
		if got := r.artifact(t, f); !strings.Contains(got, "No space left on device") {
			t.Errorf("%s = %q, want ENOSPC", f, got)
		}
	}
	ex := r.result.ExceptionInfo
	if ex == nil || ex.ExceptionType != harbor.ExceptionAgentExit || !strings.Contains(ex.ExceptionMessage, "storage limit is full") {
		t.Errorf("exception = %+v, want an agent exit naming the full storage limit", ex)
	}
	if log := r.artifact(t, "runner.log"); !strings.Contains(log, "64 MB (platform default)") {
		t.Errorf("runner.log does not record the storage limit:\n%s", log)
	}
}

// networkProbe starts a server in a namespace the test makes and one on
// the host's loopback, and returns an agent command writing to
// /logs/agent/probe.txt what it reaches: netns, host_loopback, slirp_host
// (the host through slirp's gateway) and resolv (nameservers configured).
func networkProbe(t *testing.T) string {
	t.Helper()
	nsAddr := testnetns.Server(t, "hello-from-netns")
	hostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hostLn.Close() })
	go testnetns.Serve(hostLn, "host-loopback")
	hostPort := strconv.Itoa(hostLn.Addr().(*net.TCPAddr).Port)
	nsHost, nsPort, _ := net.SplitHostPort(nsAddr)
	return fmt.Sprintf(`get() { timeout 5 bash -c "exec 3<>/dev/tcp/$1/$2 && head -n1 <&3" 2>/dev/null || echo unreachable; }
{ echo "netns=$(get %s %s)"; echo "host_loopback=$(get 127.0.0.1 %s)"; echo "slirp_host=$(get 10.0.2.2 %s)"
  echo "resolv=$(grep -c nameserver /etc/resolv.conf)"; } > /logs/agent/probe.txt`, nsHost, nsPort, hostPort, hostPort)
}

func TestImageSandboxNetworkModes(t *testing.T) {
	img := testImage(t)
	probe := networkProbe(t)
	tests := []struct {
		mode, ceiling, user string
		want                map[string]string
	}{
		{mode: harbor.NetworkPublic, want: map[string]string{"netns": "hello-from-netns", "resolv": "1"}},
		// A non-root user's sandbox is in a user namespace of its own:
		// slirp4netns joins its network all the same.
		{mode: harbor.NetworkPublic, user: "agent", want: map[string]string{"netns": "hello-from-netns", "resolv": "1"}},
		{mode: harbor.NetworkNone, want: map[string]string{"netns": "unreachable", "resolv": "0"}},
		{mode: harbor.NetworkAllowlist, want: map[string]string{"netns": "unreachable", "resolv": "0"}},
		{mode: harbor.NetworkAllowlist, user: "agent", want: map[string]string{"netns": "unreachable", "resolv": "0"}},
		{mode: harbor.NetworkPublic, ceiling: harbor.NetworkNone, want: map[string]string{"netns": "unreachable", "resolv": "0"}},
	}
	for _, tc := range tests {
		t.Run(tc.mode+"/"+tc.ceiling+"/"+tc.user, func(t *testing.T) {
			img := img
			img.User = tc.user
			r := runImageTrial(t, probe, img, Options{NetworkCeiling: tc.ceiling}, func(s *sandbox.Spec) { s.Network = tc.mode })
			want := map[string]string{"host_loopback": "unreachable", "slirp_host": "unreachable"}
			for k, v := range tc.want {
				want[k] = v
			}
			if diff := cmp.Diff(want, parseProbe(r.artifact(t, "agent/probe.txt"))); diff != "" {
				t.Errorf("network from inside the sandbox (-want +got):\n%s", diff)
			}
		})
	}
}

// allowlistTask is the fixture task with [environment] allowed_hosts.
func allowlistTask(t *testing.T, hosts ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	if out, err := exec.Command("cp", "-r", fixtureDir(t), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture task: %v: %s", err, out)
	}
	toml, err := os.ReadFile(filepath.Join(dir, "task.toml"))
	if err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(hosts))
	for i, h := range hosts {
		quoted[i] = strconv.Quote(h)
	}
	toml = []byte(strings.Replace(string(toml), `network_mode = "no-network"`,
		`network_mode = "allowlist"`+"\nallowed_hosts = ["+strings.Join(quoted, ", ")+"]", 1))
	if err := os.WriteFile(filepath.Join(dir, "task.toml"), toml, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// proxyProbeFuncs are shell functions for allowlist probes: proxy HOST:PORT
// asks the egress proxy for a CONNECT and prints the server's reply or the
// proxy's status; direct HOST PORT connects without it. It heads a fmt
// format, hence %%s.
const proxyProbeFuncs = `proxy() { timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128; printf "CONNECT %%s HTTP/1.1\r\nHost: %%s\r\n\r\n" "$1" "$1" >&3; head -n3 <&3' _ "$1" 2>/dev/null | grep -o "hello-from-netns\|host-loopback\|HTTP/1.1 [0-9]*" | tail -1; }
direct() { timeout 5 bash -c "exec 3<>/dev/tcp/$1/$2 && head -n1 <&3" 2>/dev/null || echo unreachable; }`

func TestImageSandboxAllowlistGoesThroughTheEgressProxy(t *testing.T) {
	img := testImage(t)
	nsAddr := testnetns.Server(t, "hello-from-netns")
	nsHost, nsPort, _ := net.SplitHostPort(nsAddr)
	hostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostLn.Close()
	go testnetns.Serve(hostLn, "host-loopback")
	hostPort := strconv.Itoa(hostLn.Addr().(*net.TCPAddr).Port)
	probe := fmt.Sprintf(proxyProbeFuncs+`
{ echo "allowed=$(proxy %s:%s)"; echo "not_allowed=$(proxy 10.213.250.9:80)"; echo "loopback_allowed=$(proxy 127.0.0.1:%s)"
  echo "direct=$(direct %s %s)"; echo "proxy_env=$HTTPS_PROXY"; } > /logs/agent/probe.txt`, nsHost, nsPort, hostPort, nsHost, nsPort)
	spec := baseSpec(t, "command")
	spec.Task.Dir = allowlistTask(t, nsHost, "127.0.0.1")
	spec.Network = harbor.NetworkAllowlist
	spec.Command = probe
	// A non-root user's sandbox is in a user namespace of its own: the
	// proxy listens in its network all the same.
	for _, user := range []string{"", "agent"} {
		img := img
		img.User = user
		r := runTrial(t, spec, Options{Image: &img, Isolation: IsolationBwrap})
		want := map[string]string{"allowed": "hello-from-netns", "not_allowed": "HTTP/1.1 403", "loopback_allowed": "HTTP/1.1 502",
			"direct": "unreachable", "proxy_env": "http://127.0.0.1:3128"}
		if diff := cmp.Diff(want, parseProbe(r.artifact(t, "agent/probe.txt"))); diff != "" {
			t.Errorf("allowlist egress, user %q (-want +got):\n%s", user, diff)
		}
	}
}

func TestHostRootfsModeHidesTheHostsEtc(t *testing.T) {
	spec := baseSpec(t, "command")
	spec.Command = `{ echo "shadow=$(cat /etc/shadow >/dev/null 2>&1 && echo readable || echo unreadable)"
echo "users=$(cut -d: -f1 /etc/passwd | tr '\n' ' ')"; echo "hostname_file=$([ -e /etc/hostname ] && echo visible || echo absent)"
echo "ldcache=$([ -e /etc/ld.so.cache ] && echo visible || echo absent)"; } > /logs/agent/probe.txt`
	r := runTrial(t, spec, Options{Isolation: IsolationHostBwrap})
	want := map[string]string{"shadow": "unreadable", "users": "root nobody ", "hostname_file": "absent", "ldcache": "visible"}
	if diff := cmp.Diff(want, parseProbe(r.artifact(t, "agent/probe.txt"))); diff != "" {
		t.Errorf("host /etc inside the dev-mode sandbox (-want +got):\n%s", diff)
	}
	if log := r.artifact(t, "runner.log"); !strings.Contains(log, "development opt-in") {
		t.Errorf("runner.log does not warn about the host rootfs:\n%s", log)
	}
}

func TestResolveUser(t *testing.T) {
	img := testImage(t)
	tests := []struct {
		spec    string
		uid     uint32
		gid     uint32
		home    string
		wantErr bool
	}{
		{spec: "", uid: 0, gid: 0, home: "/root"},
		{spec: "root", uid: 0, gid: 0, home: "/root"},
		{spec: "agent", uid: 1000, gid: 1000, home: "/home/agent"},
		{spec: "1000", uid: 1000, gid: 1000, home: "/home/agent"},
		{spec: "agent:root", uid: 1000, gid: 0, home: "/home/agent"},
		{spec: "4242:4343", uid: 4242, gid: 4343, home: "/"},
		{spec: "nosuchuser", wantErr: true},
		{spec: "agent:nosuchgroup", wantErr: true},
	}
	for _, tc := range tests {
		u, err := resolveUser(img.Rootfs, tc.spec)
		if tc.wantErr {
			if err == nil {
				t.Errorf("resolveUser(%q) = %+v, want an error", tc.spec, u)
			}
			continue
		}
		if err != nil || u.uid != tc.uid || u.gid != tc.gid || u.home != tc.home {
			t.Errorf("resolveUser(%q) = %+v, %v; want uid %d gid %d home %s", tc.spec, u, err, tc.uid, tc.gid, tc.home)
		}
	}
}

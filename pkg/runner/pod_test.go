package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/internal/testnetns"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// The pod tests: an image trial is one running environment, as Harbor's
// container is. What the agent (or the oracle's solve.sh) leaves running
// serves the verifier on the same loopback; a timeout kills the phase's
// command, not the pod; each phase gets its own network mode; and nothing
// of the pod survives the trial.

// buildPodServer builds testdata/podserver static into a directory served
// at /opt/gauntlet/bin.
func buildPodServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "podserver"), "./testdata/podserver")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build podserver: %v\n%s", err, out)
	}
	return dir
}

// podVerifier queries 127.0.0.1:8080 (the pod's own loopback), records
// what it saw in /logs/verifier/seen.txt, and rewards an answer from the
// agent's server.
const podVerifier = `#!/usr/bin/env bash
out=/logs/verifier
answer=$(timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080 && printf "GET / HTTP/1.0\r\n\r\n" >&3 && tail -n1 <&3' 2>/dev/null)
{
  echo "answer=${answer%% pid=*}"
  echo "foreground=$(grep -l -a -e "${FOREGROUND_MARKER/./[.]}" /proc/[0-9]*/cmdline 2>/dev/null | wc -l)"
  echo "interfaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' ')"
  echo "netns=$(timeout 5 bash -c "exec 3<>/dev/tcp/${NETNS_HOST:-10.0.0.1}/${NETNS_PORT:-1} && head -n1 <&3" 2>/dev/null || echo unreachable)"
  echo "tests=$([ -f /tests/test.sh ] && echo visible || echo absent)"
} > $out/seen.txt
case "$answer" in
  served-by-the-agent*) echo 1 > $out/reward.txt ;;
  *) echo 0 > $out/reward.txt ;;
esac
`

// startServer is an agent's (or solve.sh's) command line starting the
// pod server in the background, as TB2's solutions start their daemons,
// then waiting until it answers.
func startServer(marker string) string {
	return fmt.Sprintf(`nohup %s/podserver -listen 127.0.0.1:8080 -body served-by-the-agent-%s > /dev/null 2>&1 &
for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null && break; sleep 0.1; done
`, StaticBinMount, marker)
}

// podTask is the fixture task with the pod verifier, solve (the
// oracle's solution) and, when given, the agent's and the verifier's
// network modes.
func podTask(t *testing.T, solve, agentNet, verifierNet string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	if out, err := exec.Command("cp", "-r", fixtureDir(t), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture task: %v: %s", err, out)
	}
	files := map[string]string{"tests/test.sh": podVerifier, "solution/solve.sh": "#!/usr/bin/env bash\n" + solve}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if agentNet != "" || verifierNet != "" {
		cfg, err := os.ReadFile(filepath.Join(dir, "task.toml"))
		if err != nil {
			t.Fatal(err)
		}
		toml := strings.Replace(string(cfg), "[agent]\n", fmt.Sprintf("[agent]\nnetwork_mode = %q\n", agentNet), 1)
		toml = strings.Replace(toml, "[verifier]\n", fmt.Sprintf("[verifier]\nnetwork_mode = %q\n", verifierNet), 1)
		if err := os.WriteFile(filepath.Join(dir, "task.toml"), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runPod runs one image trial of spec in img with the pod server at
// /opt/gauntlet/bin, then checks that nothing of its pod is left: no
// process with marker in its command line, no mount, no cgroup.
func runPod(t *testing.T, spec sandbox.Spec, img Image, bin, marker string) trialRun {
	t.Helper()
	r, err := runPodOrError(t, spec, img, bin, marker)
	if err != nil {
		t.Fatalf("Run(%s): %v", spec.Harness, err)
	}
	return r
}

// runPodOrError is runPod for a trial that may fail as the runner's
// error; the pod must be gone all the same.
func runPodOrError(t *testing.T, spec sandbox.Spec, img Image, bin, marker string) (trialRun, error) {
	t.Helper()
	dir := t.TempDir()
	opts := Options{Image: &img, Isolation: IsolationBwrap, SelfPath: runnerBinary, StaticBinDir: bin,
		WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out")}
	tr, runErr := run(context.Background(), spec, opts, harness.All())
	if pids := processesWithArg(t, marker); len(pids) > 0 {
		t.Errorf("processes of the pod alive after the trial: %v", pids)
	}
	assertNoMountsUnder(t, dir)
	sum := sha256.Sum256([]byte(spec.LaunchID + "\x00" + opts.WorkDir))
	name := "trial-" + hex.EncodeToString(sum[:8]) + "-pod"
	for _, c := range []string{"memory", "cpu", "pids", ""} {
		if _, err := os.Stat(filepath.Join(cgroupRoot, c, cgroupParent, name)); err == nil {
			t.Errorf("the pod's cgroup %s is left after the trial", filepath.Join(c, cgroupParent, name))
		}
	}
	return trialRun{result: tr, out: opts.OutDir}, runErr
}

// uniqueMarker is a string no other process on the machine has in its
// command line.
func uniqueMarker() string {
	return fmt.Sprintf("m%d%d", os.Getpid(), time.Now().UnixNano()%1e9)
}

func TestPodServerTheOracleLeavesRunningServesTheVerifier(t *testing.T) {
	bin := buildPodServer(t)
	img := testImage(t)
	for _, user := range []string{"", "agent"} {
		for _, h := range []string{"oracle", "nop"} {
			t.Run(h+"/user="+user, func(t *testing.T) {
				img := img
				img.User = user
				marker := uniqueMarker()
				spec := baseSpec(t, h)
				spec.Task.Dir = podTask(t, startServer(marker), "", "")
				spec.VerifierEnv = map[string]string{"FOREGROUND_MARKER": "no-such-process"}
				r := runPod(t, spec, img, bin, marker)
				seen := parseProbe(r.artifact(t, "verifier/seen.txt"))
				want, reward := "", 0.0
				if h == "oracle" {
					want, reward = "served-by-the-agent-"+marker, 1
				}
				if seen["answer"] != want {
					t.Errorf("the verifier got %q from 127.0.0.1:8080, want %q", seen["answer"], want)
				}
				if got := rewardOf(t, r.result); got != reward {
					t.Errorf("reward = %v, want %v", got, reward)
				}
			})
		}
	}
}

func TestPodPhaseTimeoutKillsTheCommandNotThePod(t *testing.T) {
	bin := buildPodServer(t)
	marker := uniqueMarker()
	fg := "1000." + marker[1:]
	spec := baseSpec(t, "command")
	spec.Task.Dir = podTask(t, "", "", "")
	// A daemon in a session of its own, then a foreground command that
	// outlives the agent's timeout; the agent also sees no /tests.
	spec.Command = "echo \"tests=$([ -e /tests ] && echo visible || echo absent)\" > /logs/agent/probe.txt\n" +
		strings.Replace(startServer(marker), "nohup ", "setsid ", 1) + "sleep " + fg
	spec.AgentTimeout = 2 * time.Second
	spec.VerifierEnv = map[string]string{"FOREGROUND_MARKER": fg}
	r := runPod(t, spec, testImage(t), bin, marker)
	if r.result.ExceptionInfo == nil || r.result.ExceptionInfo.ExceptionType != harbor.ExceptionAgentTimeout {
		t.Errorf("exception = %+v, want %s", r.result.ExceptionInfo, harbor.ExceptionAgentTimeout)
	}
	seen := parseProbe(r.artifact(t, "verifier/seen.txt"))
	want := map[string]string{"answer": "served-by-the-agent-" + marker, "foreground": "0", "tests": "visible"}
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("the verifier saw %s=%q, want %q (the timed-out command gone, the daemon serving)", k, seen[k], v)
		}
	}
	if got := parseProbe(r.artifact(t, "agent/probe.txt"))["tests"]; got != "absent" {
		t.Errorf("the agent saw /tests %s, want absent: it is uploaded only for the verifier", got)
	}
}

func TestPodSurvivesAnAgentThatSignalsEverything(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "command")
	// As root with CAP_KILL: every process of the pod but itself and pid
	// 1, then pid 1 itself with what would end a Go program.
	spec.Command = "echo gauntlet > /app/answer.txt; kill -9 -1; for s in TERM INT HUP QUIT ABRT USR1 SEGV; do kill -$s 1; done; echo " + marker
	r := runPod(t, spec, testImage(t), t.TempDir(), marker)
	if r.result.ExceptionInfo != nil {
		t.Errorf("exception = %+v, want none", r.result.ExceptionInfo)
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1: the pod (its pid 1) outlives the agent's signals and runs the verifier", got)
	}
}

func TestPodNetworkModeIsEachPhases(t *testing.T) {
	bin := buildPodServer(t)
	nsAddr := testnetns.Server(t, "hello-from-netns")
	nsHost, nsPort, _ := strings.Cut(nsAddr, ":")
	probe := fmt.Sprintf(`{ echo "interfaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' ')"
echo "netns=$(timeout 5 bash -c "exec 3<>/dev/tcp/%s/%s && head -n1 <&3" 2>/dev/null || echo unreachable)"; } > /logs/agent/probe.txt
`, nsHost, nsPort)
	tests := []struct {
		agent, verifier string
		agentSees       map[string]string
		verifierSees    map[string]string
	}{
		{agent: harbor.NetworkNone, verifier: harbor.NetworkPublic,
			agentSees:    map[string]string{"interfaces": "lo ", "netns": "unreachable"},
			verifierSees: map[string]string{"interfaces": "lo tap0 ", "netns": "hello-from-netns"}},
		{agent: harbor.NetworkPublic, verifier: harbor.NetworkNone,
			agentSees:    map[string]string{"interfaces": "lo tap0 ", "netns": "hello-from-netns"},
			verifierSees: map[string]string{"interfaces": "lo ", "netns": "unreachable"}},
	}
	for _, tc := range tests {
		t.Run(tc.agent+"-then-"+tc.verifier, func(t *testing.T) {
			marker := uniqueMarker()
			spec := baseSpec(t, "command")
			spec.Task.Dir = podTask(t, "", tc.agent, tc.verifier)
			spec.Command = probe + startServer(marker)
			spec.VerifierEnv = map[string]string{"FOREGROUND_MARKER": "no-such-process", "NETNS_HOST": nsHost, "NETNS_PORT": nsPort}
			r := runPod(t, spec, testImage(t), bin, marker)
			if diff := cmp.Diff(tc.agentSees, parseProbe(r.artifact(t, "agent/probe.txt"))); diff != "" {
				t.Errorf("the agent's network (-want +got):\n%s", diff)
			}
			seen := parseProbe(r.artifact(t, "verifier/seen.txt"))
			for k, v := range tc.verifierSees {
				if seen[k] != v {
					t.Errorf("the verifier saw %s=%q, want %q", k, seen[k], v)
				}
			}
			// The agent's server keeps serving on the pod's loopback
			// whatever the mode.
			if want := "served-by-the-agent-" + marker; seen["answer"] != want {
				t.Errorf("the verifier got %q from the agent's server, want %q", seen["answer"], want)
			}
		})
	}
}

// TestPodUploadsNeverFollowASymlinkToTheHost: a process the agent leaves
// running keeps pointing /tests and /etc/resolv.conf at a directory of the
// host while the runner writes them from the host side (the tests'
// upload, the verifier's resolver): nothing may land in the host's
// directory, whatever the race.
func TestPodUploadsNeverFollowASymlinkToTheHost(t *testing.T) {
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "canary"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := uniqueMarker()
	spec := baseSpec(t, "command")
	spec.Command = fmt.Sprintf(`echo gauntlet > /app/answer.txt
setsid bash -c 'while :; do rm -rf /tests; ln -sfn %[1]s /tests; ln -sfn %[1]s/resolv.conf /etc/resolv.conf; done; : %[2]s' < /dev/null > /dev/null 2>&1 &
sleep 0.2`, host, marker)
	// The race may also make the upload or the resolver's write fail (the
	// loop swaps /tests and /etc/resolv.conf under them, and the runner
	// refuses to follow the link): the runner's error, with nothing
	// written on the host.
	if _, err := runPodOrError(t, spec, testImage(t), t.TempDir(), marker); err != nil &&
		!strings.Contains(err.Error(), "upload /tests") && !strings.Contains(err.Error(), "/etc/resolv.conf") {
		t.Fatalf("Run: %v, want success or a refused write", err)
	}
	entries, err := os.ReadDir(host)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the host directory the pod's symlinks point at holds %v, want only the canary", names)
	}
}

// TestPodInitReapsOrphans: processes a phase orphans are re-parented to
// the pod's pid 1, which must reap them when they exit, or every short
// background job the agent starts stays a zombie (and a pid of the pod's
// pids limit) until the trial ends.
func TestPodInitReapsOrphans(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "command")
	spec.Command = `echo gauntlet > /app/answer.txt
for i in 1 2 3 4 5; do (sh -c 'exit 0' &); done
for i in $(seq 200); do
  n=$(grep -l '^State:[[:space:]]*Z' /proc/[0-9]*/status 2>/dev/null | wc -l)
  [ "$n" = 0 ] && break
  sleep 0.05
done
echo "zombies=$n" > /logs/agent/probe.txt; : ` + marker
	r := runPod(t, spec, testImage(t), t.TempDir(), marker)
	if got := parseProbe(r.artifact(t, "agent/probe.txt"))["zombies"]; got != "0" {
		t.Errorf("zombies in the pod = %q, want 0: pod-init reaps what the phase orphans", got)
	}
}

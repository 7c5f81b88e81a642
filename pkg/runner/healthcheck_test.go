package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// The [environment.healthcheck] tests: in an image trial's pod the agent
// starts only once the check has passed; failures in the start period do
// not count; a check that never passes is the runner's (infra) error
// naming the task, the command and its last output, and the pod is gone.

// healthcheckCounter is a check that passes at its nth attempt, counting
// its attempts in /app/.hc (the pod's filesystem, which lives on between
// attempts and into the agent).
func healthcheckCounter(n int) string {
	return fmt.Sprintf(`n=$(cat /app/.hc 2>/dev/null || echo 0); n=$((n+1)); echo $n > /app/.hc; echo "attempt $n"; [ $n -ge %d ]`, n)
}

// healthcheckTask is the fixture task with [environment.healthcheck] set
// to the TOML body hc.
func healthcheckTask(t *testing.T, hc string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	if out, err := exec.Command("cp", "-r", fixtureDir(t), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture task: %v: %s", err, out)
	}
	f, err := os.OpenFile(filepath.Join(dir, "task.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n[environment.healthcheck]\n" + hc + "\n"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// seenByAgent is the command agent that records the check's attempt count
// it found when it started, then solves the fixture.
const seenByAgent = "cat /app/.hc > /logs/agent/hc-seen.txt; echo gauntlet > /app/answer.txt"

func TestHealthcheckAgentStartsOnceTheCheckPasses(t *testing.T) {
	tests := []struct {
		name, hc string
		attempts string
	}{
		// Two failures count (retries 3 allows them), the third passes.
		{"retries", fmt.Sprintf("command = %q\ninterval_sec = 0.05\nretries = 3", healthcheckCounter(3)), "3"},
		// Five failures inside the start period do not count: retries = 1
		// would fail at the first one after it.
		{"start period", fmt.Sprintf("command = %q\nstart_period_sec = 3600\nstart_interval_sec = 0.05\nretries = 1", healthcheckCounter(6)), "6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := uniqueMarker()
			spec := baseSpec(t, "command")
			spec.Task.Dir = healthcheckTask(t, tt.hc)
			spec.Command = seenByAgent + "; echo " + marker
			r := runPod(t, spec, testImage(t), t.TempDir(), marker)
			if got := strings.TrimSpace(r.artifact(t, "agent/hc-seen.txt")); got != tt.attempts {
				t.Errorf("the agent found %q attempts of the check when it started, want %s", got, tt.attempts)
			}
			if got := rewardOf(t, r.result); got != 1 {
				t.Errorf("reward = %v, want 1", got)
			}
		})
	}
}

func TestHealthcheckThatNeverPassesIsAnInfraError(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "command")
	spec.Task.Name = "demo/never-healthy"
	spec.Task.Dir = healthcheckTask(t, fmt.Sprintf("command = %q\ninterval_sec = 0.05\nretries = 2",
		"echo not-ready-"+marker+"; echo the-port-is-closed >&2; exit 7"))
	spec.Command = "echo started > /logs/agent/started.txt; echo " + marker
	r, err := runPodOrError(t, spec, testImage(t), t.TempDir(), marker)
	if err == nil {
		t.Fatalf("Run = nil error, want the healthcheck's infra error; result %+v", r.result)
	}
	for _, want := range []string{"task demo/never-healthy: [environment.healthcheck]", "not-ready-" + marker, "the-port-is-closed", "exit code 7", "2 consecutive failures"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, serr := os.Stat(filepath.Join(r.out, "artifacts", "agent", "started.txt")); serr == nil {
		t.Error("the agent ran although the environment never became healthy")
	}
}

// An attempt that outlives timeout_sec is a failure (and is killed).
func TestHealthcheckAttemptTimeoutIsAFailure(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "command")
	spec.Task.Dir = healthcheckTask(t, fmt.Sprintf("command = %q\ntimeout_sec = 0.5\ninterval_sec = 0.05\nretries = 1", "echo hanging; sleep 3600"))
	spec.Command = "echo " + marker
	_, err := runPodOrError(t, spec, testImage(t), t.TempDir(), marker)
	if err == nil || !strings.Contains(err.Error(), "timed out after 500ms") || !strings.Contains(err.Error(), "hanging") {
		t.Fatalf("Run = %v, want the healthcheck's timeout named with its output", err)
	}
}

// The example task examples/demo-envs/ready-server in the python
// stand-in: its healthcheck starts the server and passes once it answers,
// so the oracle's single request succeeds; nop fails; the server is gone
// with the pod.
func TestHealthcheckExampleTask(t *testing.T) {
	dir, err := filepath.Abs("../../examples/demo-envs/ready-server")
	if err != nil {
		t.Fatal(err)
	}
	img := Image{Ref: "test/python3:" + testrootfs.Version, Rootfs: testrootfs.Of(t, testrootfs.Python3Tar),
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, WorkingDir: "/app"}
	for h, want := range map[string]float64{"oracle": 1, "nop": 0} {
		t.Run(h, func(t *testing.T) {
			spec := baseSpec(t, h)
			spec.Task = sandbox.TaskRef{Name: "ready-server", Dir: dir}
			// The server's command line names its directory: no such
			// process may outlive the trial.
			r := runPod(t, spec, img, t.TempDir(), "/var/www")
			if got := rewardOf(t, r.result); got != want {
				t.Errorf("reward = %v, want %v", got, want)
			}
		})
	}
}

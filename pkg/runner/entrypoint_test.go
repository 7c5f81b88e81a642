package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// The image's ENTRYPOINT runs as Harbor's container runs it: with
// `sh -c "sleep infinity"` as its arguments, [environment].env in its
// environment, before the agent and for the whole trial; an entrypoint
// that exits stops the trial as it stops Harbor's container.
// [environment].workdir is every main-environment command's cwd.

// editedTask is a copy of the fixture task with text appended to its
// task.toml and, when dropSolution, no solution/.
func editedTask(t *testing.T, appendTOML string, dropSolution bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	if out, err := exec.Command("cp", "-r", fixtureDir(t), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture task: %v: %s", err, out)
	}
	if dropSolution {
		if err := os.RemoveAll(filepath.Join(dir, "solution")); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "task.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n" + appendTOML + "\n"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startupEntrypoint writes what [environment].env gave it and its
// arguments, starts a background process that lives on (a stand-in for a
// server), prints its environment, then execs its arguments as Harbor's
// example entrypoints do. Like Harbor, the runner does not wait for an
// entrypoint's work: the test's agent waits for /tmp/entry-ready.
var startupEntrypoint = []string{"/bin/sh", "-c",
	`printf '%s' "$STARTUP_VALUE" > /tmp/startup; echo "$*" > /tmp/entry-args; ` +
		`(while :; do echo alive > /tmp/daemon; sleep 1; done) & env; echo entrypoint-ran; ` +
		`while [ ! -s /tmp/daemon ]; do sleep 0.05; done; touch /tmp/entry-ready; exec "$@"`, "entrypoint"}

func TestImageEntrypointRunsAsHarborsContainerDoes(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "command")
	spec.Task.Dir = editedTask(t, "[environment.env]\nSTARTUP_VALUE = \"from-task-env\"", false)
	spec.Secrets = map[string]secret.Value{"AGENT_ONLY_SECRET": secret.Value("s3cr3t-" + marker)}
	spec.Command = "while [ ! -e /tmp/entry-ready ]; do sleep 0.05; done; cat /tmp/startup > /logs/agent/startup.txt; cat /tmp/entry-args > /logs/agent/args.txt; " +
		"cat /tmp/daemon > /logs/agent/daemon.txt; echo gauntlet > /app/answer.txt; echo " + marker
	img := testImage(t)
	img.Entrypoint = startupEntrypoint
	r := runPod(t, spec, img, t.TempDir(), marker)
	if got := r.artifact(t, "agent/startup.txt"); got != "from-task-env" {
		t.Errorf("the entrypoint saw STARTUP_VALUE %q, want [environment.env]'s from-task-env", got)
	}
	if got := strings.TrimSpace(r.artifact(t, "agent/args.txt")); got != "sh -c sleep infinity" {
		t.Errorf("the entrypoint's arguments = %q, want Harbor's keep-alive command: sh -c sleep infinity", got)
	}
	if got := strings.TrimSpace(r.artifact(t, "agent/daemon.txt")); got != "alive" {
		t.Errorf("what the entrypoint started is not running when the agent runs: %q", got)
	}
	log := r.artifact(t, EntrypointLogFile)
	if !strings.Contains(log, "entrypoint-ran") || !strings.Contains(log, "IMAGE_VAR=from-image") {
		t.Errorf("entrypoint.log lacks its output or the image's environment:\n%s", log)
	}
	if strings.Contains(log, "AGENT_ONLY_SECRET") || strings.Contains(log, "s3cr3t") {
		t.Errorf("the entrypoint got the agent's secret:\n%s", log)
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1", got)
	}
}

// Without an entrypoint nothing is started (the pod's init is Harbor's
// `sleep infinity`), and no entrypoint.log is written.
func TestImageWithoutEntrypointStartsNothing(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "command")
	spec.Command = "echo gauntlet > /app/answer.txt; echo " + marker
	r := runPod(t, spec, testImage(t), t.TempDir(), marker)
	if _, err := os.Stat(filepath.Join(r.out, "artifacts", EntrypointLogFile)); err == nil {
		t.Error("entrypoint.log written for an image without an entrypoint")
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1", got)
	}
}

// An entrypoint that exits ends the trial as Harbor's stopped container
// does: the runner's error names the task, the entrypoint, its exit code
// and its output. The agent waits until the entrypoint's process is gone,
// so the verifier is the phase that finds it gone.
func TestImageEntrypointThatExitsStopsTheTrial(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "command")
	spec.Task.Name = "demo/short-lived"
	spec.Command = "while [ ! -s /tmp/entry.pid ]; do sleep 0.05; done; " +
		"while [ -e /proc/$(cat /tmp/entry.pid) ]; do sleep 0.05; done; echo gauntlet > /app/answer.txt; echo " + marker
	img := testImage(t)
	img.Entrypoint = []string{"/bin/sh", "-c", "echo $$ > /tmp/entry.pid.new; mv /tmp/entry.pid.new /tmp/entry.pid; echo leaving-" + marker + "; exit 3", "entrypoint"}
	r, err := runPodOrError(t, spec, img, t.TempDir(), marker)
	if err == nil {
		t.Fatalf("Run = nil error, want the entrypoint's exit; result %+v", r.result)
	}
	for _, want := range []string{"task demo/short-lived", "entrypoint", "exited with code 3", "leaving-" + marker} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// [environment].workdir is the cwd of the agent and the verifier, over the
// image's WORKDIR, and is created when the image lacks it.
func TestEnvironmentWorkdirIsThePhasesCwd(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "command")
	spec.Task.Dir = editedTask(t, "", false)
	// The verifier checks ./answer.txt relative to its cwd as well as the
	// fixture's /app/answer.txt.
	test := filepath.Join(spec.Task.Dir, "tests", "test.sh")
	if err := os.WriteFile(test, []byte("#!/bin/bash\npwd > /logs/verifier/cwd.txt\n[ -f answer.txt ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.ReadFile(filepath.Join(spec.Task.Dir, "task.toml"))
	if err != nil {
		t.Fatal(err)
	}
	toml := strings.Replace(string(f), "[environment]\n", "[environment]\nworkdir = \"/custom-workdir\"\n", 1)
	if err := os.WriteFile(filepath.Join(spec.Task.Dir, "task.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.Command = "pwd > /logs/agent/cwd.txt; echo gauntlet > answer.txt; echo " + marker
	r := runPod(t, spec, testImage(t), t.TempDir(), marker)
	if got := strings.TrimSpace(r.artifact(t, "agent/cwd.txt")); got != "/custom-workdir" {
		t.Errorf("the agent's cwd = %q, want [environment].workdir /custom-workdir (the image's WORKDIR is /app)", got)
	}
	if got := strings.TrimSpace(r.artifact(t, "verifier/cwd.txt")); got != "/custom-workdir" {
		t.Errorf("the verifier's cwd = %q, want /custom-workdir", got)
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1", got)
	}
}

// The oracle on a task without a solution ends as Harbor's does: an agent
// setup error, and no verifier run (Harbor's trial stops at the oracle's
// exception) — not a runner crash for want of an environment.
func TestOracleWithoutSolutionEndsUnverified(t *testing.T) {
	spec := baseSpec(t, "oracle")
	spec.Task.Dir = editedTask(t, "", true)
	r, err := runPodOrError(t, spec, testImage(t), t.TempDir(), uniqueMarker())
	if err != nil {
		t.Fatalf("Run = %v, want an ended trial", err)
	}
	if r.result.ExceptionInfo == nil || r.result.ExceptionInfo.ExceptionType != harbor.ExceptionAgentSetup {
		t.Errorf("exception = %+v, want %s", r.result.ExceptionInfo, harbor.ExceptionAgentSetup)
	}
	if r.result.VerifierResult != nil {
		t.Errorf("the verifier ran: %+v", r.result.VerifierResult)
	}
}

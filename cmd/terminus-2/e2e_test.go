package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// goBuild builds pkg statically (as make build does) into dir.
func goBuild(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// TestInTheImageSandbox runs terminus-2 as shipped — the static binary,
// mounted read-only at /opt/gauntlet/bin — through sandbox-runner in a real
// bubblewrap sandbox over the Debian test image, with the scripted mock
// model inside the sandbox (a sandbox never reaches the host's loopback;
// the gateway path is pkg/local's TestTerminus2ThroughTheLocalPlatform). The agent writes a file in three turns (one of them the
// confirmation), the verifier passes it, the runner reads usage.json, and
// the trajectory is collected as an artifact.
func TestInTheImageSandbox(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bubblewrap is required: apt-get install bubblewrap (%v)", err)
	}
	rootfs := testrootfs.Dir(t) // fails, saying how to get the image, when missing

	bin := t.TempDir()
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	runner := goBuild(t, t.TempDir(), "sandbox-runner", "github.com/gauntlet-bench/gauntlet/cmd/sandbox-runner")
	goBuild(t, bin, "terminus-2", ".")
	goBuild(t, bin, "mockmodel", "./testdata/mockmodel")

	const token = "tok-e2e-3f9a1c"
	answer := func(complete bool, keys ...string) modelmock.Turn {
		cmds := []map[string]any{}
		for _, k := range keys {
			cmds = append(cmds, map[string]any{"keystrokes": k, "duration": 20})
		}
		b, _ := json.Marshal(map[string]any{"analysis": "a", "plan": "p", "commands": cmds, "task_complete": complete})
		return modelmock.Turn{Text: string(b)}
	}
	script := modelmock.Script{APIKey: token, Usage: modelmock.Usage{Input: 1000, Cached: 600, Output: 50}, Turns: []modelmock.Turn{
		answer(false, "printf 'hello world\\n' > /app/greeting.txt\n"),
		answer(true, "cat /app/greeting.txt\n"),
		answer(true),
	}}
	data, _ := json.Marshal(script)
	if err := os.WriteFile(filepath.Join(bin, "script.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}

	task := t.TempDir()
	files := map[string]string{
		"task.toml": "schema_version = \"1.4\"\n[agent]\ntimeout_sec = 120.0\n[verifier]\ntimeout_sec = 30.0\n" +
			"[environment]\nnetwork_mode = \"no-network\"\n",
		"instruction.md": "Create /app/greeting.txt containing the line 'hello world'.\n",
		"tests/test.sh":  "#!/bin/bash\nif [ \"$(cat /app/greeting.txt)\" = 'hello world' ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	}
	for name, content := range files {
		path := filepath.Join(task, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The mock starts first; terminus-2 goes once its port answers.
	command := `/opt/gauntlet/bin/mockmodel 127.0.0.1:18080 /opt/gauntlet/bin/script.json &
for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/18080) 2>/dev/null && break; sleep 0.1; done
/opt/gauntlet/bin/terminus-2 --base-url http://127.0.0.1:18080/v1 --model scripted-1 --instruction-file "$GAUNTLET_INSTRUCTION_FILE" --logs-dir /logs/agent </dev/null`
	spec := sandbox.Spec{LaunchID: "run-1/slot-1/g0", RunID: "run-1", SlotID: "slot-1",
		Task: sandbox.TaskRef{Name: "greeting", Dir: task}, Harness: "command", Command: command, Model: "scripted-1",
		Network: harbor.NetworkNone, AgentTimeout: 2 * time.Minute, VerifierTimeout: 30 * time.Second}
	dir := t.TempDir()
	specFile, imageFile, out := filepath.Join(dir, "spec.json"), filepath.Join(dir, "image.json"), filepath.Join(dir, "out")
	writeJSON(t, specFile, spec)
	writeJSON(t, imageFile, map[string]any{"ref": "test/minbase:" + testrootfs.Version, "rootfs": rootfs,
		"env": []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, "working_dir": "/app"})

	cmd := exec.Command(runner, "--spec", specFile, "--out", out, "--work", filepath.Join(dir, "work"),
		"--image", imageFile, "--static-bin-dir", bin, "--isolation", "bwrap")
	cmd.Env = append(os.Environ(), "GAUNTLET_SECRET_TERMINUS_API_KEY="+token)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sandbox-runner: %v\n%s", err, b)
	}

	var res harbor.TrialResult
	raw, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	artifacts := filepath.Join(out, "artifacts")
	if res.VerifierResult == nil || res.VerifierResult.Rewards["reward"] != 1 {
		stdout, _ := os.ReadFile(filepath.Join(artifacts, "agent", "stdout.txt"))
		stderr, _ := os.ReadFile(filepath.Join(artifacts, "agent", "stderr.txt"))
		t.Fatalf("reward = %+v, exception %+v; want 1\nagent stdout:\n%s\nagent stderr:\n%s", res.VerifierResult, res.ExceptionInfo, stdout, stderr)
	}
	ar := res.AgentResult
	if ar == nil || ar.NInputTokens == nil || *ar.NInputTokens != 3000 || *ar.NCacheTokens != 1800 || *ar.NOutputTokens != 150 {
		t.Errorf("agent_result = %s, want 3000 input (1800 cached) and 150 output tokens from usage.json", mustJSON(ar))
	}
	doc, err := os.ReadFile(filepath.Join(artifacts, "agent", atif.FileName))
	if err != nil {
		t.Fatalf("no trajectory among the artifacts: %v", err)
	}
	if err := atif.ValidateJSON(doc); err != nil {
		t.Fatalf("trajectory: %v", err)
	}
	var tr atif.Trajectory
	if err := json.Unmarshal(doc, &tr); err != nil || atif.Validate(tr) != nil {
		t.Fatalf("trajectory: %v / %v", err, atif.Validate(tr))
	}
	if len(tr.Steps) != 4 || tr.ModelCalls() != 3 || tr.Steps[1].ToolCalls[0].FunctionName != "bash_command" ||
		tr.Steps[3].ToolCalls[0].FunctionName != "mark_task_complete" {
		t.Errorf("trajectory steps = %s", mustJSON(tr.Steps))
	}
	if !strings.Contains(tr.Steps[3].Message, `"task_complete":true`) || !strings.Contains(tr.Steps[2].Observation.Results[0].Content, "hello world") {
		t.Errorf("the confirmation turn does not show the file: %s", mustJSON(tr.Steps[2]))
	}
	// The token the agent held is nowhere in what was collected.
	err = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(token)) {
			t.Errorf("%s holds the model token", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

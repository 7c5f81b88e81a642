package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A separate verifier under container isolation (Fargate): the verifier
// is a second container of the task over the verifier's image, sharing
// only the hand-over volume with the task container. Stand-ins: two
// bubblewrap containers sharing a host directory at /gauntlet-handoff; the
// verifier's holds what examples/demo-envs/separate-grader's tests/
// Dockerfile puts in its image (/tests/test.sh, /grader/expected.txt). The
// oracle passes: the verifier sees the declared artifact at its own path
// and /logs/artifacts, and none of the agent's /app, /tmp or /logs/agent
// (its test.sh checks that). nop fails. The verifier runs as root, or as
// [verifier].user.
func TestContainerIsolationRunsASeparateVerifierContainer(t *testing.T) {
	e := newContainerEnv(t)
	task := filepath.Join("..", "..", "examples", "demo-envs", "separate-grader")
	image := t.TempDir() // the verifier image's own files
	tests, grader := filepath.Join(image, "tests"), filepath.Join(image, "grader")
	for _, d := range []string{tests, grader} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script, err := os.ReadFile(filepath.Join(task, "tests", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tests, "test.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(grader, "expected.txt"), []byte("words=9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerfile, _ := os.ReadFile(filepath.Join(task, "tests", "Dockerfile"))
	if !strings.Contains(string(dockerfile), `echo "words=9" > /grader/expected.txt`) {
		t.Fatalf("the example's verifier image changed; update the stand-in:\n%s", dockerfile)
	}
	// The verifier's user: root, else [verifier].user from the verifier
	// image's passwd (the stand-in's is the host's: nobody is 65534).
	if err := os.WriteFile(filepath.Join(tests, "test.sh"), append(script, []byte("echo \"verifier uid=$(id -u) tmp=$(stat -c %a /tmp)\"\n")...), 0o755); err != nil {
		t.Fatal(err)
	}
	asNobody := filepath.Join(t.TempDir(), "separate-grader")
	if out, err := exec.Command("cp", "-r", task, asNobody).CombinedOutput(); err != nil {
		t.Fatalf("copy the task: %v: %s", err, out)
	}
	editTOML(t, asNobody, "[verifier]\n", "[verifier]\nuser = \"nobody\"\n")
	for _, c := range []struct {
		name, task, harness string
		reward              float64
		uid                 string
	}{{"oracle", task, "oracle", 1, "0"}, {"nop", task, "nop", 0, "0"}, {"oracle as nobody", asNobody, "oracle", 1, "65534"}} {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			handoff := t.TempDir()
			args := append(wrapperArgs(runnerBinary), "--bind", handoff, "/gauntlet-handoff", "--chmod", "01777", "/tmp",
				"--ro-bind", tests, "/tests", "--ro-bind", grader, "/grader",
				"--", runnerBinary, VerifierContainerCommand, "--handoff", "/gauntlet-handoff")
			verifier := exec.Command("bwrap", args...)
			verifier.Env = []string{"PATH=" + sandboxPath}
			var vout strings.Builder
			verifier.Stdout, verifier.Stderr = &vout, &vout
			if err := verifier.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = verifier.Process.Kill(); _ = verifier.Wait() })
			// A container image's /tmp is world-writable (the oracle, as
			// the agent's uid, writes /tmp/report); the stand-in's is not.
			e.wrap = []string{"--bind", handoff, "/gauntlet-handoff", "--perms", "01777", "--dir", "/tmp/report"}
			e.flags = []string{"--verifier-handoff", "/gauntlet-handoff"}
			r := e.run(c.task, c.harness, "")
			if got := rewardOf(t, r.result); got != c.reward {
				t.Errorf("%s reward = %v, want %v\nverifier container: %s\n%s", c.harness, got, c.reward, vout.String(), r.output)
			}
			stdout := r.artifact(t, "verifier/test-stdout.txt")
			// /tmp keeps the image's mode though the hand-over added
			// /tmp/report under it.
			if !strings.Contains(stdout, "verifier uid="+c.uid+" tmp=1777\n") {
				t.Errorf("the verifier's output does not say uid %s and a world-writable /tmp:\n%s", c.uid, stdout)
			}
			if c.harness == "oracle" {
				for _, want := range []string{"seen: declared artifact /tmp/report/summary.txt", "seen: /logs/artifacts/answer.txt",
					"absent: /tmp/report/agent-only.txt", "absent: /app/agent-only.txt", "absent: /logs/agent/agent-note.txt"} {
					if !strings.Contains(stdout, want) {
						t.Errorf("the verifier's output lacks %q:\n%s", want, stdout)
					}
				}
				// The agent's own files stayed in the task container.
				if _, err := os.Stat(filepath.Join(r.app, "agent-only.txt")); err != nil {
					t.Errorf("the oracle left no /app/agent-only.txt in the task container (%v): the test proves nothing", err)
				}
			}
		})
	}
}

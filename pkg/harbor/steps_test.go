package harbor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeTask writes files (path → content) into a new task directory.
func writeTask(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const twoSteps = `multi_step_reward_strategy = "final"
[agent]
timeout_sec = 100.0
[verifier]
timeout_sec = 50.0
[verifier.env]
SHARED = "task"
[[steps]]
name = "one"
min_reward = 1
[steps.agent]
timeout_sec = 10.0
user = "agent"
network_mode = "public"
[steps.verifier]
timeout_sec = 5.0
[steps.verifier.env]
SHARED = "step"
ONLY = "one"
[[steps]]
name = "two"
min_reward = { reward = 0.5, style = 0.25 }
`

func TestLoadTaskReadsSteps(t *testing.T) {
	dir := writeTask(t, map[string]string{
		"task.toml":                    twoSteps,
		"tests/test.sh":                "shared",
		"steps/one/instruction.md":     "do one",
		"steps/one/tests/test.sh":      "one's",
		"steps/one/solution/solve.sh":  "solve one",
		"steps/one/workdir/setup.sh":   "setup",
		"steps/two/instruction.md":     "do two",
		"steps/two/workdir/config.txt": "x",
	})
	task, err := LoadTask(dir)
	if err != nil {
		t.Fatalf("LoadTask: %v", err)
	}
	if len(task.Unsupported()) != 0 {
		t.Errorf("Unsupported = %q, want none", task.Unsupported())
	}
	if task.Config.MultiStepRewardStrategy != StrategyFinal || len(task.Steps) != 2 {
		t.Fatalf("strategy %q, %d steps", task.Config.MultiStepRewardStrategy, len(task.Steps))
	}
	one, two := task.Steps[0], task.Steps[1]
	if one.Instruction != "do one" || !one.HasTests || !one.HasSolution || !one.HasSetup() || two.HasTests || two.HasSolution || !two.HasWorkdir || two.HasSetup() {
		t.Errorf("steps = %+v", task.Steps)
	}
	if diff := cmp.Diff(map[string]float64{"reward": 0.5, "style": 0.25}, two.Config.MinReward); diff != "" {
		t.Errorf("two's min_reward (-want +got):\n%s", diff)
	}
	st := task.ForStep(one)
	if st.Instruction != "do one" || *st.Config.Agent.TimeoutSec != 10 || st.Config.Verifier.TimeoutSec != 5 || st.Config.Agent.User != "agent" || st.Config.Agent.NetworkMode != NetworkPublic {
		t.Errorf("ForStep(one) = %+v", st.Config)
	}
	if diff := cmp.Diff(map[string]string{"SHARED": "step", "ONLY": "one"}, st.Config.Verifier.Env); diff != "" {
		t.Errorf("one's verifier env (-want +got):\n%s", diff)
	}
	st = task.ForStep(two)
	if *st.Config.Agent.TimeoutSec != 100 || st.Config.Verifier.TimeoutSec != 50 || st.Config.Verifier.Env["SHARED"] != "task" {
		t.Errorf("ForStep(two) = %+v: unset fields fall back to the task's", st.Config)
	}
	if task.Config.StepAgentTimeout(two.Config).Seconds() != 100 || task.Config.StepVerifierTimeout(one.Config).Seconds() != 5 {
		t.Error("StepAgentTimeout/StepVerifierTimeout do not fall back to the task's")
	}
}

// Bad layouts and fields name the task, the file and the field.
func TestLoadTaskStepErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"declared step without a directory", map[string]string{"task.toml": "[[steps]]\nname = \"one\"\n[[steps]]\nname = \"two\"\n",
			"steps/one/instruction.md": "x", "steps/one/tests/test.sh": "x"},
			[]string{"task.toml", "steps[1].name", `"two"`, "no directory"}},
		{"step without instruction", map[string]string{"task.toml": "[[steps]]\nname = \"one\"\n", "steps/one/tests/test.sh": "x"},
			[]string{"steps[0].name", "instruction.md is missing"}},
		{"step directory not in task.toml", map[string]string{"task.toml": "[[steps]]\nname = \"one\"\n",
			"steps/one/instruction.md": "x", "steps/one/tests/test.sh": "x", "steps/extra/instruction.md": "x"},
			[]string{"steps/extra", "is not a step of task.toml", `name = "extra"`}},
		{"steps/ without [[steps]]", map[string]string{"task.toml": "", "instruction.md": "x", "tests/test.sh": "x", "steps/one/instruction.md": "x"},
			[]string{"declares no [[steps]]"}},
		{"no test script for a step", map[string]string{"task.toml": "[[steps]]\nname = \"one\"\n", "steps/one/instruction.md": "x"},
			[]string{"steps[0].name", "no test script", "tests/test.sh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadTask(writeTask(t, tt.files))
			if err == nil {
				t.Fatal("LoadTask succeeded, want an error")
			}
			if !errors.Is(err, ErrTaskIncomplete) {
				t.Errorf("error %v does not wrap ErrTaskIncomplete", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseTaskConfigStepFieldErrors(t *testing.T) {
	tests := []struct{ toml, field string }{
		{"multi_step_reward_strategy = \"max\"", "multi_step_reward_strategy"},
		{"[[steps]]\nmin_reward = 1", "steps[0].name"},
		{"[[steps]]\nname = \"a/b\"", "steps[0].name"},
		{"[[steps]]\nname = \"a\"\n[[steps]]\nname = \"a\"", "steps[1].name"},
		{"[[steps]]\nname = \"a\"\nmin_reward = \"high\"", "steps[0].min_reward"},
		{"[[steps]]\nname = \"a\"\nmin_reward = { reward = \"x\" }", "steps[0].min_reward.reward"},
		{"[[steps]]\nname = \"a\"\n[steps.agent]\ntimeout_sec = -1", "steps[0].agent.timeout_sec"},
		{"[[steps]]\nname = \"a\"\n[steps.verifier]\nenvironment_mode = \"both\"", "steps[0].verifier.environment_mode"},
		{"steps = 3", "steps"},
	}
	for _, tt := range tests {
		_, err := ParseTaskConfig([]byte(tt.toml), "task.toml")
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("ParseTaskConfig(%q) = %v, want a FieldError", tt.toml, err)
			continue
		}
		if !strings.Contains(err.Error(), "task.toml: "+tt.field+":") {
			t.Errorf("ParseTaskConfig(%q) = %v, want field %s named", tt.toml, err, tt.field)
		}
	}
}

func TestStepRewards(t *testing.T) {
	steps := []map[string]float64{{"reward": 1, "style": 0.5}, nil, {"reward": 0}}
	produced := []bool{true, false, true}
	if diff := cmp.Diff(map[string]float64{"reward": 0.5, "style": 0.25}, StepRewards(StrategyMean, steps, produced)); diff != "" {
		t.Errorf("mean (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"reward": 0}, StepRewards(StrategyFinal, steps, produced)); diff != "" {
		t.Errorf("final (-want +got):\n%s", diff)
	}
	if got := StepRewards(StrategyFinal, steps[:2], produced[:2]); got != nil {
		t.Errorf("final with no result in the last step = %v, want nil", got)
	}
	if got := StepRewards(StrategyMean, []map[string]float64{nil}, []bool{false}); got != nil {
		t.Errorf("mean with no results = %v, want nil", got)
	}
	if why := MinRewardFailure(map[string]float64{"reward": 1}, map[string]float64{"reward": 1, "style": 0.5}); !strings.Contains(why, "style missing") {
		t.Errorf("MinRewardFailure = %q, want the missing key named", why)
	}
	if why := MinRewardFailure(map[string]float64{"reward": 1}, map[string]float64{"reward": 1}); why != "" {
		t.Errorf("MinRewardFailure at the threshold = %q, want none", why)
	}
}

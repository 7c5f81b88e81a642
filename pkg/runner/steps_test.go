package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor/harbortest"
)

// The multi-step tests run examples/demo-steps/greeter (three steps:
// scaffold, implement with a workdir/ and setup.sh, document) or a copy of
// it with edits, on the host rootfs and in an image's pod.

// greeterTask copies the example multi-step task to a temp dir, applies
// edits (path relative to the task → new content; "" removes the file) and
// returns the copy's directory.
func greeterTask(t *testing.T, edits map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "greeter")
	if out, err := exec.Command("cp", "-r", "../../examples/demo-steps/greeter", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the example task: %v: %s", err, out)
	}
	for rel, body := range edits {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if body == "" {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// editTOML replaces old with new in the task's task.toml (once; old must be there).
func editTOML(t *testing.T, dir, old, new string) {
	t.Helper()
	path := filepath.Join(dir, "task.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("task.toml has no %q", old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stepRewards is each step's "reward" by name (-1: no verifier result).
func stepRewards(tr harbor.TrialResult) map[string]float64 {
	out := map[string]float64{}
	for _, s := range tr.StepResults {
		out[s.StepName] = -1
		if s.VerifierResult != nil {
			out[s.StepName] = s.VerifierResult.Rewards[harbor.RewardKey]
		}
	}
	return out
}

func stepNames(tr harbor.TrialResult) []string {
	var out []string
	for _, s := range tr.StepResults {
		out = append(out, s.StepName)
	}
	return out
}

func TestStepsOracleRunsEveryStepAndNopStopsAtTheFirst(t *testing.T) {
	dir := greeterTask(t, nil)
	spec := baseSpec(t, "oracle")
	spec.Task.Dir = dir
	r := runTrial(t, spec, Options{})
	if diff := cmp.Diff(map[string]float64{"scaffold": 1, "implement": 1, "document": 1}, stepRewards(r.result)); diff != "" {
		t.Errorf("oracle step rewards (-want +got):\n%s\nexception: %+v", diff, r.result.ExceptionInfo)
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("oracle trial reward = %v, want 1", got)
	}
	if r.result.ExceptionInfo != nil {
		t.Errorf("oracle exception = %+v, want none", r.result.ExceptionInfo)
	}
	// result.json is Harbor's TrialResult, step_results and all.
	data, err := os.ReadFile(filepath.Join(r.out, harbor.TrialResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := harbortest.Check(harbortest.TrialResult, data); err != nil {
		t.Errorf("result.json is not Harbor's TrialResult: %v", err)
	}
	for _, s := range r.result.StepResults {
		if d, ok := s.AgentExecution.Duration(); !ok || d <= 0 {
			t.Errorf("step %s: agent_execution %+v, want a start and an end", s.StepName, s.AgentExecution)
		}
		if _, ok := s.Verifier.Duration(); !ok {
			t.Errorf("step %s: verifier %+v, want a start and an end", s.StepName, s.Verifier)
		}
		// Each step's logs are its own: its instruction and its reward.
		if got := r.artifact(t, "steps/"+s.StepName+"/verifier/reward.txt"); strings.TrimSpace(got) != "1" {
			t.Errorf("steps/%s/verifier/reward.txt = %q, want 1", s.StepName, got)
		}
		instr := r.artifact(t, "steps/"+s.StepName+"/agent/instruction.md")
		want, err := os.ReadFile(filepath.Join(dir, "steps", s.StepName, "instruction.md"))
		if err != nil || instr != string(want) {
			t.Errorf("steps/%s/agent/instruction.md = %q, want the step's instruction (%v)", s.StepName, instr, err)
		}
	}

	spec.Harness = "nop"
	r = runTrial(t, spec, Options{})
	if diff := cmp.Diff(map[string]float64{"scaffold": 0}, stepRewards(r.result)); diff != "" {
		t.Errorf("nop step rewards (-want +got): min_reward 1.0 of scaffold stops the trial\n%s", diff)
	}
	if got := rewardOf(t, r.result); got != 0 {
		t.Errorf("nop trial reward = %v, want 0", got)
	}
}

// A broken step: mean averages the steps that ran, final takes the last's;
// min_reward stops the steps after the one below it.
func TestStepsRewardStrategyAndMinReward(t *testing.T) {
	wrongReadme := "#!/usr/bin/env bash\necho nothing useful > /app/README.md\n"
	wrongGreeting := "#!/usr/bin/env bash\nprintf '#!/usr/bin/env bash\\necho Hello, Gauntlet!\\n' > /app/greet.sh\nchmod +x /app/greet.sh\n"
	tests := []struct {
		name       string
		edits      map[string]string
		strategy   string
		keepMinRew bool
		wantSteps  map[string]float64
		wantReward float64
	}{
		{"mean over three", map[string]string{"steps/document/solution/solve.sh": wrongReadme}, "mean", true,
			map[string]float64{"scaffold": 1, "implement": 1, "document": 0}, 2.0 / 3},
		{"final is the last step's", map[string]string{"steps/document/solution/solve.sh": wrongReadme}, "final", true,
			map[string]float64{"scaffold": 1, "implement": 1, "document": 0}, 0},
		{"min_reward stops the rest", map[string]string{"steps/implement/solution/solve.sh": wrongGreeting}, "mean", true,
			map[string]float64{"scaffold": 1, "implement": 0}, 0.5},
		{"final after an early stop is the stopping step's", map[string]string{"steps/implement/solution/solve.sh": wrongGreeting}, "final", true,
			map[string]float64{"scaffold": 1, "implement": 0}, 0},
		{"no min_reward: every step runs", map[string]string{"steps/implement/solution/solve.sh": wrongGreeting}, "mean", false,
			map[string]float64{"scaffold": 1, "implement": 0, "document": 1}, 2.0 / 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := greeterTask(t, tt.edits)
			editTOML(t, dir, `multi_step_reward_strategy = "mean"`, `multi_step_reward_strategy = "`+tt.strategy+`"`)
			if !tt.keepMinRew {
				editTOML(t, dir, "min_reward = 0.5\n", "")
			}
			spec := baseSpec(t, "oracle")
			spec.Task.Dir = dir
			r := runTrial(t, spec, Options{})
			if diff := cmp.Diff(tt.wantSteps, stepRewards(r.result)); diff != "" {
				t.Errorf("step rewards (-want +got):\n%s", diff)
			}
			if got := rewardOf(t, r.result); got < tt.wantReward-1e-9 || got > tt.wantReward+1e-9 {
				t.Errorf("trial reward = %v, want %v", got, tt.wantReward)
			}
		})
	}
}

// Per-key means: a key one step lacks counts 0 there.
func TestStepsMeanIsPerKey(t *testing.T) {
	dir := greeterTask(t, map[string]string{
		"steps/scaffold/tests/test.sh":     "#!/usr/bin/env bash\necho '{\"reward\": 1, \"style\": 0.5}' > /logs/verifier/reward.json\n",
		"steps/implement/tests/test.sh":    "#!/usr/bin/env bash\necho '{\"reward\": 0.5}' > /logs/verifier/reward.json\n",
		"steps/document/tests/test.sh":     "#!/usr/bin/env bash\necho '{\"reward\": 0, \"style\": 1}' > /logs/verifier/reward.json\n",
		"steps/implement/workdir/setup.sh": "", // it needs the greet.sh nop never writes
	})
	spec := baseSpec(t, "nop")
	spec.Task.Dir = dir
	r := runTrial(t, spec, Options{})
	if r.result.VerifierResult == nil {
		t.Fatalf("no trial verifier result; exception %+v", r.result.ExceptionInfo)
	}
	want := map[string]float64{"reward": 0.5, "style": 0.5}
	if diff := cmp.Diff(want, r.result.VerifierResult.Rewards); diff != "" {
		t.Errorf("trial rewards (-want +got):\n%s", diff)
	}
}

func TestStepsSetupFailureStopsTheTrial(t *testing.T) {
	dir := greeterTask(t, map[string]string{"steps/implement/workdir/setup.sh": "#!/usr/bin/env bash\necho broken setup >&2\nexit 3\n"})
	spec := baseSpec(t, "oracle")
	spec.Task.Dir = dir
	r := runTrial(t, spec, Options{})
	if diff := cmp.Diff([]string{"scaffold", "implement"}, stepNames(r.result)); diff != "" {
		t.Fatalf("steps run (-want +got):\n%s", diff)
	}
	impl := r.result.StepResults[1]
	if impl.ExceptionInfo == nil || impl.ExceptionInfo.ExceptionType != harbor.ExceptionAgentSetup || impl.AgentExecution != nil || impl.VerifierResult != nil {
		t.Errorf("implement = %+v, want an AgentSetupError and neither agent nor verifier", impl)
	}
	if got := r.artifact(t, "steps/implement/agent/"+stepSetupStderr); !strings.Contains(got, "broken setup") {
		t.Errorf("setup stderr = %q", got)
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("trial reward = %v, want 1 (the mean over the one step with a reward)", got)
	}
}

// The steps share one environment in a pod: a server the first step's
// oracle starts still answers the second step's verifier, and no step's
// agent sees /tests.
func TestStepsShareOnePod(t *testing.T) {
	bin := buildPodServer(t)
	marker := uniqueMarker()
	probe := "echo \"tests=$([ -e /tests ] && echo visible || echo absent)\" > /logs/agent/probe.txt\n"
	dir := greeterTask(t, map[string]string{
		"steps/scaffold/solution/solve.sh": "#!/usr/bin/env bash\n" + probe + startServer(marker) +
			"printf '#!/usr/bin/env bash\\necho hello\\n' > /app/greet.sh && chmod +x /app/greet.sh\n",
		"steps/implement/solution/solve.sh": "#!/usr/bin/env bash\n" + probe,
		"steps/implement/tests/test.sh":     podVerifier,
	})
	spec := baseSpec(t, "oracle")
	spec.Task.Dir = dir
	spec.VerifierEnv = map[string]string{"FOREGROUND_MARKER": "no-such-process"}
	r := runPod(t, spec, testImage(t), bin, marker)
	if got := stepRewards(r.result)["implement"]; got != 1 {
		t.Errorf("implement reward = %v, want 1: the server the scaffold step started must still serve\n%s", got,
			r.artifact(t, "steps/implement/verifier/seen.txt"))
	}
	for _, step := range []string{"scaffold", "implement"} {
		if got := parseProbe(r.artifact(t, "steps/"+step+"/agent/probe.txt"))["tests"]; got != "absent" {
			t.Errorf("step %s: the agent saw /tests %s, want absent", step, got)
		}
	}
}

// Each step's usage is its own (the command harness's usage.json of that
// step); the trial's agent_result sums them, as Harbor's readers do.
func TestStepsUsageIsPerStepAndSummed(t *testing.T) {
	dir := greeterTask(t, map[string]string{"steps/implement/workdir/setup.sh": ""})
	spec := baseSpec(t, "command")
	spec.Task.Dir = dir
	// The step's instruction decides its tokens: 100, 200, 300 in.
	spec.Command = `n=$(case "$(head -c 20 /logs/agent/instruction.md)" in Create*) echo 100;; *config*) echo 200;; *) echo 300;; esac)
printf '{"input_tokens": %d, "cache_tokens": 0, "output_tokens": 10, "cost_usd": 0.5}' "$n" > /logs/agent/usage.json`
	editTOML(t, dir, "min_reward = 1.0\n", "")
	editTOML(t, dir, "min_reward = 0.5\n", "")
	r := runTrial(t, spec, Options{})
	var in []int
	for _, s := range r.result.StepResults {
		if s.AgentResult == nil || s.AgentResult.NInputTokens == nil {
			t.Fatalf("step %s: agent_result %+v, want its usage", s.StepName, s.AgentResult)
		}
		in = append(in, *s.AgentResult.NInputTokens)
	}
	if diff := cmp.Diff([]int{100, 200, 300}, in); diff != "" {
		t.Errorf("per-step input tokens (-want +got):\n%s", diff)
	}
	ar := r.result.AgentResult
	if ar == nil || ar.NInputTokens == nil || *ar.NInputTokens != 600 || *ar.NOutputTokens != 30 || ar.CostUSD == nil || *ar.CostUSD != 1.5 {
		t.Errorf("trial agent_result = %+v, want the steps' sums (600 in, 30 out, $1.5)", ar)
	}
	if in, _, out, cost := r.result.UsageTotals(); *in != 600 || *out != 30 || *cost != 1.5 {
		t.Errorf("UsageTotals = %d, %d, %v", *in, *out, *cost)
	}
}

// A step's agent.user and verifier.user replace the task's for that step,
// in the one pod.
func TestStepsRunAsTheirUsers(t *testing.T) {
	dir := greeterTask(t, map[string]string{
		"steps/implement/workdir/setup.sh": "",
		"steps/implement/tests/test.sh":    "#!/usr/bin/env bash\nid -u > /logs/verifier/uid.txt\necho 1 > /logs/verifier/reward.txt\n",
	})
	editTOML(t, dir, "min_reward = 1.0\n", "")
	editTOML(t, dir, "[steps.agent]\ntimeout_sec = 90.0\n", "[steps.agent]\ntimeout_sec = 90.0\nuser = \"agent\"\n")
	editTOML(t, dir, "[steps.verifier]\ntimeout_sec = 30.0\n\n[steps.verifier.env]", "[steps.verifier]\ntimeout_sec = 30.0\nuser = 1000\n\n[steps.verifier.env]")
	spec := baseSpec(t, "command")
	spec.Task.Dir = dir
	spec.Command = "id -u > /logs/agent/uid.txt"
	r := runTrial(t, spec, Options{Image: ptr(testImage(t)), Isolation: IsolationBwrap})
	for step, want := range map[string]string{"scaffold": "0", "implement": "1000", "document": "0"} {
		if got := strings.TrimSpace(r.artifact(t, "steps/"+step+"/agent/uid.txt")); got != want {
			t.Errorf("step %s: the agent ran as uid %s, want %s", step, got, want)
		}
	}
	if got := strings.TrimSpace(r.artifact(t, "steps/implement/verifier/uid.txt")); got != "1000" {
		t.Errorf("implement's verifier ran as uid %s, want 1000", got)
	}
}

func ptr[T any](v T) *T { return &v }

// A multi-step task's environment comes up once, before the first step's
// setup.sh, as Harbor starts its environment before any step: the image's
// entrypoint starts once, the healthcheck passes once, and neither runs
// again for the later steps.
func TestStepsStartTheEnvironmentOnce(t *testing.T) {
	marker := uniqueMarker()
	probe := "printf 'hc=%s entry=%s\\n' \"$(cat /var/tmp/hc-count)\" \"$(wc -l < /var/tmp/entry-starts)\" > /logs/agent/env-probe.txt\n"
	dir := greeterTask(t, map[string]string{
		"steps/scaffold/workdir/setup.sh": "#!/usr/bin/env bash\nset -e\n[ -s /var/tmp/hc-count ]\n[ -s /var/tmp/entry-starts ]\nrm -- \"$0\"\n",
		"steps/scaffold/solution/solve.sh": "#!/usr/bin/env bash\n" + probe +
			"printf '#!/usr/bin/env bash\\necho hello\\n' > /app/greet.sh && chmod +x /app/greet.sh\n",
		"steps/document/solution/solve.sh": "#!/usr/bin/env bash\n" + probe +
			"printf '# greeter\\n\\nRun ./greet.sh NAME to print hello, NAME.\\n' > /app/README.md\n",
	})
	check := `[ -s /var/tmp/entry-starts ] || exit 1; n=$(cat /var/tmp/hc-count 2>/dev/null || echo 0); echo $((n+1)) > /var/tmp/hc-count`
	editTOML(t, dir, "[environment.env]", fmt.Sprintf("[environment.healthcheck]\ncommand = %q\ninterval_sec = 0.05\nretries = 1000\n\n[environment.env]", check))
	spec := baseSpec(t, "oracle")
	spec.Task.Dir = dir
	img := testImage(t)
	img.Entrypoint = []string{"/bin/sh", "-c", `echo started >> /var/tmp/entry-starts; exec "$@"`, "entrypoint"}
	r := runPod(t, spec, img, t.TempDir(), marker)
	if got := stepRewards(r.result)["scaffold"]; got != 1 {
		t.Fatalf("scaffold reward = %v, want 1 (its setup.sh needs the environment up)", got)
	}
	for _, step := range []string{"scaffold", "document"} {
		if got := strings.TrimSpace(r.artifact(t, "steps/"+step+"/agent/env-probe.txt")); got != "hc=1 entry=1" {
			t.Errorf("step %s found %q, want the healthcheck passed once and the entrypoint started once: hc=1 entry=1", step, got)
		}
	}
}

// A step's healthcheck runs after its setup.sh and before its agent (the
// agent finds it passed); one that never passes is the runner's error
// naming the task, the step and the check. A step's artifacts, with the
// task's, are collected after its agent into steps/<name>/declared/.
func TestStepsHealthcheckAndArtifacts(t *testing.T) {
	check := `[ -e /app/setup-ran ] || exit 1; echo yes > /app/step-check-passed`
	dir := greeterTask(t, map[string]string{
		"steps/implement/workdir/setup.sh": "#!/usr/bin/env bash\nset -e\n[ -x greet.sh ]\ncleaned=$(tr -d '[:space:]' < config.txt)\nprintf '%s\\n' \"$cleaned\" > config.txt\ntouch /app/setup-ran\nrm -- \"$0\"\n",
		"steps/implement/solution/solve.sh": "#!/usr/bin/env bash\ncat /app/step-check-passed > /logs/agent/check.txt\n" +
			"printf '#!/usr/bin/env bash\\necho \"hello, ${1:-world}\"\\n' > /app/greet.sh\nmkdir -p /var/tmp/out && echo implemented > /var/tmp/out/note.txt\n",
	})
	editTOML(t, dir, "[[steps]]\nname = \"implement\"\n", fmt.Sprintf("[[steps]]\nname = \"implement\"\nartifacts = [\"/var/tmp/out\"]\n\n[steps.healthcheck]\ncommand = %q\ninterval_sec = 0.05\nretries = 3\n", check))
	editTOML(t, dir, "[metadata]", "artifacts = [\"/app/greet.sh\"]\n\n[metadata]")
	spec := baseSpec(t, "oracle")
	spec.Task.Dir = dir
	r := runPod(t, spec, testImage(t), t.TempDir(), uniqueMarker())
	if got := strings.TrimSpace(r.artifact(t, "steps/implement/agent/check.txt")); got != "yes" {
		t.Errorf("the implement step's agent found %q, want its healthcheck passed before it", got)
	}
	if got := strings.TrimSpace(r.artifact(t, "steps/implement/declared/var/tmp/out/note.txt")); got != "implemented" {
		t.Errorf("the step's artifact = %q", got)
	}
	for _, step := range []string{"scaffold", "implement", "document"} {
		if got := r.artifact(t, "steps/"+step+"/declared/app/greet.sh"); !strings.Contains(got, "echo") {
			t.Errorf("step %s: the task's artifact /app/greet.sh = %q", step, got)
		}
	}
	if m := r.artifact(t, "steps/implement/declared/"+harbor.ArtifactsManifestFile); !strings.Contains(m, `"destination": "artifacts/steps/implement/declared/var/tmp/out"`) {
		t.Errorf("the step's manifest:\n%s", m)
	}
	if got := stepRewards(r.result); got["document"] != 1 {
		t.Errorf("rewards %v, want every step passed", got)
	}

	// A step healthcheck that never passes.
	editTOML(t, dir, fmt.Sprintf("command = %q", check), fmt.Sprintf("command = %q", "echo never-"+spec.LaunchID+"; exit 4"))
	_, err := runPodOrError(t, spec, testImage(t), t.TempDir(), uniqueMarker())
	if err == nil || !strings.Contains(err.Error(), "steps[1] (implement).healthcheck") || !strings.Contains(err.Error(), "exit code 4") {
		t.Errorf("Run = %v, want the step's healthcheck named with its exit code", err)
	}
}

// Each step's collection pass runs the task's collect hooks and then the
// step's own, before its artifacts are collected, as Harbor's does (a
// multi-step task's hooks were skipped before).
func TestStepsRunTheirCollectHooks(t *testing.T) {
	dir := greeterTask(t, nil)
	editTOML(t, dir, "[metadata]", "artifacts = [\"/var/tmp/hooks\"]\n\n[metadata]")
	editTOML(t, dir, "[agent]\n", "[[verifier.collect]]\ncommand = \"mkdir -p /var/tmp/hooks && echo task >> /var/tmp/hooks/task.txt\"\n\n[agent]\n")
	editTOML(t, dir, "[[steps]]\nname = \"document\"\n", "[[steps]]\nname = \"document\"\n\n[[steps.verifier.collect]]\ncommand = \"mkdir -p /var/tmp/hooks && cat /var/tmp/hooks/task.txt | wc -l > /var/tmp/hooks/step.txt\"\n\n")
	spec := baseSpec(t, "oracle")
	spec.Task.Dir = dir
	r := runPod(t, spec, testImage(t), t.TempDir(), uniqueMarker())
	if got := strings.Count(r.artifact(t, "steps/scaffold/declared/var/tmp/hooks/task.txt"), "task"); got != 1 {
		t.Errorf("after scaffold the task's hook ran %d times, want 1", got)
	}
	if _, err := os.Stat(filepath.Join(r.out, "artifacts/steps/scaffold/declared/var/tmp/hooks/step.txt")); err == nil {
		t.Error("document's own hook ran in scaffold's pass")
	}
	// In document's pass the task's hook ran a third time, then the
	// step's, which saw those three runs.
	if got := strings.TrimSpace(r.artifact(t, "steps/document/declared/var/tmp/hooks/step.txt")); got != "3" {
		t.Errorf("document's hook saw %q task-hook runs, want 3 (the task's hook runs first in every step's pass)", got)
	}
}

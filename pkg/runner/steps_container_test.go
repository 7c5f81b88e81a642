package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Container isolation (the Fargate task container) runs a multi-step
// task's steps in the one container: the oracle gets each step's solution
// and passes every step; a command agent never sees /tests nor /solution,
// in any step, though each step's verifier gets its own tests.
func TestContainerIsolationRunsMultiStepTasks(t *testing.T) {
	e := newContainerEnv(t)
	dir := greeterTask(t, nil)
	r := e.run(dir, "oracle", "")
	if diff := cmp.Diff(map[string]float64{"scaffold": 1, "implement": 1, "document": 1}, stepRewards(r.result)); diff != "" {
		t.Errorf("oracle step rewards (-want +got):\n%s\n%s", diff, r.output)
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("oracle reward = %v, want 1", got)
	}
	dir = greeterTask(t, map[string]string{"steps/implement/workdir/setup.sh": ""})
	editTOML(t, dir, "min_reward = 1.0\n", "")
	editTOML(t, dir, "min_reward = 0.5\n", "")
	r = e.run(dir, "command", `echo "tests=$([ -e /tests/test.sh ] && echo visible || echo absent) solution=$([ -e /solution ] && echo visible || echo absent)" > /logs/agent/probe.txt`)
	if diff := cmp.Diff(map[string]float64{"scaffold": 0, "implement": 0, "document": 0}, stepRewards(r.result)); diff != "" {
		t.Errorf("command step rewards (-want +got):\n%s", diff)
	}
	for _, step := range []string{"scaffold", "implement", "document"} {
		if got := r.artifact(t, "steps/"+step+"/agent/probe.txt"); got != "tests=absent solution=absent\n" {
			t.Errorf("step %s: the agent saw %q, want neither /tests nor /solution", step, got)
		}
	}
}

package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
)

// greeterSolver is one shell command that solves every step of the
// greeter example as it stands when the step runs (the mock model gives
// each step's fresh session the same call).
const greeterSolver = `cat > /app/greet.sh <<'SH'
#!/usr/bin/env bash
if [ -f /app/config.txt ]; then echo "Hello, $(tr -d '[:space:]' < /app/config.txt)!"; else echo hello; fi
SH
chmod +x /app/greet.sh
printf '# greeter\n\ngreet.sh greets the name in config.txt:\n\n    Hello, Gauntlet!\n' > /app/README.md`

// A real harness (codex) on a multi-step task, in a pod and on the host:
// each step is a fresh session through a model gateway of its own, so each
// step's tokens and cost are its own and the trial's their sum; each
// step's gateway record is kept; the trajectory is kept.
func TestStepsWithARealHarness(t *testing.T) {
	for _, where := range []string{inImage, onHost} {
		t.Run(where, func(t *testing.T) {
			t.Parallel() // independent attempts: own mock, work dir, cgroups and network
			mock := modelmock.NewServer(modelmock.Script{
				APIKey: modelKey, Usage: mockUsage, NoToolsText: "Mock title",
				Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: greeterSolver, Description: "solve"}}, {Text: "Done."}},
			})
			defer mock.Close()
			spec := agentSpec(t, "codex")
			spec.Task.Dir = greeterTask(t, nil)
			r, _ := runAgentTrial(t, spec, mock, where)
			tr := r.result
			if got := stepRewards(tr); got["scaffold"] != 1 || got["implement"] != 1 || got["document"] != 1 {
				t.Fatalf("step rewards = %v, want 1 each; exception %+v\n%s", got, tr.ExceptionInfo, r.artifact(t, RunnerLogFile))
			}
			sum := 0
			for _, s := range tr.StepResults {
				ar := s.AgentResult
				if ar == nil || ar.NInputTokens == nil || *ar.NInputTokens == 0 || *ar.NInputTokens%1234 != 0 || ar.CostUSD == nil {
					t.Errorf("step %s: agent_result %s, want its own calls' tokens and cost", s.StepName, tokensOf(ar))
					continue
				}
				sum += *ar.NInputTokens
				if rec := r.artifact(t, "steps/"+s.StepName+"/"+gatewayRecord); strings.Count(rec, "\n") != *ar.NInputTokens/1234 {
					t.Errorf("step %s: gateway record has %d calls, want %d", s.StepName, strings.Count(rec, "\n"), *ar.NInputTokens/1234)
				}
			}
			if ar := tr.AgentResult; ar == nil || ar.NInputTokens == nil || *ar.NInputTokens != sum {
				t.Errorf("trial agent_result %s, want the steps' sum %d in", tokensOf(ar), sum)
			}
			// The trajectory: per step on the host, after the last step in a pod.
			last := "steps/document/agent/" + atif.FileName
			if where == onHost {
				last = "steps/scaffold/agent/" + atif.FileName
			}
			var traj atif.Trajectory
			if err := json.Unmarshal([]byte(r.artifact(t, last)), &traj); err != nil {
				t.Fatal(err)
			}
			if err := atif.Validate(traj); err != nil {
				t.Errorf("%s does not validate: %v", last, err)
			}
			if _, err := os.Stat(filepath.Join(r.out, "artifacts", gatewayRecord)); err == nil {
				t.Errorf("artifacts/%s left at the trial's top level: each step's is under steps/", gatewayRecord)
			}
		})
	}
}

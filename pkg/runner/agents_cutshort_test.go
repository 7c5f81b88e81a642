package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
)

// expiry is a phase context the test ends: once fire returns, Done is
// closed and Err says the deadline passed, so the runner ends the phase
// through its timeout path (the process group and cgroup killed, the
// attempt an AgentTimeoutError) at a state of the mock's, not at a time.
type expiry struct {
	context.Context
	done chan struct{}
}

func newExpiry(parent context.Context, fire func(context.Context)) *expiry {
	e := &expiry{Context: parent, done: make(chan struct{})}
	go func() {
		fire(parent)
		close(e.done)
	}()
	return e
}

func (e *expiry) Done() <-chan struct{} { return e.done }

func (e *expiry) Err() error {
	select {
	case <-e.done:
		if err := e.Context.Err(); err != nil {
			return err
		}
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestAgentCutShortTokensAgree ends every harness's real program (the
// bundled ones and the platform's terminus-2) mid-run — after its first
// model call was answered, while its next one is held by the mock — through the runner's timeout path, and checks that the
// tokens agree everywhere: the trajectory's final metrics, result.json's
// agent_result and the gateway's meter (result.json's
// metadata.model_gateway and the mock's answered calls), and that the
// trajectory says it is partial.
func TestAgentCutShortTokensAgree(t *testing.T) {
	for _, name := range append(e2eHarnesses(), "terminus-2") {
		t.Run(name, func(t *testing.T) {
			script := modelmock.Script{
				APIKey: modelKey, Usage: mockUsage, NoToolsText: "Mock title",
				Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: "echo gauntlet > /app/answer.txt", Description: "solve"}}, {Hang: true}},
			}
			if name == "terminus-2" {
				// Terminus offers no tools (every request would get the
				// title answer): it reads keystrokes from the text.
				script.NoToolsText = ""
				script.Turns[0] = modelmock.Turn{Text: `{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "echo gauntlet > /app/answer.txt\n", "duration": 0.5}], "task_complete": false}`}
			}
			mock := modelmock.NewServer(script)
			defer mock.Close()
			testHookPhaseContext = func(phase string, ctx context.Context) context.Context {
				if phase != "agent_execution" {
					return ctx
				}
				return newExpiry(ctx, func(ctx context.Context) {
					// The program's second call is held: its first was
					// answered (and metered) before.
					if err := mock.Handler.WaitTurn(ctx, 1); err != nil {
						t.Logf("the agent never reached its second call: %v", err)
					}
				})
			}
			defer func() { testHookPhaseContext = nil }()
			spec := agentSpec(t, name)
			spec.AgentTimeout = 5 * time.Minute // the real timeout, a backstop only
			r, _ := runAgentTrial(t, spec, mock, inImage)
			tr := r.result
			if tr.ExceptionInfo == nil || tr.ExceptionInfo.ExceptionType != harbor.ExceptionAgentTimeout {
				t.Fatalf("exception = %+v, want %s\nstdout:\n%s\nrunner log:\n%s", tr.ExceptionInfo, harbor.ExceptionAgentTimeout,
					r.artifact(t, "agent/stdout.txt"), r.artifact(t, RunnerLogFile))
			}
			answered := 0
			for _, req := range mock.Handler.Requests() {
				if req.Status == 200 {
					answered++
				}
			}
			if answered < 1 {
				t.Fatalf("the mock answered no call")
			}
			checkTokensAgree(t, r, int64(answered))
			traj := readTrajectory(t, r)
			partial, _ := traj.FinalMetrics.Extra["partial"].(map[string]any)
			if partial == nil || partial["reason"] != harbor.ExceptionAgentTimeout {
				t.Errorf("final_metrics.extra = %v, want partial with reason %s", traj.FinalMetrics.Extra, harbor.ExceptionAgentTimeout)
			}
			h, _ := harness.Lookup(name)
			t.Logf("%s cut short after %d answered calls: trajectory steps from %v", h.Name, answered, partial["steps_from"])
		})
	}
}

func readTrajectory(t *testing.T, r trialRun) atif.Trajectory {
	t.Helper()
	var traj atif.Trajectory
	if err := json.Unmarshal([]byte(r.artifact(t, "agent/"+atif.FileName)), &traj); err != nil {
		t.Fatalf("trajectory: %v\nrunner log:\n%s", err, r.artifact(t, RunnerLogFile))
	}
	if err := atif.Validate(traj); err != nil {
		t.Errorf("trajectory does not validate: %v", err)
	}
	if traj.FinalMetrics == nil {
		t.Fatal("trajectory has no final_metrics")
	}
	return traj
}

// checkTokensAgree: the trajectory's final metrics, result.json's
// agent_result and the gateway's totals in result.json are the same
// tokens, the mock's usage times the calls it answered.
func checkTokensAgree(t *testing.T, r trialRun, answered int64) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.out, harbor.TrialResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		AgentResult struct {
			NInput   int64 `json:"n_input_tokens"`
			NCache   int64 `json:"n_cache_tokens"`
			NOutput  int64 `json:"n_output_tokens"`
			Metadata struct {
				Gateway struct {
					Usage struct {
						Input  int64 `json:"input_tokens"`
						Cached int64 `json:"cached_tokens"`
						Output int64 `json:"output_tokens"`
					} `json:"usage"`
				} `json:"model_gateway"`
			} `json:"metadata"`
		} `json:"agent_result"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	ar, gw := res.AgentResult, res.AgentResult.Metadata.Gateway.Usage
	fm := readTrajectory(t, r).FinalMetrics
	want := [3]int64{answered * int64(mockUsage.Input), answered * int64(mockUsage.Cached), answered * int64(mockUsage.Output)}
	for what, got := range map[string][3]int64{
		"result.json agent_result": {ar.NInput, ar.NCache, ar.NOutput},
		"the gateway's meter":      {gw.Input, gw.Cached, gw.Output},
		"the trajectory's totals":  {fm.TotalPromptTokens, fm.TotalCachedTokens, fm.TotalCompletionTokens},
	} {
		if got != want {
			t.Errorf("%s (input, cached, output) = %v, want %v (%d answered calls)", what, got, want, answered)
		}
	}
}

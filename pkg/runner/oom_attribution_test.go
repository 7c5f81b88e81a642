package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// hog allocates memory a few MB at a time (perl-base is in every Debian
// image), so it lives long enough for the memory watch to see it.
const hog = `perl -e 'my @a; for (1..1000) { push @a, "x" x (8 << 20); select(undef, undef, undef, 0.02) }'`

// memoryOf reads result.json's agent_result.metadata.memory.
func memoryOf(t *testing.T, r trialRun) MemoryReport {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.out, harbor.TrialResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		AgentResult struct {
			Metadata struct {
				Memory *MemoryReport `json:"memory"`
			} `json:"metadata"`
		} `json:"agent_result"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.AgentResult.Metadata.Memory == nil {
		t.Fatalf("result.json has no agent_result.metadata.memory:\n%s\nrunner log:\n%s", data, r.artifact(t, RunnerLogFile))
	}
	return *res.AgentResult.Metadata.Memory
}

func checkOOM(t *testing.T, r trialRun, usedBy, killed string, inTree bool) {
	t.Helper()
	ex := r.result.ExceptionInfo
	if ex == nil || ex.ExceptionType != harbor.ExceptionAgentOOM {
		t.Fatalf("exception = %+v, want %s\nrunner log:\n%s", ex, harbor.ExceptionAgentOOM, r.artifact(t, RunnerLogFile))
	}
	m := memoryOf(t, r)
	if m.UsedBy != usedBy {
		t.Errorf("memory used_by = %q, want %q (%+v)", m.UsedBy, usedBy, m)
	}
	if len(m.Killed) == 0 || m.Killed[0].Command != killed || m.Killed[0].InAgentTree != inTree {
		t.Errorf("killed = %+v, want %s (in the agent's tree: %v)", m.Killed, killed, inTree)
	}
	want := "the agent used the memory"
	if usedBy == ownerTask {
		want = "the task's own processes used the memory, not the agent"
	}
	if !strings.Contains(ex.ExceptionMessage, want) || !strings.Contains(ex.ExceptionMessage, killed) {
		t.Errorf("exception message %q does not say %q and name %s", ex.ExceptionMessage, want, killed)
	}
	t.Logf("%s", ex.ExceptionMessage)
}

// TestOOMSaysWhoseProcessesUsedTheMemory kills a real allocation in an
// image sandbox's pod for its memory limit, twice: the agent's own command
// allocating (the agent used it), and a process outside the agent's tree —
// a daemon it detached, which the pod keeps as the task's — allocating
// while the agent only waits (the task's processes used it).
func TestOOMSaysWhoseProcessesUsedTheMemory(t *testing.T) {
	limit := func(s *sandbox.Spec) { s.MemoryMB = 128 }
	t.Run("agent", func(t *testing.T) {
		r := runImageTrial(t, hog, testImage(t), Options{}, limit)
		checkOOM(t, r, ownerAgent, "perl", true)
	})
	t.Run("task", func(t *testing.T) {
		// The subshell exits at once: its perl is the pod's, not the
		// agent's; the agent waits for it to be gone.
		cmd := `(` + hog + ` >/dev/null 2>&1 & echo $! > /tmp/hog.pid); while kill -0 "$(cat /tmp/hog.pid)" 2>/dev/null; do sleep 0.1; done`
		r := runImageTrial(t, cmd, testImage(t), Options{}, limit)
		checkOOM(t, r, ownerTask, "perl", false)
	})
}

// TestOOMOfARealAgent: a real harness program (qwen-code, on its bundled
// Node) in a task image runs a command that allocates past the memory
// limit: the kernel kills the command (the task's processes used the
// memory), the agent goes on and answers, and the tokens agree everywhere.
func TestOOMOfARealAgent(t *testing.T) {
	const name = "qwen-code"
	t.Run("task", func(t *testing.T) {
		mock := modelmock.NewServer(modelmock.Script{
			APIKey: modelKey, Usage: mockUsage,
			Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: hog, Description: "allocate"}}, {Text: "Done."}},
		})
		defer mock.Close()
		spec := agentSpec(t, name)
		spec.MemoryMB = 1536 // the program's ≈ 530 MB fits; the hog's GBs do not
		r, _ := runAgentTrial(t, spec, mock, inImage)
		checkOOM(t, r, ownerTask, "perl", true)
		answered := 0
		for _, req := range mock.Handler.Requests() {
			if req.Status == 200 {
				answered++
			}
		}
		checkTokensAgree(t, r, int64(answered))
	})
}

package pipeline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

const netInstallConfig = `
[experiment]
benchmark = "demo-bench"
[tasks]
task_set = "smoke"
[[agents]]
harness = "mini-swe-agent"
[agents.model]
type = "provider"
model = "openai/gpt-5"
api_key_secret = "OPENAI_KEY"
`

// TestNetworkInstallsFollowThePlatform: a harness that installs from the
// network is refused at submit where the platform does not allow network
// installs, and where it does, accepted with every slot's spec saying so
// (the runner then runs the pinned recipe).
func TestNetworkInstallsFollowThePlatform(t *testing.T) {
	closed := newEnv(t, envOptions{instant: true})
	problems := closed.rejected(closed.svc, netInstallConfig)
	if p, ok := findProblem(problems, pipeline.CodeInvalidConfig, "agents[0].harness"); !ok || !strings.Contains(p.Message, "needs a network install") {
		t.Fatalf("submit without network installs: problems %+v, want one at agents[0].harness", problems)
	}

	open := newEnv(t, envOptions{instant: true, opts: pipeline.Options{Platform: harness.Platform{NetworkInstalls: true}}})
	if _, _, err := pipeline.NewSecrets(open.secrets, open.recs.Workspaces, time.Now).Put(open.ctx,
		secret.Ref{Workspace: testWS, Scope: secret.Workspace, Name: "OPENAI_KEY"}, secret.Value("sk-test-000000000000"), testUser); err != nil {
		t.Fatal(err)
	}
	launched := open.recordSpecs()
	r := open.submit(netInstallConfig)
	if done := open.pumpUntil(r.ID, 20*time.Second); done.Status != run.Finished {
		t.Fatalf("run %s, want finished", done.Status)
	}
	specs := launched()
	if len(specs) == 0 {
		t.Fatal("no slot launched")
	}
	for _, s := range specs {
		if !s.NetworkInstalls {
			t.Errorf("slot %s: spec.NetworkInstalls = false on a platform that allows network installs", s.SlotID)
		}
	}
}

package pipeline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
)

func TestSubmitRejectsHarnessesThatCannotRunHere(t *testing.T) {
	e := newEnv(t, envOptions{})
	tasks := t.TempDir()
	writeTask(t, tasks, "one", 60)
	entry := benchmark.CatalogEntry{Key: "open", Name: "open", Dir: tasks, HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1}
	if _, err := pipelinetest.ImportCatalogEntry(e.ctx, e.recs, pipeline.PlatformWorkspace, entry, time.Now()); err != nil {
		t.Fatal(err)
	}
	problems := e.rejected(e.svc, `
[experiment]
benchmark = "open"
[[agents]]
harness = "nop"
[[agents]]
harness = "no-such-harness"
[[agents]]
harness = "openhands"
[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"
`)
	want := []pipeline.Problem{
		{Code: pipeline.CodeInvalidConfig, Field: "agents[1].harness"},
		{Code: pipeline.CodeInvalidConfig, Field: "agents[2].harness"},
		// openhands needs a model, as every harness but oracle, nop and command.
		{Code: pipeline.CodeMissingSecret, Field: "agents[2].model.api_key_secret"},
	}
	if diff := cmp.Diff(want, problems, cmpopts.IgnoreFields(pipeline.Problem{}, "Message")); diff != "" {
		t.Fatalf("problems (-want +got):\n%s", diff)
	}
	const avail = "available: claude-code, cline, codex, command, copilot-cli, gemini-cli, nop, opencode, oracle, qwen-code, terminus-2"
	if m := problems[0].Message; !strings.Contains(m, `unknown harness "no-such-harness"`) || !strings.HasSuffix(m, avail) {
		t.Errorf("unknown harness message = %q", m)
	}
	if m := problems[1].Message; m != "openhands needs a network install, which this platform does not allow; "+avail {
		t.Errorf("openhands message = %q", m)
	}
}

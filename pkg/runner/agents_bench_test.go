package runner

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/agentbundle"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
)

// BenchmarkAgentPhase measures what the platform adds to an agent's own
// run: a whole trial of the real codex through the runner's agent rig
// (bundle lookup and ELF check, gateway start, config files, the
// in-sandbox forwarder, the gateway's proxying and metering, usage and
// trajectory parsing), against the same trial with codex started by a
// `command` agent from the same bundle, configured by a few lines of shell
// and talking to the mock directly. Both answer at once (the mock), run in
// the same bubblewrap sandbox with the host's network (so the direct one
// reaches the mock) and run the same verifier; the difference is the
// platform's overhead.
//
//	go test -run '^$' -bench BenchmarkAgentPhase -benchtime 10x ./pkg/runner
func BenchmarkAgentPhase(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Fatalf("bubblewrap is required: apt-get install bubblewrap (%v)", err)
	}
	h, _ := harness.Lookup("codex")
	bundle, err := (agentbundle.Cache{}).Path(h)
	if err != nil {
		b.Fatalf("%v (make agents)", err)
	}
	mock := modelmock.NewServer(modelmock.Script{APIKey: modelKey, Usage: mockUsage,
		Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: "echo gauntlet > /app/answer.txt"}}, {Text: "Done."}}})
	defer mock.Close()
	direct := fmt.Sprintf(`mkdir -p $HOME/.codex && cat > $HOME/.codex/config.toml <<'EOF'
model = "gpt-5"
model_provider = "m"
approval_policy = "never"
sandbox_mode = "danger-full-access"
[model_providers.m]
name = "m"
base_url = "%s/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
[analytics]
enabled = false
EOF
CODEX_HOME=$HOME/.codex /agent/bin/codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -m gpt-5 "$(cat /logs/agent/instruction.md)" </dev/null`, mock.URL)
	for _, c := range []struct {
		name    string
		harness string
		opts    Options
	}{
		{"direct", "command", Options{AgentsDir: bundle}},
		{"gateway", "codex", Options{Models: mockProvider(b, mock.URL), Forwarder: runnerBinary}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				spec := agentSpec(b, c.harness)
				spec.Network, spec.Command = harbor.NetworkPublic, direct
				dir := b.TempDir()
				opts := c.opts
				opts.WorkDir, opts.OutDir = filepath.Join(dir, "work"), filepath.Join(dir, "out")
				tr, err := run(context.Background(), spec, opts, harness.All())
				if err != nil {
					b.Fatal(err)
				}
				if r, ok := tr.Reward(); !ok || r != 1 || tr.ExceptionInfo != nil {
					b.Fatalf("%s: reward %v, exception %+v", c.name, r, tr.ExceptionInfo)
				}
			}
		})
	}
}

package runner

import (
	"context"
	"fmt"
	"os"
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
// (bundle lookup and ELF check, gateway start, config files, the gateway's
// proxying and metering, usage and trajectory parsing), against the same
// trial with codex started by a `command` agent from the same bundle,
// configured by a few lines of shell and talking to the mock directly. The
// mock answers at once; both run the same verifier, under process
// isolation, the one mode where the direct agent can reach the mock on the
// host's loopback (every bubblewrap sandbox has a network namespace of its
// own). The in-sandbox forwarder's start, the one part this leaves out, is
// BenchmarkForwarderStart.
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
		Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: `echo gauntlet > "$GAUNTLET_APP_DIR/answer.txt"`}}, {Text: "Done."}}})
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
CODEX_HOME=$HOME/.codex $GAUNTLET_AGENTS_DIR/bin/codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -m gpt-5 "$(cat /logs/agent/instruction.md)" </dev/null`, mock.URL)
	for _, c := range []struct {
		name    string
		harness string
		opts    Options
	}{
		{"direct", "command", Options{AgentsDir: bundle, Isolation: IsolationProcess}},
		{"gateway", "codex", Options{Models: mockProvider(b, mock.URL), Forwarder: runnerBinary, Isolation: IsolationProcess}},
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

// BenchmarkAgentRig measures the platform's own work around a bundled
// program, without the program: finding the bundle and checking its ELF
// needs, starting and stopping the gateway, rendering and writing the
// harness's files and environment, then keeping the native log and
// building, validating and checking the trajectory and usage (from codex's
// recorded rollout and stdout). BenchmarkForwarderStart measures the
// in-sandbox forwarder's start; BenchmarkAgentPhase the whole.
//
//	go test -run '^$' -bench 'BenchmarkAgentRig|BenchmarkForwarderStart' ./pkg/runner
func BenchmarkAgentRig(b *testing.B) {
	rollout, err := os.ReadFile("../harness/testdata/codex/rollout.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := os.ReadFile("../harness/testdata/codex/stdout.txt")
	if err != nil {
		b.Fatal(err)
	}
	h, _ := harness.Lookup("codex")
	iso, err := newIsolation(Options{Isolation: IsolationHostBwrap})
	if err != nil {
		b.Fatal(err)
	}
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	models := mockProvider(b, mock.URL)
	for b.Loop() {
		dir := b.TempDir()
		opts := Options{WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out"), Models: models, Forwarder: runnerBinary, Isolation: IsolationHostBwrap}
		spec := agentSpec(b, "codex")
		t, err := newTrial(spec, opts, h, iso)
		if err != nil {
			b.Fatal(err)
		}
		t.redact = newRedactor(spec.Secrets)
		t.host, t.seen = iso.layouts(t.work, fixtureDir(b), "")
		for _, d := range []string{t.host.App, t.host.AgentLogs, t.host.Tmp} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		rig, err := t.rigging().prepareRig(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		pc := phaseCommand{env: agentEnv(spec, harbor.Task{}, h, t.seen), mounts: t.agentMounts(), script: "true"}
		if err := t.rigging().rigPhase(rig, &pc); err != nil {
			b.Fatal(err)
		}
		// What the program would have left behind.
		native := filepath.Join(t.host.Tmp, ".codex/sessions/2026/12/01/rollout-x.jsonl")
		if err := os.MkdirAll(filepath.Dir(native), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(native, rollout, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(t.host.AgentLogs, harness.StdoutFile), stdout, 0o644); err != nil {
			b.Fatal(err)
		}
		t.readUsage()
		t.rigging().closeRig(rig)
		t.rigging().keepAgentLogs(rig)
		if _, err := os.Stat(filepath.Join(t.host.AgentLogs, "trajectory.json")); err != nil {
			b.Fatal(err)
		}
		t.closeLog()
	}
}

// BenchmarkForwarderStart is a bubblewrap sandbox without network that
// starts the gateway forwarder and waits for its "listening" line, against
// the same sandbox running `true`.
func BenchmarkForwarderStart(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Fatalf("bubblewrap is required: apt-get install bubblewrap (%v)", err)
	}
	sock, app := filepath.Join(b.TempDir(), "gw.sock"), b.TempDir()
	for _, c := range []struct{ name, script string }{
		{"bare", "true"},
		{"forwarder", fmt.Sprintf("exec 3< <(exec %s %s -listen 127.0.0.1:4000 -socket %s)\nread -r _ <&3", forwarderPath, ForwardCommand, gatewaySocket)},
	} {
		b.Run(c.name, func(b *testing.B) {
			pc := phaseCommand{script: c.script, env: []string{"PATH=" + sandboxPath}, mounts: []mount{
				{host: app, target: AppMount}, {host: filepath.Dir(sock), target: gatewayMount}, {host: runnerBinary, target: forwarderPath}},
				maskFile: testMaskFile(b)}
			args, err := bwrapArgs(pc)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				cmd := exec.Command("bwrap", args...)
				cmd.Env = pc.env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}

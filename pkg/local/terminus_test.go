package local_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// TestTerminus2ThroughTheLocalPlatform runs harness terminus-2 as
// `gauntlet local` does: the static binary copied into the data dir's
// static-bin/ and mounted at /opt/gauntlet/bin, its model calls through the
// runner's gateway (which swaps the per-attempt token for the workspace's
// key) to a scripted mock model on loopback. The mock types the task's
// solution as keystrokes, then confirms completion twice; the attempt
// passes, its tokens are the mock's, and its ATIF trajectory is stored.
func TestTerminus2ThroughTheLocalPlatform(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	terminus := filepath.Join(t.TempDir(), "terminus-2")
	build := exec.Command("go", "build", "-trimpath", "-o", terminus, "../../cmd/terminus-2")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build terminus-2: %v\n%s", err, out)
	}

	solve, err := os.ReadFile("../../examples/demo-bench/word-frequency/solution/solve.sh")
	if err != nil {
		t.Fatal(err)
	}
	const key = "mock-key-for-terminus-3b1f"
	answer := func(complete bool, keys ...string) modelmock.Turn {
		cmds := []map[string]any{}
		for _, k := range keys {
			cmds = append(cmds, map[string]any{"keystrokes": k, "duration": 1})
		}
		b, _ := json.Marshal(map[string]any{"analysis": "a", "plan": "p", "commands": cmds, "task_complete": complete})
		return modelmock.Turn{Text: string(b)}
	}
	usage := modelmock.Usage{Input: 700, Cached: 200, Output: 30}
	mock := modelmock.NewServer(modelmock.Script{APIKey: key, Usage: usage, Turns: []modelmock.Turn{
		answer(false, "echo "+base64.StdEncoding.EncodeToString(solve)+" | base64 -d | bash\n"),
		answer(true),
		answer(true),
	}})
	defer mock.Close()
	gatewayCfg := filepath.Join(t.TempDir(), "gateway.toml")
	if err := os.WriteFile(gatewayCfg, []byte("[providers.mock]\nbase_urls = { openai-chat = \""+mock.URL+"/v1\" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	opts := testOptions(dir, runnerBin)
	opts.StaticBinaries, opts.ModelGatewayConfig = []string{terminus}, gatewayCfg
	p, err := local.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Records().Workspaces.PutBilling(ctx, ws, records.Billing{Status: records.BillingActive, Plan: "local"}); err != nil {
		t.Fatal(err)
	}
	secrets := pipeline.NewSecrets(p.Secrets(), p.Records().Workspaces, time.Now)
	if _, _, err := secrets.Put(ctx, secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: "MOCK_API_KEY"}, secret.Value(key), "u1"); err != nil {
		t.Fatal(err)
	}
	res, err := p.Service().Submit(ctx, pipeline.SubmitRequest{Workspace: ws, User: "u1", Document: []byte(`
[experiment]
benchmark = "demo-bench"
[tasks]
task_names = ["word-frequency"]
[execution]
attempts_per_task = 1
max_retries = 0
[[agents]]
harness = "terminus-2"
[agents.model]
type = "provider"
model = "mock/gpt-5"
api_key_secret = "MOCK_API_KEY"
`)})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Minute, "the run to end", func() bool {
		got, _ := p.Records().Runs.Run(ctx, res.Run.ID)
		return got.Status.Terminal()
	})
	results, err := p.Records().Runs.AllResults(ctx, res.Run.ID)
	if err != nil || len(results) != 1 {
		t.Fatalf("results = %d (%v), want 1", len(results), err)
	}
	r := results[0]
	if r.Outcome != run.Passed {
		var logs []string
		if infos, err := p.Blobs().List(ctx, r.ArtifactsPrefix); err == nil {
			for _, info := range infos {
				if strings.HasSuffix(info.Key, ".txt") || strings.HasSuffix(info.Key, ".log") {
					if rc, err := p.Blobs().Get(ctx, info.Key); err == nil {
						b, _ := io.ReadAll(io.LimitReader(rc, 4096))
						rc.Close()
						logs = append(logs, info.Key+":\n"+string(b))
					}
				}
			}
		}
		t.Fatalf("terminus-2 attempt = %s (%s: %s), want passed\n%s", r.Outcome, r.ErrorClass, r.Message, strings.Join(logs, "\n"))
	}
	// Three model calls, each with the mock's usage.
	if r.InputTokens != 3*int64(usage.Input) || r.OutputTokens != 3*int64(usage.Output) {
		t.Errorf("tokens = %d in / %d out, want %d / %d (the mock's, three calls)", r.InputTokens, r.OutputTokens, 3*usage.Input, 3*usage.Output)
	}
	infos, err := p.Blobs().List(ctx, r.ArtifactsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	var trajectory string
	for _, info := range infos {
		if strings.HasSuffix(info.Key, "agent/"+atif.FileName) {
			trajectory = info.Key
		}
	}
	if trajectory == "" {
		t.Fatalf("no agent/%s among the attempt's artifacts (%d blobs)", atif.FileName, len(infos))
	}
	rc, err := p.Blobs().Get(ctx, trajectory)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), key) {
		t.Error("the stored trajectory holds the model key")
	}
	var doc atif.Trajectory
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("trajectory: %v", err)
	}
	if len(doc.Steps) == 0 {
		t.Errorf("trajectory has no steps:\n%s", data)
	}
	if _, err := os.Stat(filepath.Join(dir, local.StaticBinDir, "terminus-2")); err != nil {
		t.Errorf("terminus-2 was not installed into the data dir: %v", err)
	}
}

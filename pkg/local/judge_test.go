package local_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/api"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestJudgeBenchmarkThroughTheLocalPlatform submits a run of a benchmark
// graded by an LLM judge, runs it in a real sandbox and reads it back
// through the API: the verifier (bash over /dev/tcp, the runner's judge
// fixture task) asks the judge through its model gateway; the mock judge
// answers PASS with known usage. The attempt passes on the judge's word, the
// judge's tokens and cost are the mock's and apart from the agent's (which
// reached no model), and the judge key is in nothing stored or served.
func TestJudgeBenchmarkThroughTheLocalPlatform(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const judgeKey = "sk-judge-local-REAL-5f2e7a91c3"
	usage := modelmock.Usage{Input: 410, Cached: 400, Output: 12}
	mock := modelmock.NewServer(modelmock.Script{APIKey: judgeKey, Usage: usage, Turns: []modelmock.Turn{{Text: "PASS"}}})
	defer mock.Close()
	p, token := openJudgedPlatform(t, dir, mock.URL, judgeKey)
	recs := p.Records()
	runID, results := runJudgedEssay(t, p, 0)
	if len(results) != 1 {
		t.Fatalf("results = %d, want 1", len(results))
	}
	r := results[0]
	if r.Outcome != run.Passed || r.Reward == nil || *r.Reward != 1 {
		t.Fatalf("attempt = %s reward %v (%s: %s), want passed with the judge's reward 1", r.Outcome, r.Reward, r.ErrorClass, r.Message)
	}
	if j := r.Judge; j == nil || j.Model != "judgemock/gpt-5" || j.Calls != 1 || j.InputTokens != 410 || j.CacheTokens != 400 || j.OutputTokens != 12 || !j.CostEstimated || j.CostUSD <= 0 {
		t.Fatalf("judge usage = %+v, want the mock's one call of 410/400/12 tokens, priced", r.Judge)
	}
	if r.InputTokens != 0 || r.OutputTokens != 0 || r.CostUSD != 0 {
		t.Errorf("agent usage = %d/%d $%v, want none: the judge's calls are not the agent's", r.InputTokens, r.OutputTokens, r.CostUSD)
	}
	tally, err := recs.Runs.RunTally(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if tally.JudgeCalls != 1 || tally.JudgeInputTokens != 410 || tally.JudgeOutputTokens != 12 || tally.InputTokens != 0 || tally.CostMicroUSD != 0 {
		t.Errorf("run tally = %+v, want the judge's counters only", tally)
	}

	// The API serves the judge's use apart from the agents'.
	srv := httptest.NewServer(api.New(api.Config{Records: api.RecordsOf(recs), Runs: p.Service(), Blobs: p.Blobs(), Secrets: p.Secrets()}))
	defer srv.Close()
	var served []string
	get := func(path string, out any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		served = append(served, string(body))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d: %s", path, resp.StatusCode, body)
		}
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	var detail v1.RunDetail
	get("/v1/runs/"+runID, &detail)
	if j := detail.Judge; j == nil || j.Model != "judgemock/gpt-5" || j.Calls != 1 || j.Tokens.Input != 410 || j.Tokens.Output != 12 || math.Abs(j.CostUSD-r.Judge.CostUSD) > 1e-6 {
		t.Errorf("run judge = %+v, want the judge's one call", detail.Judge)
	}
	if j := detail.AgentsDetail[0].Judge; j == nil || j.Calls != 1 || j.Tokens.Input != 410 || math.Abs(j.CostUSD-r.Judge.CostUSD) > 1e-6 {
		t.Errorf("agent judge = %+v, want the judge's one call grading its attempt", j)
	}
	if detail.Tokens.Input != 0 || detail.CostUSD != 0 || detail.AgentsDetail[0].Tokens.Input != 0 {
		t.Errorf("run tokens = %+v cost %v, want none: the judge's are apart", detail.Tokens, detail.CostUSD)
	}
	// Recompute runs shortly after the result; the agent's cost and tokens
	// per task, once there, hold nothing of the judge's.
	waitFor(t, time.Minute, "the run's metrics", func() bool {
		get("/v1/runs/"+runID, &detail)
		return detail.MetricsCurrent
	})
	if m := detail.AgentsDetail[0].Metrics; (m.CostPerTask != nil && m.CostPerTask.Value != 0) || (m.TokensPerTask != nil && m.TokensPerTask.Value != 0) {
		t.Errorf("agent cost/tokens per task = %+v / %+v, want none: the judge's use is not the agent's", m.CostPerTask, m.TokensPerTask)
	}
	var list v1.ResultList
	get("/v1/runs/"+runID+"/results", &list)
	if len(list.Results) != 1 {
		t.Fatalf("results = %+v", list.Results)
	}
	var rd v1.ResultDetail
	get("/v1/runs/"+runID+"/results/"+list.Results[0].ID, &rd)
	if j := rd.Judge; j == nil || j.Tokens.Input != 410 || j.Tokens.Cache != 400 || rd.Tokens.Input != 0 {
		t.Errorf("result judge = %+v tokens %+v, want the judge's 410/400 apart from the agent's none", rd.Judge, rd.Tokens)
	}

	// The judge key is in nothing stored or served.
	forms := []string{judgeKey, base64.StdEncoding.EncodeToString([]byte(judgeKey)), hex.EncodeToString([]byte(judgeKey))}
	infos, err := p.Blobs().List(ctx, r.ArtifactsPrefix)
	if err != nil || len(infos) < 3 {
		t.Fatalf("artifacts = %d (%v)", len(infos), err)
	}
	for _, info := range infos {
		rc, err := p.Blobs().Get(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		for _, f := range forms {
			if strings.Contains(string(data), f) {
				t.Errorf("stored %s holds the judge key", info.Key)
			}
		}
	}
	for _, body := range served {
		if strings.Contains(body, judgeKey) {
			t.Error("an API answer holds the judge key")
		}
	}
	if len(mock.Handler.Requests()) != 1 {
		t.Errorf("the judge got %d calls, want 1", len(mock.Handler.Requests()))
	}
}

// openJudgedPlatform opens a local platform whose gateway reaches the mock
// judge at mockURL as provider judgemock, with the "judged" benchmark (the
// runner's judge fixture task) and workspace ws holding secret JUDGE_KEY =
// judgeKey; it returns the platform and an API token of ws's user u1.
func openJudgedPlatform(t *testing.T, dir, mockURL, judgeKey string) (*local.Platform, string) {
	t.Helper()
	ctx := context.Background()
	gatewayCfg := filepath.Join(t.TempDir(), "gateway.toml")
	if err := os.WriteFile(gatewayCfg, []byte("[providers.judgemock]\nbase_urls = { openai-chat = \""+mockURL+"/v1\" }\nprices = \"openai\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tasks := t.TempDir()
	if err := os.CopyFS(filepath.Join(tasks, "essay"), os.DirFS("../runner/testdata/judge-task")); err != nil {
		t.Fatal(err)
	}

	opts := testOptions(dir, runnerBin)
	opts.ModelGatewayConfig = gatewayCfg
	p, err := local.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	recs := p.Records()
	if _, err := pipelinetest.ImportCatalogEntry(ctx, recs, pipeline.PlatformWorkspace, benchmark.CatalogEntry{
		Key: "judged", Name: "judged", Dir: tasks, HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1,
		Judge: benchmark.Judge{Required: true, DefaultModel: "judgemock/gpt-5"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	token, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error {
			return recs.Workspaces.PutBilling(ctx, ws, records.Billing{Status: records.BillingActive, Plan: "local"})
		},
		func() error { return recs.Workspaces.PutUser(ctx, records.User{ID: "u1", Workspace: ws, Name: "Ann"}) },
		func() error {
			return recs.Workspaces.PutToken(ctx, records.Token{Hash: api.HashToken(token), Workspace: ws, User: "u1"})
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	secrets := pipeline.NewSecrets(p.Secrets(), recs.Workspaces, time.Now)
	if _, _, err := secrets.Put(ctx, secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: "JUDGE_KEY"}, secret.Value(judgeKey), "u1"); err != nil {
		t.Fatal(err)
	}
	return p, token
}

// TestRefusedJudgeKeyIsFinal: the judge's provider refuses the run's judge
// key. The attempt errors as the platform's (infra), names the refusal, and
// is not retried although max_retries allows two: every retry would run the
// agent again only to be refused the same way.
func TestRefusedJudgeKeyIsFinal(t *testing.T) {
	mock := modelmock.NewServer(modelmock.Script{APIKey: "sk-the-key-the-provider-wants-00", Turns: []modelmock.Turn{{Text: "PASS"}}})
	defer mock.Close()
	p, _ := openJudgedPlatform(t, t.TempDir(), mock.URL, "sk-judge-key-the-run-has-000000")
	_, results := runJudgedEssay(t, p, 2)
	if len(results) != 1 {
		t.Fatalf("results = %+v, want exactly one: no retry", results)
	}
	r := results[0]
	// A failed judge is its own outcome, never a zero (docs/SCORING.md); a
	// refused key would fail the same way again, so it is not retried.
	if r.Outcome != run.JudgeFailed || r.Retried || !strings.Contains(r.Message, "JudgeModelAuthError: the LLM judge's provider refused the judge's key") {
		t.Errorf("attempt = %s/%s retried=%v %q, want judge_failed, not retried, naming JudgeModelAuthError", r.Outcome, r.ErrorClass, r.Retried, r.Message)
	}
}

// TestOffersHostedModelsOnlyWithAnOperatorEndpoint: the local platform
// offers hosted models exactly when its model gateway config has [hosted].
func TestOffersHostedModelsOnlyWithAnOperatorEndpoint(t *testing.T) {
	for _, tc := range []struct {
		config string
		want   bool
	}{
		{"", false},
		{"[hosted]\nbase_url = \"http://127.0.0.1:9/v1\"\n", true},
	} {
		opts := testOptions(t.TempDir(), runnerBin)
		if tc.config != "" {
			opts.ModelGatewayConfig = filepath.Join(t.TempDir(), "gateway.toml")
			if err := os.WriteFile(opts.ModelGatewayConfig, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		p, err := local.Open(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Service().Offers().HostsModels; got != tc.want {
			t.Errorf("config %q: HostsModels = %v, want %v", tc.config, got, tc.want)
		}
		p.Close()
	}
}

// runJudgedEssay submits a run of the judged benchmark with maxRetries
// (the command agent writes the essay; the judge's key is JUDGE_KEY),
// starts the platform, waits for the run to end and returns its id and
// every result, retried generations included.
func runJudgedEssay(t *testing.T, p *local.Platform, maxRetries int) (string, []run.Result) {
	t.Helper()
	ctx := context.Background()
	res, err := p.Service().Submit(ctx, pipeline.SubmitRequest{Workspace: ws, User: "u1", Document: []byte(fmt.Sprintf(`
[experiment]
benchmark = "judged"
[execution]
attempts_per_task = 1
max_retries = %d
judge_api_key_secret = "JUDGE_KEY"
[[agents]]
harness = "command"
command = "echo The sea is wide. > /app/essay.txt"
`, maxRetries))})
	if err != nil {
		t.Fatalf("Submit of a judge benchmark: %v", err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	recs := p.Records()
	waitFor(t, 3*time.Minute, "the run to end", func() bool {
		got, _ := recs.Runs.Run(ctx, res.Run.ID)
		return got.Status.Terminal()
	})
	results, err := recs.Runs.AllResults(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return res.Run.ID, results
}

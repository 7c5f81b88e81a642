package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/prices"
	runpkg "github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// The LLM judge: the fixture judge task's verifier (bash alone, over
// /dev/tcp) asks the judge model, through the verifier's own model
// gateway, to grade the agent's essay; the mock judge answers PASS or FAIL
// with known usage.

const (
	judgeKey   = "sk-judge-REAL-key-9876543210abcdef"
	judgeModel = "judgemock/gpt-5"
)

var judgeUsage = modelmock.Usage{Input: 321, Cached: 300, Output: 9, Reasoning: 0}

// judgeProviders routes provider "mock" (the agent's) and "judgemock" (the
// judge's) to their own mock servers, both at OpenAI's prices.
func judgeProviders(t testing.TB, agentURL, judgeURL string) *gateway.Resolver {
	t.Helper()
	r, err := gateway.ParseOperatorConfig([]byte(fmt.Sprintf(`[providers.mock]
base_urls = { openai-responses = "%[1]s/v1", openai-chat = "%[1]s/v1", anthropic-messages = "%[1]s/v1", gemini = "%[1]s/v1beta" }
prices = "openai"
[providers.judgemock]
base_urls = { openai-chat = "%[2]s/v1" }
prices = "openai"
`, agentURL, judgeURL)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func judgeMock(verdict string) *modelmock.Server {
	return modelmock.NewServer(modelmock.Script{APIKey: judgeKey, Usage: judgeUsage, Turns: []modelmock.Turn{{Text: verdict}}})
}

func judgeSpec(t testing.TB, spec sandbox.Spec) sandbox.Spec {
	dir, err := filepath.Abs("testdata/judge-task")
	if err != nil {
		t.Fatal(err)
	}
	spec.Task = sandbox.TaskRef{Name: "judge-task", Dir: dir}
	spec.JudgeModel, spec.JudgeKey = judgeModel, judgeKey
	return spec
}

// runJudgeTrial runs spec in the Debian base image (bubblewrap), the agent
// reaching agentMock and the verifier judgeMock, and returns the gateway
// tokens it handed out.
func runJudgeTrial(t *testing.T, spec sandbox.Spec, agentMock, judge *modelmock.Server) (trialRun, []string) {
	t.Helper()
	requireBwrap(t)
	img := testImage(t)
	dir := t.TempDir()
	opts := Options{WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out"), Models: judgeProviders(t, agentMock.URL, judge.URL),
		Forwarder: runnerBinary, SelfPath: runnerBinary, Isolation: IsolationBwrap, Image: &img}
	var tokens []string
	onGatewayToken(t, opts.WorkDir, func(tok string) { tokens = append(tokens, tok) })
	testHookJudgeToken = func(tok string) { tokens = append(tokens, tok) }
	defer func() { testHookJudgeToken = nil }()
	tr, err := run(context.Background(), spec, opts, harness.All())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertNoMountsUnder(t, dir)
	return trialRun{result: tr, out: opts.OutDir}, tokens
}

func judgeOf(t *testing.T, tr harbor.TrialResult) *runpkg.JudgeUsage {
	t.Helper()
	var extra ResultExtra
	if err := json.Unmarshal(tr.Extra[ResultExtraKey], &extra); err != nil {
		t.Fatalf("result extra: %v", err)
	}
	if extra.Judge == nil {
		t.Fatalf("result.json records no judge usage: %s", tr.Extra[ResultExtraKey])
	}
	return extra.Judge
}

func TestJudgeGradesThroughItsOwnGateway(t *testing.T) {
	requireBundle(t, "codex")
	agentMock := modelmock.NewServer(modelmock.Script{
		APIKey: modelKey, Usage: mockUsage,
		Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: "echo The sea is wide. > /app/essay.txt", Description: "write"}}, {Text: "Done."}},
	})
	defer agentMock.Close()
	judge := judgeMock("PASS: a fine sentence.")
	defer judge.Close()
	spec := judgeSpec(t, agentSpec(t, "codex"))
	r, tokens := runJudgeTrial(t, spec, agentMock, judge)
	tr := r.result
	if tr.ExceptionInfo != nil {
		t.Errorf("exception %+v\nrunner log:\n%s", tr.ExceptionInfo, r.artifact(t, RunnerLogFile))
	}
	if got := rewardOf(t, tr); got != 1 {
		t.Fatalf("reward = %v, want 1 (the judge said PASS)\nverifier stdout:\n%s\nstderr:\n%s\nrunner log:\n%s", got,
			r.artifact(t, "verifier/stdout.txt"), r.artifact(t, "verifier/stderr.txt"), r.artifact(t, RunnerLogFile))
	}
	if len(tokens) != 2 || tokens[0] == tokens[1] {
		t.Fatalf("gateway tokens handed out = %d (%v), want the agent's and the judge's, distinct", len(tokens), tokens)
	}

	// The judge got the key, the model and the essay; the agent's mock
	// never heard from the verifier.
	reqs := judge.Handler.Requests()
	if len(reqs) != 1 || reqs[0].Status != 200 {
		t.Fatalf("judge requests = %+v, want one answered call", reqs)
	}
	if !strings.Contains(string(reqs[0].Body), "The sea is wide.") || !strings.Contains(string(reqs[0].Body), `"model":"gpt-5"`) {
		t.Errorf("judge request body = %s, want the essay and the judge model's name", reqs[0].Body)
	}
	for _, req := range agentMock.Handler.Requests() {
		if strings.Contains(string(req.Body), "Answer PASS or FAIL") {
			t.Error("the verifier's judge call reached the agent's model")
		}
	}

	// Judge tokens are what the judge mock sent, apart from the agent's.
	j := judgeOf(t, tr)
	if j.Model != judgeModel || j.Calls != 1 || j.InputTokens != 321 || j.CacheTokens != 300 || j.OutputTokens != 9 {
		t.Errorf("judge usage = %+v, want %s, 1 call, 321/300/9 tokens", j, judgeModel)
	}
	per, _, ok := prices.Price("openai", "gpt-5", prices.Usage{Input: 321, CacheRead: 300, Output: 9})
	if !ok || !j.CostKnown || !j.CostEstimated || math.Abs(j.CostUSD-per) > 1e-12 {
		t.Errorf("judge cost = %v (known %v, estimated %v), want %v from the price table", j.CostUSD, j.CostKnown, j.CostEstimated, per)
	}
	checkTokensAndCost(t, tr, agentMock) // the agent's tokens hold none of the judge's

	// The verifier saw the judge gateway's URL, token and model in the
	// names its task declares, never the key.
	env := r.artifact(t, "verifier/probe-env.txt")
	for _, want := range []string{"OPENAI_API_KEY=[redacted:" + judgeTokenName + "]", "GAUNTLET_JUDGE_API_KEY=[redacted:" + judgeTokenName + "]",
		"MODEL_NAME=gpt-5", "GAUNTLET_JUDGE_MODEL=" + judgeModel, "GRADING=strict", "OPENAI_BASE_URL=http://127.0.0.1:"} {
		if !strings.Contains(env, want) {
			t.Errorf("verifier env lacks %q:\n%s", want, env)
		}
	}
	for what, data := range map[string]string{"env": env, "/proc": r.artifact(t, "verifier/probe-proc.txt")} {
		if strings.Contains(data, "[redacted:"+judgeKeyName+"]") || strings.Contains(data, judgeKey) {
			t.Errorf("the judge key is visible in the verifier's %s", what)
		}
		if strings.Contains(data, "[redacted:"+gatewayTokenName+"]") {
			t.Errorf("the agent's gateway token is visible in the verifier's %s", what)
		}
	}
	if rec := r.artifact(t, judgeGatewayRecord); !strings.Contains(rec, "The sea is wide.") {
		t.Errorf("the judge gateway's record lacks the call:\n%s", rec)
	}
	checkStoredTextHoldsNoSecret(t, r.out, tokens[0])
	checkStoredTextHoldsNoJudgeSecret(t, r.out, tokens[1])
	for _, line := range strings.Split(r.artifact(t, RunnerLogFile), "\n") {
		if strings.Contains(line, "judge gateway ready") {
			t.Logf("%s", line[strings.Index(line, "msg="):])
		}
	}
}

func TestJudgeFailVerdictScoresZero(t *testing.T) {
	judge := judgeMock("FAIL: off topic.")
	defer judge.Close()
	agentMock := modelmock.NewServer(modelmock.DefaultScript())
	defer agentMock.Close()
	spec := judgeSpec(t, baseSpec(t, "command"))
	spec.Command = "echo Mountains are tall. > /app/essay.txt"
	r, tokens := runJudgeTrial(t, spec, agentMock, judge)
	if got := rewardOf(t, r.result); got != 0 {
		t.Fatalf("reward = %v, want 0 (the judge said FAIL)\n%s", got, r.artifact(t, "verifier/stderr.txt"))
	}
	if len(tokens) != 1 {
		t.Fatalf("gateway tokens = %v, want the judge's only (the command harness reaches no model)", tokens)
	}
	if j := judgeOf(t, r.result); j.Calls != 1 || j.OutputTokens != 9 {
		t.Errorf("judge usage = %+v, want 1 call, 9 output tokens", j)
	}
	if ar := r.result.AgentResult; ar != nil && ar.NInputTokens != nil {
		t.Errorf("agent tokens = %d, want none: the judge's are not the agent's", *ar.NInputTokens)
	}
	if len(agentMock.Handler.Requests()) != 0 {
		t.Error("the agent's model was called")
	}
	checkStoredTextHoldsNoJudgeSecret(t, r.out, tokens[0])
}

func TestJudgeRefusingItsKeyLeavesNoRewardAndSaysWhy(t *testing.T) {
	// The judge wants another key than the run's: the verifier gets a 401
	// through the gateway and grades nothing; the exception names the
	// judge's auth failure.
	judge := modelmock.NewServer(modelmock.Script{APIKey: "sk-another-judge-key-000000", Usage: judgeUsage, Turns: []modelmock.Turn{{Text: "PASS"}}})
	defer judge.Close()
	agentMock := modelmock.NewServer(modelmock.DefaultScript())
	defer agentMock.Close()
	spec := judgeSpec(t, baseSpec(t, "command"))
	spec.Command = "echo The sea is wide. > /app/essay.txt"
	r, _ := runJudgeTrial(t, spec, agentMock, judge)
	if _, ok := r.result.Reward(); ok {
		t.Fatalf("reward = %+v, want none: the judge never answered", r.result.VerifierResult)
	}
	e := r.result.ExceptionInfo
	if e == nil || e.ExceptionType != harbor.ExceptionJudgeAuth || !strings.Contains(e.ExceptionMessage, "the LLM judge's provider refused the judge's key") {
		t.Errorf("exception = %+v, want %s naming the judge's auth failure", e, harbor.ExceptionJudgeAuth)
	}
}

// checkStoredTextHoldsNoJudgeSecret searches everything stored for the
// judge key and the judge gateway's token, raw and encoded.
func checkStoredTextHoldsNoJudgeSecret(t *testing.T, out, token string) {
	t.Helper()
	searchStored(t, out, []string{judgeKey, token})
}

func TestJudgeValueMapsTheProviderNamesATaskDeclares(t *testing.T) {
	j := judgeAccess{url: "http://127.0.0.1:4100", token: "tok", model: "anthropic/claude-sonnet-4-5"}
	for name, want := range map[string]string{
		"OPENAI_API_KEY": "tok", "ANTHROPIC_API_KEY": "tok", "ANTHROPIC_AUTH_TOKEN": "tok", "JUDGE_API_KEY": "tok",
		"ANTHROPIC_BASE_URL": "http://127.0.0.1:4100", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:4100",
		"OPENAI_BASE_URL": "http://127.0.0.1:4100/v1", "OPENAI_API_BASE": "http://127.0.0.1:4100/v1", "OPENROUTER_BASE_URL": "http://127.0.0.1:4100/v1",
		"MODEL_NAME": "claude-sonnet-4-5", "JUDGE_MODEL": "claude-sonnet-4-5", "MODEL": "claude-sonnet-4-5",
	} {
		if got, ok := judgeValue(name, j); !ok || got != want {
			t.Errorf("judgeValue(%s) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"GRADING", "TIMEOUT", "API_KEYS_FILE", "MODELS_DIR"} {
		if got, ok := judgeValue(name, j); ok {
			t.Errorf("judgeValue(%s) = %q, want the task's own value kept", name, got)
		}
	}
}

package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
	runpkg "github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// The verifier's LLM judge: a model gateway of its own, started for the
// verifier phase alone, with a token of its own. The judge key stays in it.
const (
	judgeGatewayDir    = "judge-gateway"
	judgeGatewayRecord = "judge-gateway-calls.jsonl"
	judgeTokenName     = "judge_gateway_token"
	judgeKeyName       = "judge_key"
)

// Environment variables every judge-graded verifier gets, whatever its
// task's [verifier.env] declares.
const (
	EnvJudgeModel   = "GAUNTLET_JUDGE_MODEL"
	EnvJudgeBaseURL = "GAUNTLET_JUDGE_BASE_URL"
	EnvJudgeAPIKey  = "GAUNTLET_JUDGE_API_KEY"
)

// testHookJudgeToken, when set (by tests only), is told each attempt's
// judge gateway token.
var testHookJudgeToken func(token string)

// judgeAccess is how the verifier reaches its judge: the gateway's base URL
// as the verifier sees it, the per-attempt token and the judge model.
type judgeAccess struct {
	url, token, model string
}

// access is the verifier's view of the judge gateway; nil without one.
func (rig *agentRig) access(model string) *judgeAccess {
	if rig == nil || rig.gw == nil {
		return nil
	}
	return &judgeAccess{url: rig.url, token: rig.gw.Token(), model: model}
}

// prepareJudge starts the verifier phase's model gateway when the run
// grades with an LLM judge: the judge model's route (resolved like an
// agent's provider model), the judge key swapped in for the token, every
// call recorded (redacted) as an artifact and bounded by the verifier
// timeout. Its error is the platform's (an infra error).
func (vf verification) prepareJudge(ctx context.Context) (*agentRig, error) {
	t := vf.t
	if t.spec.JudgeModel == "" {
		return nil, nil
	}
	started := time.Now()
	r := t.opts.Models
	if r == nil {
		r = gateway.NewResolver()
	}
	route, err := r.Resolve(modelref.Model{Type: modelref.Provider, Model: t.spec.JudgeModel})
	if err != nil {
		return nil, fmt.Errorf("judge model %q: %w", t.spec.JudgeModel, err)
	}
	rig := &agentRig{}
	if err := t.rigging().startGateway(ctx, rig, gatewayStart{
		socketDir: judgeGatewayDir, record: judgeGatewayRecord, component: "judge-gateway",
		route: route, key: t.spec.JudgeKey, timeout: t.spec.VerifierTimeout,
		tokenName: judgeTokenName, tokenHook: testHookJudgeToken,
	}); err != nil {
		return nil, fmt.Errorf("judge %w", err)
	}
	t.log.Info("judge gateway ready", "judge_model", t.spec.JudgeModel, "upstream_model", route.Model, "key_given", t.spec.JudgeKey != "",
		"duration", time.Since(started).Round(time.Microsecond).String())
	return rig, nil
}

// closeJudge stops the judge gateway (once) and keeps its usage apart from
// the agent's. A judge the upstream refused is logged: the verifier saw
// the failure and its reward (or none) says what it made of it.
func (vf verification) closeJudge(rig *agentRig) {
	t := vf.t
	if rig == nil || rig.gw == nil {
		return
	}
	gw := rig.gw
	rig.gw = nil
	if err := gw.Close(); err != nil {
		t.log.Warn("judge gateway did not close cleanly", "err", err)
	}
	if err := rig.removeSocketDir(); err != nil {
		t.log.Warn("judge gateway socket dir not removed", "dir", rig.socketTmp, "err", err)
	}
	tot := gw.Totals()
	t.judge = &runpkg.JudgeUsage{Model: t.spec.JudgeModel, Calls: int64(tot.Calls),
		InputTokens: tot.Usage.Input, CacheTokens: tot.Usage.Cached, OutputTokens: tot.Usage.Output,
		CostUSD: tot.CostUSD, CostKnown: tot.CostKnown, CostEstimated: tot.CostEstimated}
	t.log.Info("judge usage", "calls", tot.Calls, "input_tokens", tot.Usage.Input, "cached_tokens", tot.Usage.Cached,
		"output_tokens", tot.Usage.Output, "cost_usd", tot.CostUSD, "cost_known", tot.CostKnown, "cost_estimated", tot.CostEstimated)
	if f := gw.Fault(); f != nil {
		t.judgeFault = f
		t.judge.Failure = fmt.Sprintf("%s: %s", f.Kind, f.Message)
		t.log.Warn("the judge's model calls failed", "kind", f.Kind, "status", f.Status, "message", f.Message)
	}
}

// exceptNoReward records a verifier that produced no reward (typ, what
// happened). When its judge's model calls failed, the message says so; when
// the judge's key was refused, the exception is the judge's, which no
// retry fixes, and the message starts with it.
func (vf verification) exceptNoReward(typ, what string) {
	t := vf.t
	f := t.judgeFault
	switch {
	case f == nil:
		t.except(typ, what)
	case f.Kind == gateway.FaultAuth:
		t.except(harbor.ExceptionJudgeAuth, fmt.Sprintf("the LLM judge's provider refused the judge's key (%s), so the verifier produced no reward: %s; not retried: fix the key in judge_api_key_secret's secret", f.Message, what))
	default:
		t.except(harbor.ExceptionJudgeFailed, fmt.Sprintf("%s; the LLM judge's model calls failed: %s: %s (%s)", what, f.Kind, f.Message, typ))
	}
}

// addRedacted adds a value (a gateway token) to what the trial redacts and
// rebuilds the redactor over every secret of the trial; name "" only
// rebuilds it.
func (vf verification) addRedacted(name, value string) {
	t := vf.t
	if name != "" {
		if t.redacted == nil {
			t.redacted = map[string]secret.Value{}
		}
		t.redacted[name] = secret.Value(value)
	}
	t.redact = newRedactor(t.spec.Secrets, t.spec.VerifierSecrets, map[string]secret.Value{judgeKeyName: t.spec.JudgeKey}, t.redacted)
}

// judgeValue is what a variable the task's [verifier.env] declares gets
// when the run grades with a judge: a provider key (`*_API_KEY`,
// `*_AUTH_TOKEN`) the gateway token; a base URL the gateway's — as the
// provider's own SDK expects it: Anthropic's and Gemini's without a version
// path, OpenAI-style ones (`OPENAI_BASE_URL`, `*_BASE_URL`, `*_API_BASE`)
// with /v1; a model name (`MODEL`, `*_MODEL`, `*MODEL_NAME`) the judge
// model's name without its provider (the gateway sends the route's model
// whatever the request names). Other names keep their values.
func judgeValue(name string, j judgeAccess) (string, bool) {
	switch {
	case strings.HasSuffix(name, "_API_KEY"), strings.HasSuffix(name, "_AUTH_TOKEN"):
		return j.token, true
	case name == "ANTHROPIC_BASE_URL", name == "GOOGLE_GEMINI_BASE_URL", name == "GEMINI_BASE_URL":
		return j.url, true
	case strings.HasSuffix(name, "_BASE_URL"), strings.HasSuffix(name, "_API_BASE"):
		return j.url + "/v1", true
	case name == "MODEL", strings.HasSuffix(name, "_MODEL"), strings.HasSuffix(name, "MODEL_NAME"):
		return modelName(j.model), true
	}
	return "", false
}

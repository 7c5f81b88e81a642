package atif

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func valid() Trajectory {
	cost := 0.01
	t := Trajectory{SchemaVersion: SchemaVersion, SessionID: "s1", Agent: Agent{Name: "codex", Version: "0.169.0", ModelName: "openai/gpt-5"},
		Steps: []Step{
			{StepID: 1, Source: SourceSystem, Message: "You are a coding agent."},
			{StepID: 2, Source: SourceUser, Message: "Write hello", Timestamp: "2026-12-01T19:00:00.5Z"},
			{StepID: 3, Source: SourceAgent, ToolCalls: []ToolCall{{ToolCallID: "c1", FunctionName: "exec_command", Arguments: json.RawMessage(`{"cmd":"echo hi"}`)}},
				Observation: &Observation{Results: []Result{{SourceCallID: "c1", Content: "hi"}}},
				Metrics:     &Metrics{PromptTokens: 1234, CompletionTokens: 56, CachedTokens: 1000, CostUSD: &cost}},
			{StepID: 4, Source: SourceAgent, Message: "Done.", Metrics: &Metrics{PromptTokens: 1300, CompletionTokens: 10}},
		}}
	t.Total()
	return t
}

func TestValidateAcceptsAWellFormedTrajectory(t *testing.T) {
	tr := valid()
	if err := Validate(tr); err != nil {
		t.Fatal(err)
	}
	fm := tr.FinalMetrics
	if fm.TotalPromptTokens != 2534 || fm.TotalCompletionTokens != 66 || fm.TotalCachedTokens != 1000 || fm.TotalSteps != 4 || *fm.TotalCostUSD != 0.01 {
		t.Errorf("final metrics = %+v", *fm)
	}
	if tr.ModelCalls() != 2 {
		t.Errorf("ModelCalls = %d, want 2", tr.ModelCalls())
	}
	// It round-trips through JSON with Harbor's field names.
	data, _ := json.Marshal(tr)
	for _, key := range []string{`"schema_version":"ATIF-v1.7"`, `"tool_call_id":"c1"`, `"source_call_id":"c1"`, `"total_prompt_tokens":2534`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("JSON lacks %s: %s", key, data)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Trajectory)
		want string
	}{
		{"version", func(t *Trajectory) { t.SchemaVersion = "ATIF-v1.6" }, "schema_version"},
		{"session", func(t *Trajectory) { t.SessionID = "" }, "session_id"},
		{"agent", func(t *Trajectory) { t.Agent.Version = "" }, "agent.version"},
		{"numbering", func(t *Trajectory) { t.Steps[2].StepID = 7 }, "steps[2].step_id is 7, want 3"},
		{"source", func(t *Trajectory) { t.Steps[0].Source = "tool" }, "steps[0].source"},
		{"user tool call", func(t *Trajectory) { t.Steps[1].ToolCalls = t.Steps[2].ToolCalls }, "only agent steps"},
		{"arguments", func(t *Trajectory) { t.Steps[2].ToolCalls[0].Arguments = json.RawMessage(`{cmd`) }, "arguments is not JSON"},
		{"observation", func(t *Trajectory) { t.Steps[2].Observation.Results[0].SourceCallID = "c9" }, "names no tool call"},
		{"cached", func(t *Trajectory) { t.Steps[3].Metrics.CachedTokens = 5000 }, "cached_tokens ≤ prompt_tokens"},
		{"timestamp", func(t *Trajectory) { t.Steps[1].Timestamp = "yesterday" }, "not RFC 3339"},
		{"totals", func(t *Trajectory) { t.FinalMetrics.TotalPromptTokens-- }, "are short of the steps"},
		{"step count", func(t *Trajectory) { t.FinalMetrics.TotalSteps++ }, "are short of the steps"},
	}
	for _, tc := range tests {
		tr := valid()
		tc.edit(&tr)
		if err := Validate(tr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want an error about %q", tc.name, err, tc.want)
		}
	}
}

// Cover makes the totals count model calls no step shows (opencode's
// session-title call; an agent killed before its step ended), so the
// trajectory agrees with result.json, which reports the gateway's metering.
func TestCover(t *testing.T) {
	tr := valid()
	tr.Total()
	steps := *tr.FinalMetrics
	calls := tr.ModelCalls()
	tr.Cover(calls+1, steps.TotalPromptTokens+2134, steps.TotalCompletionTokens+7, steps.TotalCachedTokens)
	fm := tr.FinalMetrics
	if fm.TotalPromptTokens != steps.TotalPromptTokens+2134 || fm.TotalCompletionTokens != steps.TotalCompletionTokens+7 ||
		fm.TotalCachedTokens != steps.TotalCachedTokens || fm.TotalSteps != steps.TotalSteps {
		t.Errorf("covered totals = %+v, want the steps' %+v plus 2134 prompt and 7 completion tokens", *fm, steps)
	}
	want := map[string]any{"model_calls": 1, "prompt_tokens": int64(2134), "completion_tokens": int64(7), "cached_tokens": int64(0), "source": "model gateway"}
	if diff := cmp.Diff(want, fm.Extra["unattributed_usage"]); diff != "" {
		t.Errorf("final_metrics.extra.unattributed_usage (-want +got):\n%s", diff)
	}
	if err := Validate(tr); err != nil {
		t.Errorf("Validate of a covered trajectory: %v", err)
	}
	data, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateJSON(data); err != nil {
		t.Errorf("ValidateJSON of a covered trajectory: %v", err)
	}

	// Usage the steps already show changes nothing.
	again := valid()
	again.Total()
	before := *again.FinalMetrics
	again.Cover(calls, before.TotalPromptTokens, before.TotalCompletionTokens, before.TotalCachedTokens)
	if diff := cmp.Diff(before, *again.FinalMetrics); diff != "" {
		t.Errorf("Cover with the steps' own usage changed the totals (-want +got):\n%s", diff)
	}
}

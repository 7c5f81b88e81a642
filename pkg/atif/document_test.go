package atif

import (
	"encoding/json"
	"strings"
	"testing"
)

func validDoc() map[string]any {
	return map[string]any{
		"schema_version": SchemaVersion,
		"session_id":     "s1",
		"agent":          map[string]any{"name": "terminus-2", "version": "1", "model_name": "m"},
		"steps": []any{
			map[string]any{"step_id": 1, "source": "user", "message": "hi", "timestamp": "2026-12-01T12:00:00.5Z"},
			map[string]any{
				"step_id": 2, "source": "agent", "message": "",
				"tool_calls":  []any{map[string]any{"tool_call_id": "c1", "function_name": "bash_command", "arguments": map[string]any{"keystrokes": "ls\n"}}},
				"observation": map[string]any{"results": []any{map[string]any{"source_call_id": "c1", "content": "ok"}}},
				"metrics":     map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 3},
			},
		},
		"final_metrics": map[string]any{"total_prompt_tokens": 10, "total_completion_tokens": 2, "total_cached_tokens": 3, "total_steps": 2},
	}
}

func step(doc map[string]any, i int) map[string]any { return doc["steps"].([]any)[i].(map[string]any) }

func TestValidateJSON(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(map[string]any)
		want   string // substring of the error; "" = valid
	}{
		{name: "baseline", mutate: func(map[string]any) {}},
		{name: "timestamp without zone", mutate: func(d map[string]any) { step(d, 0)["timestamp"] = "2026-12-01T12:00:00" }},
		{name: "unknown root key", mutate: func(d map[string]any) { d["surprise"] = 1 }, want: "trajectory.surprise: extra field"},
		{name: "unknown step key", mutate: func(d map[string]any) { step(d, 0)["note"] = "x" }, want: "steps[0].note: extra field"},
		{name: "unknown version", mutate: func(d map[string]any) { d["schema_version"] = "ATIF-v2.0" }, want: "schema_version"},
		{name: "no steps", mutate: func(d map[string]any) { d["steps"] = []any{} }, want: "steps: required"},
		{name: "step id gap", mutate: func(d map[string]any) { step(d, 1)["step_id"] = 3 }, want: "steps[1].step_id: expected 2"},
		{name: "agent-only field on a user step", mutate: func(d map[string]any) { step(d, 0)["metrics"] = map[string]any{} }, want: "steps[0].metrics: agent-only"},
		{name: "dangling source_call_id", mutate: func(d map[string]any) {
			step(d, 1)["observation"] = map[string]any{"results": []any{map[string]any{"source_call_id": "c9", "content": "x"}}}
		}, want: "c9 is not in this step's tool_calls"},
		{name: "non-ISO timestamp", mutate: func(d map[string]any) { step(d, 0)["timestamp"] = "yesterday" }, want: "not ISO 8601"},
		{name: "string arguments", mutate: func(d map[string]any) {
			step(d, 1)["tool_calls"] = []any{map[string]any{"tool_call_id": "c1", "function_name": "f", "arguments": "ls"}}
		}, want: "arguments: required dict"},
		{name: "fractional tokens", mutate: func(d map[string]any) {
			step(d, 1)["metrics"] = map[string]any{"prompt_tokens": 1.5}
		}, want: "prompt_tokens: want an int"},
		{name: "cached above prompt (Harbor accepts it)", mutate: func(d map[string]any) {
			step(d, 1)["metrics"] = map[string]any{"prompt_tokens": 1, "cached_tokens": 2}
		}},
		{name: "missing agent version", mutate: func(d map[string]any) { delete(d["agent"].(map[string]any), "version") }, want: "agent.version: required"},
		{name: "bad source", mutate: func(d map[string]any) { step(d, 0)["source"] = "tool" }, want: `"tool": want system, user or agent`},
		{name: "metrics with llm_call_count 0", mutate: func(d map[string]any) { step(d, 1)["llm_call_count"] = 0 }, want: "metrics: absent when llm_call_count is 0"},
		{name: "bmp image", mutate: func(d map[string]any) {
			step(d, 0)["message"] = []any{map[string]any{"type": "image", "source": map[string]any{"media_type": "image/bmp", "path": "x.bmp"}}}
		}, want: "not an image type ATIF accepts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := validDoc()
			tc.mutate(doc)
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			err = ValidateJSON(data)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestWrittenTrajectoryValidates(t *testing.T) {
	cost := 0.25
	tr := Trajectory{SchemaVersion: SchemaVersion, SessionID: "s", Agent: Agent{Name: "a", Version: "1"},
		Steps: []Step{
			{StepID: 1, Source: SourceUser, Message: "do it"},
			{StepID: 2, Source: SourceAgent, Message: "done", Extra: map[string]any{"plan": "p"},
				ToolCalls:   []ToolCall{{ToolCallID: "c1", FunctionName: "bash_command", Arguments: json.RawMessage(`{"keystrokes":"ls\n","duration":1}`)}},
				Observation: &Observation{Results: []Result{{SourceCallID: "c1", Content: "x"}}},
				Metrics:     &Metrics{PromptTokens: 5, CompletionTokens: 1, CachedTokens: 2, CostUSD: &cost}},
		}}
	tr.Total()
	data, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateJSON(data); err != nil {
		t.Errorf("ValidateJSON(marshalled Trajectory) = %v", err)
	}
	if err := Validate(tr); err != nil {
		t.Errorf("Validate = %v", err)
	}
}

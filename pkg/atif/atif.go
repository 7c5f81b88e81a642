// Package atif is the Agent Trajectory Interchange Format v1.7 (Harbor's
// trajectory.json): the shape every harness's native log is normalised
// into, and a validator for it.
package atif

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// SchemaVersion is the ATIF version this package writes and validates.
const SchemaVersion = "ATIF-v1.7"

// FileName is the name of the trajectory artifact.
const FileName = "trajectory.json"

// Step sources.
const (
	SourceSystem = "system"
	SourceUser   = "user"
	SourceAgent  = "agent"
)

// Trajectory is one agent session.
type Trajectory struct {
	SchemaVersion string        `json:"schema_version"`
	SessionID     string        `json:"session_id"`
	Agent         Agent         `json:"agent"`
	Steps         []Step        `json:"steps"`
	FinalMetrics  *FinalMetrics `json:"final_metrics,omitempty"`
}

// Agent names the harness and model of a trajectory.
type Agent struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	ModelName string `json:"model_name,omitempty"`
}

// Step is one message of the session: the system prompt, a user turn or
// an agent turn (one model call), with the agent's tool calls and what
// they returned.
type Step struct {
	StepID           int          `json:"step_id"`
	Timestamp        string       `json:"timestamp,omitempty"`
	Source           string       `json:"source"`
	Message          string       `json:"message"`
	ReasoningContent string       `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall   `json:"tool_calls,omitempty"`
	Observation      *Observation `json:"observation,omitempty"`
	Metrics          *Metrics     `json:"metrics,omitempty"`
	// Extra is ATIF's custom step metadata (terminus-2 records each
	// turn's analysis and plan, and which handoff call a step is).
	Extra map[string]any `json:"extra,omitempty"`
}

// ToolCall is one tool call of an agent step.
type ToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
}

// Observation holds the results of a step's tool calls.
type Observation struct {
	Results []Result `json:"results"`
}

// Result is the output of one tool call.
type Result struct {
	SourceCallID string `json:"source_call_id,omitempty"`
	Content      string `json:"content"`
}

// Metrics is the model usage of one agent step.
type Metrics struct {
	PromptTokens     int64    `json:"prompt_tokens"`
	CompletionTokens int64    `json:"completion_tokens"`
	CachedTokens     int64    `json:"cached_tokens,omitempty"`
	CostUSD          *float64 `json:"cost_usd,omitempty"`
}

// FinalMetrics totals a trajectory.
type FinalMetrics struct {
	TotalPromptTokens     int64    `json:"total_prompt_tokens"`
	TotalCompletionTokens int64    `json:"total_completion_tokens"`
	TotalCachedTokens     int64    `json:"total_cached_tokens"`
	TotalCostUSD          *float64 `json:"total_cost_usd,omitempty"`
	TotalSteps            int      `json:"total_steps"`
	// Extra says what the totals count beyond the steps (see Cover).
	Extra map[string]any `json:"extra,omitempty"`
}

// Cover raises the totals to usage metered outside the trajectory (the
// model gateway's record, which result.json reports): model calls no step
// shows — opencode's session-title call, a summarisation sub-call, a call
// cut short when the agent was killed — still count, so the trajectory and
// result.json agree on tokens, as Harbor's totals may exceed the steps.
// What no step accounts for is recorded in final_metrics.extra. Totals
// already above the metered usage are left as they are. Call it after
// Total.
func (t *Trajectory) Cover(calls int, prompt, completion, cached int64) {
	if t.FinalMetrics == nil {
		t.Total()
	}
	fm := t.FinalMetrics
	extraPrompt, extraCompletion, extraCached := prompt-fm.TotalPromptTokens, completion-fm.TotalCompletionTokens, cached-fm.TotalCachedTokens
	extraCalls := calls - t.ModelCalls()
	if extraPrompt <= 0 && extraCompletion <= 0 && extraCached <= 0 {
		return
	}
	fm.TotalPromptTokens += max(extraPrompt, 0)
	fm.TotalCompletionTokens += max(extraCompletion, 0)
	fm.TotalCachedTokens += max(extraCached, 0)
	if fm.Extra == nil {
		fm.Extra = map[string]any{}
	}
	fm.Extra["unattributed_usage"] = map[string]any{
		"model_calls": max(extraCalls, 0), "prompt_tokens": max(extraPrompt, 0),
		"completion_tokens": max(extraCompletion, 0), "cached_tokens": max(extraCached, 0),
		"source": "model gateway",
	}
}

// Total sums the steps' metrics into FinalMetrics (the cost only when
// every agent step with metrics has one).
func (t *Trajectory) Total() {
	fm := &FinalMetrics{TotalSteps: len(t.Steps)}
	var cost float64
	costKnown := false
	for _, s := range t.Steps {
		if s.Metrics == nil {
			continue
		}
		fm.TotalPromptTokens += s.Metrics.PromptTokens
		fm.TotalCompletionTokens += s.Metrics.CompletionTokens
		fm.TotalCachedTokens += s.Metrics.CachedTokens
		if s.Metrics.CostUSD != nil {
			cost += *s.Metrics.CostUSD
			costKnown = true
		}
	}
	if costKnown {
		fm.TotalCostUSD = &cost
	}
	t.FinalMetrics = fm
}

// ModelCalls is the number of agent steps that carry metrics: each is one
// model call, which is what the gateway's record counts.
func (t Trajectory) ModelCalls() int {
	n := 0
	for _, s := range t.Steps {
		if s.Source == SourceAgent && s.Metrics != nil {
			n++
		}
	}
	return n
}

// Validate checks t against ATIF v1.7's rules: the schema version, a
// session id, the agent's name and version, steps numbered 1… in order
// with a known source, tool calls only on agent steps with an id, a name
// and JSON arguments, observations that refer to the step's own calls,
// metrics ≥ 0 and final metrics that add up. Every problem is reported.
func Validate(t Trajectory) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if t.SchemaVersion != SchemaVersion {
		bad("schema_version is %q, want %q", t.SchemaVersion, SchemaVersion)
	}
	if t.SessionID == "" {
		bad("session_id is empty")
	}
	if t.Agent.Name == "" || t.Agent.Version == "" {
		bad("agent.name and agent.version are required")
	}
	if len(t.Steps) == 0 {
		bad("steps is empty")
	}
	for i, s := range t.Steps {
		at := fmt.Sprintf("steps[%d]", i)
		if s.StepID != i+1 {
			bad("%s.step_id is %d, want %d", at, s.StepID, i+1)
		}
		switch s.Source {
		case SourceSystem, SourceUser, SourceAgent:
		default:
			bad("%s.source is %q, want system, user or agent", at, s.Source)
		}
		if s.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339Nano, s.Timestamp); err != nil {
				bad("%s.timestamp %q is not RFC 3339", at, s.Timestamp)
			}
		}
		if s.Source != SourceAgent && (len(s.ToolCalls) > 0 || s.Metrics != nil || s.ReasoningContent != "") {
			bad("%s: only agent steps may have tool_calls, metrics or reasoning_content", at)
		}
		calls := map[string]bool{}
		for j, c := range s.ToolCalls {
			if c.ToolCallID == "" || c.FunctionName == "" {
				bad("%s.tool_calls[%d]: tool_call_id and function_name are required", at, j)
			}
			if !json.Valid(c.Arguments) {
				bad("%s.tool_calls[%d].arguments is not JSON", at, j)
			}
			calls[c.ToolCallID] = true
		}
		if s.Observation != nil {
			for j, r := range s.Observation.Results {
				if r.SourceCallID != "" && !calls[r.SourceCallID] {
					bad("%s.observation.results[%d].source_call_id %q names no tool call of this step", at, j, r.SourceCallID)
				}
			}
		}
		if m := s.Metrics; m != nil {
			if m.PromptTokens < 0 || m.CompletionTokens < 0 || m.CachedTokens < 0 || m.CachedTokens > m.PromptTokens {
				bad("%s.metrics: token counts must be ≥ 0 and cached_tokens ≤ prompt_tokens", at)
			}
			if m.CostUSD != nil && (*m.CostUSD < 0 || math.IsNaN(*m.CostUSD)) {
				bad("%s.metrics.cost_usd must be ≥ 0", at)
			}
		}
	}
	if fm := t.FinalMetrics; fm != nil {
		sum := Trajectory{Steps: t.Steps}
		sum.Total()
		want := sum.FinalMetrics
		// Totals may count calls no step shows (Cover), never less than
		// the steps do.
		if fm.TotalSteps != want.TotalSteps || fm.TotalPromptTokens < want.TotalPromptTokens ||
			fm.TotalCompletionTokens < want.TotalCompletionTokens || fm.TotalCachedTokens < want.TotalCachedTokens {
			bad("final_metrics %+v are short of the steps' %+v", *fm, *want)
		}
	}
	return errors.Join(errs...)
}

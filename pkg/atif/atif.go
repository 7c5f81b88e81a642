// Package atif is Harbor's Agent Trajectory Interchange Format (ATIF), the
// normalised trajectory.json every harness's log becomes: the document's
// types and a validator that enforces the rules Harbor's own models do
// (known schema version, no unknown keys, step ids 1…n, agent-only fields
// only on agent steps, observations that answer a tool call of their step,
// ISO 8601 timestamps, integer token counts).
package atif

// SchemaVersion is the ATIF version this package writes and accepts.
const SchemaVersion = "ATIF-v1.7"

// acceptedVersions are the schema versions Validate accepts: ATIF only adds
// optional fields between minor versions, so older documents stay valid.
var acceptedVersions = []string{
	"ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4",
	"ATIF-v1.5", "ATIF-v1.6", SchemaVersion,
}

// Step sources.
const (
	SourceSystem = "system"
	SourceUser   = "user"
	SourceAgent  = "agent"
)

// Trajectory is the root of a trajectory.json.
type Trajectory struct {
	SchemaVersion string         `json:"schema_version"`
	SessionID     string         `json:"session_id"`
	Agent         Agent          `json:"agent"`
	Steps         []Step         `json:"steps"`
	Notes         string         `json:"notes,omitempty"`
	FinalMetrics  *FinalMetrics  `json:"final_metrics,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"`
}

// Agent names the harness that produced the trajectory and its model.
type Agent struct {
	Name      string         `json:"name"`
	Version   string         `json:"version"`
	ModelName string         `json:"model_name,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

// Step is one turn: a user or system message, or one agent response with
// its tool calls, what they observed and what the model call cost.
type Step struct {
	StepID           int            `json:"step_id"`
	Timestamp        string         `json:"timestamp,omitempty"`
	Source           string         `json:"source"`
	ModelName        string         `json:"model_name,omitempty"`
	Message          string         `json:"message"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall     `json:"tool_calls,omitempty"`
	Observation      *Observation   `json:"observation,omitempty"`
	Metrics          *Metrics       `json:"metrics,omitempty"`
	Extra            map[string]any `json:"extra,omitempty"`
}

// ToolCall is one action of an agent step.
type ToolCall struct {
	ToolCallID   string         `json:"tool_call_id"`
	FunctionName string         `json:"function_name"`
	Arguments    map[string]any `json:"arguments"`
}

// Observation is what the environment answered to a step's actions.
type Observation struct {
	Results []ObservationResult `json:"results"`
}

// ObservationResult is one answer; SourceCallID names the tool call it
// answers ("" for feedback that answers no particular call).
type ObservationResult struct {
	SourceCallID string `json:"source_call_id,omitempty"`
	Content      string `json:"content"`
}

// Metrics is the usage of the model call behind an agent step.
// PromptTokens includes CachedTokens.
type Metrics struct {
	PromptTokens     int64          `json:"prompt_tokens"`
	CompletionTokens int64          `json:"completion_tokens"`
	CachedTokens     int64          `json:"cached_tokens"`
	CostUSD          *float64       `json:"cost_usd,omitempty"`
	Extra            map[string]any `json:"extra,omitempty"`
}

// FinalMetrics sums the steps' metrics.
type FinalMetrics struct {
	TotalPromptTokens     int64    `json:"total_prompt_tokens"`
	TotalCompletionTokens int64    `json:"total_completion_tokens"`
	TotalCachedTokens     int64    `json:"total_cached_tokens"`
	TotalCostUSD          *float64 `json:"total_cost_usd,omitempty"`
	TotalSteps            int      `json:"total_steps"`
}

// Totals computes FinalMetrics from the steps.
func (t *Trajectory) Totals() FinalMetrics {
	fm := FinalMetrics{TotalSteps: len(t.Steps)}
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
	return fm
}

package harness

import (
	"encoding/json"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// codex exec --json prints one event per line on stdout; turn.completed
// carries the turn's usage (input_tokens include the cached ones), turn.failed
// the error that ended it.
type codexEvent struct {
	Type  string `json:"type"`
	Usage *struct {
		InputTokens     int64 `json:"input_tokens"`
		CachedTokens    int64 `json:"cached_input_tokens"`
		OutputTokens    int64 `json:"output_tokens"`
		ReasoningTokens int64 `json:"reasoning_output_tokens"`
	} `json:"usage"`
	Message string `json:"message"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// codexOutput reads codex's --json stdout: the sum of the turns' usage,
// and the error of the last turn.failed.
type codexOutput struct {
	stdoutOnly
	usage        Usage
	reported     bool
	failure      string
	failureClass string
}

func (p *codexOutput) event(ev codexEvent) {
	switch {
	case ev.Type == "turn.completed" && ev.Usage != nil:
		p.reported = true
		p.usage.InputTokens += ev.Usage.InputTokens
		p.usage.CacheTokens += ev.Usage.CachedTokens
		p.usage.OutputTokens += ev.Usage.OutputTokens
		p.usage.ReasoningTokens += ev.Usage.ReasoningTokens
	case ev.Type == "turn.failed" && ev.Error != nil:
		// "unexpected status 401 Unauthorized: …" or "exceeded retry
		// limit, last status: 429 Too Many Requests".
		p.failure = ev.Error.Message
		p.failureClass = classifyStatus(statusFromText(strings.ReplaceAll(p.failure, "unexpected status", "status")))
	}
}

func (p *codexOutput) Usage() (Usage, bool) { return p.usage, p.reported }

func (p *codexOutput) ModelError(exitCode int) (string, string) {
	if exitCode == 0 {
		return "", ""
	}
	return p.failureClass, p.failure
}

// codexRollout is one line of $CODEX_HOME/sessions/…/rollout-*.jsonl.
type codexRollout struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	// session_meta
	ID               string `json:"id"`
	BaseInstructions *struct {
		Text string `json:"text"`
	} `json:"base_instructions"`
	// token_usage_record: one per model call (one per response id).
	ResponseID string `json:"response_id"`
	Usage      *struct {
		InputTokens  int64 `json:"input_tokens"`
		CachedTokens int64 `json:"cached_input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
}

// codexSession reads the rollout: the base instructions and developer
// messages become system steps, user messages user steps, and everything
// the model produced up to a token_usage_record (one per model call) one
// agent step with that record's usage.
type codexSession struct {
	jsonLines
	sessionID string
	b         stepBuilder
	open      int // 1 + the index of the agent step being filled; 0: none
}

// agentStep returns the agent step being filled, opening one at ts.
func (s *codexSession) agentStep(ts string) int {
	if s.open == 0 {
		s.b.add(atif.Step{Source: atif.SourceAgent, Timestamp: ts})
		s.open = len(s.b.steps)
	}
	return s.open - 1
}

func (s *codexSession) line(r codexRollout) {
	var it codexItem
	if json.Unmarshal(r.Payload, &it) != nil {
		return
	}
	switch r.Type {
	case "session_meta":
		s.sessionID = it.ID
		if it.BaseInstructions != nil && it.BaseInstructions.Text != "" {
			s.b.add(atif.Step{Source: atif.SourceSystem, Timestamp: r.Timestamp, Message: it.BaseInstructions.Text})
		}
	case "token_usage_record":
		if it.Usage == nil {
			return
		}
		i := s.agentStep(r.Timestamp)
		s.b.steps[i].Metrics = &atif.Metrics{PromptTokens: it.Usage.InputTokens, CompletionTokens: it.Usage.OutputTokens,
			CachedTokens: it.Usage.CachedTokens}
		s.open = 0
	case "response_item":
		codexResponseItem(&s.b, it, r.Timestamp, s.agentStep)
	}
}

func (s *codexSession) Trajectory() atif.Trajectory { return s.b.trajectory(s.sessionID) }

func codexResponseItem(b *stepBuilder, it codexItem, ts string, agentStep func(string) int) {
	text := func() string {
		var parts []string
		for _, c := range it.Content {
			parts = append(parts, c.Text)
		}
		return strings.Join(parts, "\n")
	}
	switch it.Type {
	case "message":
		switch it.Role {
		case "assistant":
			s := &b.steps[agentStep(ts)]
			s.Message = strings.TrimPrefix(s.Message+"\n"+text(), "\n")
		case "developer", "system":
			b.add(atif.Step{Source: atif.SourceSystem, Timestamp: ts, Message: text()})
		default:
			b.add(atif.Step{Source: atif.SourceUser, Timestamp: ts, Message: text()})
		}
	case "reasoning":
		s := &b.steps[agentStep(ts)]
		for _, p := range it.Summary {
			s.ReasoningContent = strings.TrimPrefix(s.ReasoningContent+"\n"+p.Text, "\n")
		}
	case "function_call", "custom_tool_call", "local_shell_call":
		args := json.RawMessage(it.Arguments)
		if it.Arguments == "" {
			args = rawJSON(it.Input)
		}
		b.call(agentStep(ts), atif.ToolCall{ToolCallID: it.CallID, FunctionName: it.Name, Arguments: rawJSON(string(args))})
	case "function_call_output", "custom_tool_call_output":
		var out string
		if json.Unmarshal(it.Output, &out) != nil {
			out = string(it.Output)
		}
		b.result(it.CallID, out)
	}
}

package harness

import (
	"encoding/json"
	"fmt"
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

func codexUsage(agentLogDir string) (Usage, bool, error) {
	data, err := readStdout(agentLogDir)
	if err != nil {
		return Usage{}, false, err
	}
	var u Usage
	ok := false
	err = eachJSONLine(data, func(line []byte) error {
		var ev codexEvent
		if json.Unmarshal(line, &ev) != nil || ev.Type != "turn.completed" || ev.Usage == nil {
			return nil
		}
		ok = true
		u.InputTokens += ev.Usage.InputTokens
		u.CacheTokens += ev.Usage.CachedTokens
		u.OutputTokens += ev.Usage.OutputTokens
		u.ReasoningTokens += ev.Usage.ReasoningTokens
		return nil
	})
	return u, ok, err
}

// codexModelError reads turn.failed: "unexpected status 401 Unauthorized: …"
// or "exceeded retry limit, last status: 429 Too Many Requests".
func codexModelError(agentLogDir string, exitCode int) (string, string) {
	if exitCode == 0 {
		return "", ""
	}
	data, err := readStdout(agentLogDir)
	if err != nil {
		return "", ""
	}
	var class, detail string
	_ = eachJSONLine(data, func(line []byte) error {
		var ev codexEvent
		if json.Unmarshal(line, &ev) != nil || ev.Type != "turn.failed" || ev.Error == nil {
			return nil
		}
		detail = ev.Error.Message
		class = classifyStatus(statusFromText(strings.ReplaceAll(detail, "unexpected status", "status")))
		return nil
	})
	return class, detail
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

// codexTrajectory reads the rollout: the base instructions and developer
// messages become system steps, user messages user steps, and everything
// the model produced up to a token_usage_record (one per model call) one
// agent step with that record's usage.
func codexTrajectory(src LogSource) (atif.Trajectory, error) {
	path, err := findLog(src.HomeDir, ".codex/sessions/*/*/*/rollout-*.jsonl")
	if err != nil {
		return atif.Trajectory{}, err
	}
	data, err := readLog(path)
	if err != nil {
		return atif.Trajectory{}, err
	}
	var t atif.Trajectory
	var b stepBuilder
	open := -1 // index of the agent step being filled
	agentStep := func(ts string) int {
		if open < 0 {
			b.add(atif.Step{Source: atif.SourceAgent, Timestamp: ts})
			open = len(b.steps) - 1
		}
		return open
	}
	err = eachJSONLine(data, func(line []byte) error {
		var r codexRollout
		if json.Unmarshal(line, &r) != nil {
			return nil
		}
		var it codexItem
		if json.Unmarshal(r.Payload, &it) != nil {
			return nil
		}
		switch r.Type {
		case "session_meta":
			t.SessionID = it.ID
			if it.BaseInstructions != nil && it.BaseInstructions.Text != "" {
				b.add(atif.Step{Source: atif.SourceSystem, Timestamp: r.Timestamp, Message: it.BaseInstructions.Text})
			}
		case "token_usage_record":
			if it.Usage == nil {
				return nil
			}
			i := agentStep(r.Timestamp)
			b.steps[i].Metrics = &atif.Metrics{PromptTokens: it.Usage.InputTokens, CompletionTokens: it.Usage.OutputTokens,
				CachedTokens: it.Usage.CachedTokens}
			open = -1
		case "response_item":
			codexResponseItem(&b, it, r.Timestamp, agentStep)
		}
		return nil
	})
	if err != nil {
		return atif.Trajectory{}, fmt.Errorf("read codex rollout: %w", err)
	}
	t.Steps = b.steps
	return t, nil
}

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

package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// CopilotEventsFile is the copy of Copilot CLI's session event log
// (~/.copilot/session-state/<session>/events.jsonl) that the copilot-cli
// row's Run leaves in /logs/agent: its stdout (--output-format json) carries
// no token counts, the event log does (one session.usage_record per model
// call).
const CopilotEventsFile = "copilot-events.jsonl"

// copilotEvent is one line of Copilot CLI's session event log or of its
// JSON stdout: {type, timestamp, data}.
type copilotEvent struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		SessionID string `json:"sessionId"`
		Content   string `json:"content"`
		Model     string `json:"model"`
		// assistant.message
		ToolRequests []struct {
			ToolCallID string          `json:"toolCallId"`
			Name       string          `json:"name"`
			Arguments  json.RawMessage `json:"arguments"`
		} `json:"toolRequests"`
		// tool.execution_complete
		ToolCallID string `json:"toolCallId"`
		Result     *struct {
			Content string `json:"content"`
		} `json:"result"`
		// session.usage_record: one model call; inputTokens include the
		// cache reads and outputTokens the reasoning (OpenAI's convention,
		// which the BYOK "openai" provider type reports).
		Usage *struct {
			InputTokens     int64   `json:"inputTokens"`
			OutputTokens    int64   `json:"outputTokens"`
			CacheReadTokens int64   `json:"cacheReadTokens"`
			ReasoningTokens int64   `json:"reasoningTokens"`
			Cost            float64 `json:"cost"`
		} `json:"usage"`
		// session.error
		ErrorType  string `json:"errorType"`
		Message    string `json:"message"`
		StatusCode int    `json:"statusCode"`
	} `json:"data"`
}

func eachCopilotEvent(data []byte, fn func(copilotEvent)) error {
	return eachJSONLine(data, func(line []byte) error {
		var ev copilotEvent
		if json.Unmarshal(line, &ev) == nil {
			fn(ev)
		}
		return nil
	})
}

func copilotUsage(agentLogDir string) (Usage, bool, error) {
	data, err := readLog(filepath.Join(agentLogDir, CopilotEventsFile))
	if err != nil {
		return Usage{}, false, ignoreMissing(err)
	}
	var u Usage
	ok := false
	err = eachCopilotEvent(data, func(ev copilotEvent) {
		if ev.Type != "session.usage_record" || ev.Data.Usage == nil {
			return
		}
		ok = true
		r := ev.Data.Usage
		u.InputTokens += r.InputTokens
		u.CacheTokens += r.CacheReadTokens
		u.OutputTokens += r.OutputTokens
		u.ReasoningTokens += r.ReasoningTokens
		// A BYOK provider's calls cost 0 in Copilot's accounting, which
		// is not a price.
		if r.Cost > 0 {
			u.CostUSD += r.Cost
			u.CostReported = true
		}
	})
	return u, ok, err
}

// copilotModelError reads the session.error event Copilot CLI prints when
// the provider failed it ("authentication" with the provider's 401).
func copilotModelError(agentLogDir string, exitCode int) (string, string) {
	data, err := readStdout(agentLogDir)
	if err != nil {
		return "", ""
	}
	var class, detail string
	_ = eachCopilotEvent(data, func(ev copilotEvent) {
		if ev.Type != "session.error" {
			return
		}
		c := classifyStatus(ev.Data.StatusCode)
		if c == "" && ev.Data.ErrorType == "authentication" {
			c = ModelErrorAuth
		}
		if c != "" {
			class, detail = c, ev.Data.Message
		}
	})
	return class, detail
}

// copilotTrajectory builds the trajectory from the session event log (the
// copy in /logs/agent, else the native one in the home): the system
// message, the user's prompt, one agent step per model call — its
// session.usage_record comes first, then the assistant.message with its
// tool requests — and each tool.execution_complete as the calling step's
// observation.
func copilotTrajectory(src LogSource) (atif.Trajectory, error) {
	path := filepath.Join(src.AgentLogDir, CopilotEventsFile)
	data, err := readLog(path)
	if err != nil {
		if ignoreMissing(err) != nil {
			return atif.Trajectory{}, err
		}
		if path, err = findLog(src.HomeDir, ".copilot/session-state/*/events.jsonl"); err != nil {
			return atif.Trajectory{}, err
		}
		if data, err = readLog(path); err != nil {
			return atif.Trajectory{}, err
		}
	}
	var t atif.Trajectory
	var b stepBuilder
	var pending *atif.Metrics // the usage of the model call whose message comes next
	err = eachCopilotEvent(data, func(ev copilotEvent) {
		d := ev.Data
		switch ev.Type {
		case "session.start":
			t.SessionID = d.SessionID
		case "system.message":
			b.add(atif.Step{Source: atif.SourceSystem, Timestamp: ev.Timestamp, Message: d.Content})
		case "user.message":
			b.add(atif.Step{Source: atif.SourceUser, Timestamp: ev.Timestamp, Message: d.Content})
		case "session.usage_record":
			if d.Usage != nil {
				pending = &atif.Metrics{PromptTokens: d.Usage.InputTokens, CompletionTokens: d.Usage.OutputTokens,
					CachedTokens: d.Usage.CacheReadTokens}
			}
		case "assistant.message":
			b.add(atif.Step{Source: atif.SourceAgent, Timestamp: ev.Timestamp, Message: d.Content, Metrics: pending})
			pending = nil
			i := len(b.steps) - 1
			for _, r := range d.ToolRequests {
				b.call(i, atif.ToolCall{ToolCallID: r.ToolCallID, FunctionName: r.Name, Arguments: rawArgs(r.Arguments)})
			}
		case "tool.execution_complete":
			out := ""
			if d.Result != nil {
				out = d.Result.Content
			}
			b.result(d.ToolCallID, out)
		}
	})
	if err != nil {
		return atif.Trajectory{}, fmt.Errorf("read copilot session events: %w", err)
	}
	if t.SessionID == "" && len(b.steps) == 0 {
		return atif.Trajectory{}, fmt.Errorf("%w: copilot's event log %s holds no session", ErrNoLog, filepath.Base(path))
	}
	t.Steps = b.steps
	return t, nil
}

// rawArgs is a tool call's recorded JSON arguments ({} for none).
func rawArgs(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return json.RawMessage("{}")
	}
	return m
}

// ignoreMissing is nil for a log the program did not write (it reported
// nothing), err otherwise.
func ignoreMissing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

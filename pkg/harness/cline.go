package harness

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// clineUsageFields is Cline's usage of one model call or a run. With the
// openai-compatible provider inputTokens include the cache reads (the
// provider's prompt_tokens) and outputTokens the reasoning.
type clineUsageFields struct {
	InputTokens     int64   `json:"inputTokens"`
	OutputTokens    int64   `json:"outputTokens"`
	CacheReadTokens int64   `json:"cacheReadTokens"`
	TotalCost       float64 `json:"totalCost"`
}

// clineLine is one line of `cline --json`: agent_event (usage, content,
// error, done, …), run_result (the run's totals), error.
type clineLine struct {
	Type  string `json:"type"`
	Event *struct {
		Type  string `json:"type"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		ErrorClass string `json:"errorClass"`
	} `json:"event"`
	FinishReason string `json:"finishReason"`
	// AggregateUsage counts the run's subagents too.
	AggregateUsage *clineUsageFields `json:"aggregateUsage"`
	Usage          *clineUsageFields `json:"usage"`
	Message        string            `json:"message"`
}

// clineOutput reads `cline --json`: the run_result's totals and the last
// model error event.
type clineOutput struct {
	stdoutOnly
	usage         *Usage
	class, detail string
}

func (p *clineOutput) event(l clineLine) {
	if l.Type == "agent_event" && l.Event != nil && l.Event.Type == "error" && l.Event.Error != nil {
		c := clineErrorClasses[l.Event.ErrorClass]
		if c == "" {
			c = classifyStatus(statusFromText(l.Event.Error.Message))
		}
		if c != "" {
			p.class, p.detail = c, l.Event.Error.Message
		}
	}
	if l.Type != "run_result" {
		return
	}
	r := l.AggregateUsage
	if r == nil {
		r = l.Usage
	}
	if r == nil {
		return
	}
	u := Usage{InputTokens: r.InputTokens, CacheTokens: r.CacheReadTokens, OutputTokens: r.OutputTokens}
	// Cline prices only the models of its own catalogue; a custom
	// endpoint's calls cost 0, which is not a price.
	if r.TotalCost > 0 {
		u.CostUSD, u.CostReported = r.TotalCost, true
	}
	p.usage = &u
}

func (p *clineOutput) Usage() (Usage, bool) {
	if p.usage == nil {
		return Usage{}, false
	}
	return *p.usage, true
}

func (p *clineOutput) ModelError(int) (string, string) { return p.class, p.detail }

// clineErrorClasses maps Cline's own error classes onto model error classes.
var clineErrorClasses = map[string]string{
	"auth":       ModelErrorAuth,
	"rate_limit": ModelErrorUnavailable,
	"server":     ModelErrorUnavailable,
}

// clineMessages is Cline's session store of one session,
// ~/.cline/data/sessions/<id>/<id>.messages.json: Anthropic-style messages,
// each assistant message one model call with its metrics.
type clineMessages struct {
	SessionID    string `json:"sessionId"`
	SystemPrompt string `json:"system_prompt"`
	Messages     []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		TS      int64           `json:"ts"` // Unix ms
		Metrics *struct {
			InputTokens     int64 `json:"inputTokens"`
			OutputTokens    int64 `json:"outputTokens"`
			CacheReadTokens int64 `json:"cacheReadTokens"`
		} `json:"metrics"`
	} `json:"messages"`
}

type clineBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// clineTrajectory builds the trajectory from Cline's session messages: the
// system prompt, the user's messages (Cline's own "[SYSTEM] …" reminders
// among them, as it sent them), one agent step per assistant message with
// its tool_use blocks, and each tool_result as the calling step's
// observation.
func clineTrajectory(src LogSource) (atif.Trajectory, error) {
	path, err := findLog(src.HomeDir, ".cline/data/sessions/*/*.messages.json")
	if err != nil {
		return atif.Trajectory{}, err
	}
	data, err := readLog(path)
	if err != nil {
		return atif.Trajectory{}, err
	}
	var doc clineMessages
	if err := json.Unmarshal(data, &doc); err != nil {
		return atif.Trajectory{}, fmt.Errorf("read cline session %s: %w", filepath.Base(path), err)
	}
	t := atif.Trajectory{SessionID: doc.SessionID}
	var b stepBuilder
	if doc.SystemPrompt != "" {
		b.add(atif.Step{Source: atif.SourceSystem, Message: doc.SystemPrompt})
	}
	for _, m := range doc.Messages {
		ts := ""
		if m.TS > 0 {
			ts = time.UnixMilli(m.TS).UTC().Format(time.RFC3339Nano)
		}
		var blocks []clineBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			var text string
			if json.Unmarshal(m.Content, &text) != nil {
				continue
			}
			blocks = []clineBlock{{Type: "text", Text: text}}
		}
		var texts []string
		for _, c := range blocks {
			if c.Type == "text" {
				texts = append(texts, c.Text)
			}
		}
		switch m.Role {
		case "assistant":
			s := atif.Step{Source: atif.SourceAgent, Timestamp: ts, Message: strings.Join(texts, "\n")}
			if m.Metrics != nil {
				s.Metrics = &atif.Metrics{PromptTokens: m.Metrics.InputTokens, CompletionTokens: m.Metrics.OutputTokens,
					CachedTokens: m.Metrics.CacheReadTokens}
			}
			b.add(s)
			i := len(b.steps) - 1
			for _, c := range blocks {
				if c.Type == "tool_use" {
					b.call(i, atif.ToolCall{ToolCallID: c.ID, FunctionName: c.Name, Arguments: rawArgs(c.Input)})
				}
			}
		case "user":
			for _, c := range blocks {
				if c.Type == "tool_result" {
					b.result(c.ToolUseID, clineResultText(c.Content))
				}
			}
			if len(texts) > 0 {
				b.add(atif.Step{Source: atif.SourceUser, Timestamp: ts, Message: strings.Join(texts, "\n")})
			}
		}
	}
	t.Steps = b.steps
	return t, nil
}

// clineResultText is a tool result's content as text: a string as it is,
// anything else (run_commands' [{query, result, success}]) as its JSON.
func clineResultText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	return string(c)
}

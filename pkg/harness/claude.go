package harness

import (
	"encoding/json"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// claudeUsageFields is Anthropic's usage: input_tokens leave the cache
// reads and writes out.
type claudeUsageFields struct {
	InputTokens         int64 `json:"input_tokens"`
	CacheReadTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
}

func (u claudeUsageFields) prompt() int64 {
	return u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
}

// claudeResult is the final `result` event of --output-format stream-json.
// A failed call still ends with subtype "success" but is_error true and the
// provider's status in api_error_status.
type claudeResult struct {
	Type           string             `json:"type"`
	IsError        bool               `json:"is_error"`
	APIErrorStatus int                `json:"api_error_status"`
	Result         string             `json:"result"`
	TotalCostUSD   *float64           `json:"total_cost_usd"`
	Usage          *claudeUsageFields `json:"usage"`
}

// claudeOutput reads claude's stream-json stdout: the last `result`
// event carries the usage, the cost and whether the run failed.
type claudeOutput struct {
	stdoutOnly
	res *claudeResult // nil until a result event is read
}

func (p *claudeOutput) event(r claudeResult) {
	if r.Type == "result" {
		p.res = &r
	}
}

func (p *claudeOutput) Usage() (Usage, bool) {
	r := p.res
	if r == nil || r.Usage == nil {
		return Usage{}, false
	}
	u := Usage{InputTokens: r.Usage.prompt(), CacheTokens: r.Usage.CacheReadTokens, OutputTokens: r.Usage.OutputTokens}
	if r.TotalCostUSD != nil {
		// Claude Code prices its usage at Anthropic's list prices.
		u.CostUSD, u.CostReported = *r.TotalCostUSD, true
	}
	return u, true
}

func (p *claudeOutput) ModelError(exitCode int) (string, string) {
	if p.res == nil || !p.res.IsError {
		return "", ""
	}
	return classifyStatus(p.res.APIErrorStatus), p.res.Result
}

// claudeLine is one line of ~/.claude/projects/<cwd>/<session>.jsonl.
type claudeLine struct {
	Type       string `json:"type"`
	Timestamp  string `json:"timestamp"`
	SessionID  string `json:"sessionId"`
	Attachment *struct {
		Type         string   `json:"type"`
		SystemPrompt []string `json:"systemPrompt"`
	} `json:"attachment"`
	Message *struct {
		ID      string             `json:"id"`
		Role    string             `json:"role"`
		Content json.RawMessage    `json:"content"`
		Usage   *claudeUsageFields `json:"usage"`
	} `json:"message"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// claudeSession reads the session log: the first prompt snapshot is the
// system step, user lines are user steps (their tool_result blocks the
// observations of the calls they answer), and the assistant lines of one
// message id (Claude Code writes a line per content block) one agent step.
type claudeSession struct {
	jsonLines
	sessionID string
	b         stepBuilder
	byMessage map[string]int
	system    bool
}

func (s *claudeSession) line(l claudeLine) {
	if s.byMessage == nil {
		s.byMessage = map[string]int{}
	}
	if s.sessionID == "" {
		s.sessionID = l.SessionID
	}
	switch {
	case l.Type == "attachment" && l.Attachment != nil && l.Attachment.Type == "prompt_snapshot" && !s.system:
		s.system = true
		s.b.add(atif.Step{Source: atif.SourceSystem, Timestamp: l.Timestamp, Message: strings.Join(l.Attachment.SystemPrompt, "\n")})
	case l.Type == "user" && l.Message != nil:
		claudeUser(&s.b, l)
	case l.Type == "assistant" && l.Message != nil:
		i, ok := s.byMessage[l.Message.ID]
		if !ok || l.Message.ID == "" {
			s.b.add(atif.Step{Source: atif.SourceAgent, Timestamp: l.Timestamp})
			i = len(s.b.steps) - 1
			s.byMessage[l.Message.ID] = i
		}
		claudeAssistant(&s.b, i, l)
	}
}

func (s *claudeSession) Trajectory() atif.Trajectory { return s.b.trajectory(s.sessionID) }

func claudeUser(b *stepBuilder, l claudeLine) {
	var text string
	if json.Unmarshal(l.Message.Content, &text) == nil {
		b.add(atif.Step{Source: atif.SourceUser, Timestamp: l.Timestamp, Message: text})
		return
	}
	var blocks []claudeBlock
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return
	}
	var texts []string
	for _, c := range blocks {
		switch c.Type {
		case "tool_result":
			b.result(c.ToolUseID, claudeText(c.Content))
		case "text":
			texts = append(texts, c.Text)
		}
	}
	if len(texts) > 0 {
		b.add(atif.Step{Source: atif.SourceUser, Timestamp: l.Timestamp, Message: strings.Join(texts, "\n")})
	}
}

func claudeAssistant(b *stepBuilder, i int, l claudeLine) {
	var blocks []claudeBlock
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return
	}
	for _, c := range blocks {
		s := &b.steps[i]
		switch c.Type {
		case "text":
			s.Message = strings.TrimPrefix(s.Message+"\n"+c.Text, "\n")
		case "thinking":
			s.ReasoningContent = strings.TrimPrefix(s.ReasoningContent+"\n"+c.Thinking, "\n")
		case "tool_use":
			b.call(i, atif.ToolCall{ToolCallID: c.ID, FunctionName: c.Name, Arguments: rawJSON(c.Input)})
		}
	}
	if u := l.Message.Usage; u != nil {
		b.steps[i].Metrics = &atif.Metrics{PromptTokens: u.prompt(), CompletionTokens: u.OutputTokens, CachedTokens: u.CacheReadTokens}
	}
}

// claudeText is a tool result's content: a string or a list of text blocks.
func claudeText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []claudeBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	var parts []string
	for _, c := range blocks {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

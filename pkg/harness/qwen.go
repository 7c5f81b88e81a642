package harness

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// qwenUsageFields is qwen-code's usage in its stream-json events: unlike
// Anthropic's, input_tokens include the cache reads (the OpenAI
// prompt_tokens it was given), and output_tokens the reasoning.
type qwenUsageFields struct {
	InputTokens     int64 `json:"input_tokens"`
	CacheReadTokens int64 `json:"cache_read_input_tokens"`
	OutputTokens    int64 `json:"output_tokens"`
}

// qwenEvent is one line of `qwen --output-format stream-json`: system init,
// assistant (one per model answer, with its usage), user (tool results),
// result (the totals; is_error and error.message when the run failed).
type qwenEvent struct {
	Type    string `json:"type"`
	IsError bool   `json:"is_error"`
	Message *struct {
		Usage *qwenUsageFields `json:"usage"`
	} `json:"message"`
	Usage *qwenUsageFields `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// qwenOutput reads qwen's stream-json stdout: the final result event's
// usage — or, when the program was ended before it printed one (a
// timeout, a memory kill), the sum of the answers it did print — and the
// failed result's error message.
type qwenOutput struct {
	stdoutOnly
	final         *qwenUsageFields
	sum           Usage
	answers       bool
	class, detail string
}

func (p *qwenOutput) event(ev qwenEvent) {
	switch {
	case ev.Type == "result" && ev.Usage != nil:
		p.final = ev.Usage
	case ev.Type == "assistant" && ev.Message != nil && ev.Message.Usage != nil:
		p.answers = true
		p.sum.InputTokens += ev.Message.Usage.InputTokens
		p.sum.CacheTokens += ev.Message.Usage.CacheReadTokens
		p.sum.OutputTokens += ev.Message.Usage.OutputTokens
	}
	if ev.Type == "result" && ev.IsError && ev.Error != nil {
		status := 0
		if m := qwenAPIError.FindStringSubmatch(ev.Error.Message); m != nil {
			status, _ = strconv.Atoi(m[1])
		} else {
			status = statusFromText(ev.Error.Message)
		}
		p.class, p.detail = classifyStatus(status), ev.Error.Message
	}
}

func (p *qwenOutput) Usage() (Usage, bool) {
	if f := p.final; f != nil {
		return Usage{InputTokens: f.InputTokens, CacheTokens: f.CacheReadTokens, OutputTokens: f.OutputTokens}, true
	}
	return p.sum, p.answers
}

func (p *qwenOutput) ModelError(int) (string, string) { return p.class, p.detail }

// qwenAPIError is how qwen-code words a provider's refusal:
// "[API Error: 401 …]".
var qwenAPIError = regexp.MustCompile(`API Error: (\d{3})\b`)

// qwenRecord is one line of ~/.qwen/projects/<cwd>/chats/<session>.jsonl,
// written as the session goes (so a killed run leaves the calls it made):
// user (the prompt), assistant (one model answer, Gemini-style parts and
// usageMetadata), tool_result (functionResponse parts), system (telemetry
// and snapshots, skipped).
type qwenRecord struct {
	SessionID string `json:"sessionId"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	Message   *struct {
		Parts []struct {
			Text         string `json:"text"`
			Thought      bool   `json:"thought"`
			FunctionCall *struct {
				ID   string          `json:"id"`
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			} `json:"functionCall"`
			FunctionResponse *struct {
				ID       string          `json:"id"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"message"`
	// UsageMetadata is the answer's usage in Gemini's names, converted from
	// the OpenAI usage: promptTokenCount includes the cached tokens,
	// candidatesTokenCount the reasoning (completion_tokens).
	UsageMetadata *struct {
		Prompt     int64 `json:"promptTokenCount"`
		Candidates int64 `json:"candidatesTokenCount"`
		Cached     int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
}

// qwenSession reads the session log, one step per user and assistant
// record, tool results attached to the calls they answer.
type qwenSession struct {
	jsonLines
	sessionID string
	b         stepBuilder
}

func (s *qwenSession) line(r qwenRecord) {
	if s.sessionID == "" {
		s.sessionID = r.SessionID
	}
	qwenStep(&s.b, r)
}

func (s *qwenSession) Trajectory() atif.Trajectory { return s.b.trajectory(s.sessionID) }

func qwenStep(b *stepBuilder, r qwenRecord) {
	if r.Message == nil {
		return
	}
	switch r.Type {
	case "user":
		var texts []string
		for _, p := range r.Message.Parts {
			if p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
		if len(texts) > 0 {
			b.add(atif.Step{Source: atif.SourceUser, Timestamp: r.Timestamp, Message: strings.Join(texts, "\n")})
		}
	case "assistant":
		var texts, thoughts []string
		for _, p := range r.Message.Parts {
			switch {
			case p.Thought:
				thoughts = append(thoughts, p.Text)
			case p.Text != "":
				texts = append(texts, p.Text)
			}
		}
		s := b.add(atif.Step{Source: atif.SourceAgent, Timestamp: r.Timestamp,
			Message: strings.Join(texts, "\n"), ReasoningContent: strings.Join(thoughts, "\n")})
		if u := r.UsageMetadata; u != nil {
			s.Metrics = &atif.Metrics{PromptTokens: u.Prompt, CompletionTokens: u.Candidates, CachedTokens: u.Cached}
		}
		i := len(b.steps) - 1
		for _, p := range r.Message.Parts {
			if c := p.FunctionCall; c != nil {
				b.call(i, atif.ToolCall{ToolCallID: c.ID, FunctionName: c.Name, Arguments: rawJSON(c.Args)})
			}
		}
	case "tool_result":
		for _, p := range r.Message.Parts {
			fr := p.FunctionResponse
			if fr == nil {
				continue
			}
			var resp struct {
				Output string `json:"output"`
			}
			content := string(fr.Response)
			if json.Unmarshal(fr.Response, &resp) == nil && resp.Output != "" {
				content = resp.Output
			}
			b.result(fr.ID, content)
		}
	}
}

package harness

import (
	"encoding/json"
	"fmt"
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

func eachQwenEvent(agentLogDir string, fn func(qwenEvent)) error {
	data, err := readStdout(agentLogDir)
	if err != nil {
		return err
	}
	return eachJSONLine(data, func(line []byte) error {
		var ev qwenEvent
		if json.Unmarshal(line, &ev) == nil {
			fn(ev)
		}
		return nil
	})
}

// qwenUsage reads the final result event's usage; when the program was
// ended before it printed one (a timeout, a memory kill), the sum of the
// answers it did print.
func qwenUsage(agentLogDir string) (Usage, bool, error) {
	var final *qwenUsageFields
	var sum Usage
	answers := false
	err := eachQwenEvent(agentLogDir, func(ev qwenEvent) {
		switch {
		case ev.Type == "result" && ev.Usage != nil:
			final = ev.Usage
		case ev.Type == "assistant" && ev.Message != nil && ev.Message.Usage != nil:
			answers = true
			sum.InputTokens += ev.Message.Usage.InputTokens
			sum.CacheTokens += ev.Message.Usage.CacheReadTokens
			sum.OutputTokens += ev.Message.Usage.OutputTokens
		}
	})
	if err != nil {
		return Usage{}, false, err
	}
	if final != nil {
		return Usage{InputTokens: final.InputTokens, CacheTokens: final.CacheReadTokens, OutputTokens: final.OutputTokens}, true, nil
	}
	return sum, answers, nil
}

// qwenAPIError is how qwen-code words a provider's refusal:
// "[API Error: 401 …]".
var qwenAPIError = regexp.MustCompile(`API Error: (\d{3})\b`)

// qwenModelError reads the failed result event's error message.
func qwenModelError(agentLogDir string, exitCode int) (string, string) {
	var class, detail string
	_ = eachQwenEvent(agentLogDir, func(ev qwenEvent) {
		if ev.Type != "result" || !ev.IsError || ev.Error == nil {
			return
		}
		status := 0
		if m := qwenAPIError.FindStringSubmatch(ev.Error.Message); m != nil {
			status, _ = strconv.Atoi(m[1])
		} else {
			status = statusFromText(ev.Error.Message)
		}
		class, detail = classifyStatus(status), ev.Error.Message
	})
	return class, detail
}

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

func qwenTrajectory(src LogSource) (atif.Trajectory, error) {
	path, err := findLog(src.HomeDir, ".qwen/projects/*/chats/*.jsonl")
	if err != nil {
		return atif.Trajectory{}, err
	}
	data, err := readLog(path)
	if err != nil {
		return atif.Trajectory{}, err
	}
	var t atif.Trajectory
	var b stepBuilder
	err = eachJSONLine(data, func(line []byte) error {
		var r qwenRecord
		if json.Unmarshal(line, &r) != nil {
			return nil
		}
		if t.SessionID == "" {
			t.SessionID = r.SessionID
		}
		qwenStep(&b, r)
		return nil
	})
	if err != nil {
		return atif.Trajectory{}, fmt.Errorf("read qwen-code session log: %w", err)
	}
	t.Steps = b.steps
	return t, nil
}

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

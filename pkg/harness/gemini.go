package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// geminiTokens are gemini-cli's token counts: prompt includes the cached
// tokens; candidates leave the thoughts out.
type geminiTokens struct {
	Prompt     int64 `json:"prompt"`
	Input      int64 `json:"input"`
	Cached     int64 `json:"cached"`
	Candidates int64 `json:"candidates"`
	Output     int64 `json:"output"`
	Thoughts   int64 `json:"thoughts"`
}

// geminiOutput reads `gemini -p --output-format json`: the JSON document
// that ends its stdout (stats, one entry per model version that answered)
// and the error JSON it prints on stderr.
type geminiOutput struct {
	stdout, stderr lastJSON
}

func newGeminiOutput() OutputParser { return &geminiOutput{} }

func (p *geminiOutput) Stdout() io.Writer { return &p.stdout }
func (p *geminiOutput) Stderr() io.Writer { return &p.stderr }
func (p *geminiOutput) Close() error      { return errors.Join(p.stdout.Close(), p.stderr.Close()) }

func (p *geminiOutput) Usage() (Usage, bool) {
	var out struct {
		Stats *struct {
			Models map[string]struct {
				Tokens geminiTokens `json:"tokens"`
			} `json:"models"`
		} `json:"stats"`
	}
	if !p.stdout.Decode(&out) || out.Stats == nil {
		return Usage{}, false
	}
	var u Usage
	for _, m := range out.Stats.Models {
		u.InputTokens += m.Tokens.Prompt
		u.CacheTokens += m.Tokens.Cached
		u.OutputTokens += m.Tokens.Candidates + m.Tokens.Thoughts
		u.ReasoningTokens += m.Tokens.Thoughts
	}
	return u, true
}

// geminiStatuses are the HTTP statuses whose value mod 256 gemini-cli
// exits with.
var geminiStatuses = []int{401, 403, 429, 500, 502, 503, 504}

// ModelError reads the error JSON gemini-cli prints on stderr
// ({"error": {"code": 401}}), else its exit code, the HTTP status mod 256.
func (p *geminiOutput) ModelError(exitCode int) (string, string) {
	if exitCode == 0 {
		return "", ""
	}
	var out struct {
		Error *struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if p.stderr.Decode(&out) && out.Error != nil {
		if c := classifyStatus(out.Error.Code); c != "" {
			return c, out.Error.Message
		}
	}
	if i := slices.IndexFunc(geminiStatuses, func(s int) bool { return s%256 == exitCode }); i >= 0 {
		return classifyStatus(geminiStatuses[i]), fmt.Sprintf("gemini-cli exited with %d, HTTP status %d mod 256", exitCode, geminiStatuses[i])
	}
	return "", ""
}

// geminiRecord is one record of ~/.gemini/tmp/<dir>/chats/session-*.jsonl.
// A record is rewritten with the same id as it grows (the tool calls are
// added to the model's turn once they ran): the last version wins.
type geminiRecord struct {
	SessionID string          `json:"sessionId"`
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Thoughts  []struct {
		Subject     string `json:"subject"`
		Description string `json:"description"`
	} `json:"thoughts"`
	Tokens    *geminiTokens `json:"tokens"`
	ToolCalls []struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"toolCalls"`
}

type geminiPart struct {
	Text             string `json:"text"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// geminiSession reads the session log, keeping the last version of each
// record in the order the records first appeared.
type geminiSession struct {
	jsonLines
	sessionID string
	order     []string
	records   map[string]geminiRecord
}

func (s *geminiSession) line(r geminiRecord) {
	if s.records == nil {
		s.records = map[string]geminiRecord{}
	}
	if r.SessionID != "" && s.sessionID == "" {
		s.sessionID = r.SessionID
	}
	if r.ID == "" || r.Type == "" {
		return
	}
	if _, seen := s.records[r.ID]; !seen {
		s.order = append(s.order, r.ID)
	}
	s.records[r.ID] = r
}

func (s *geminiSession) Trajectory() atif.Trajectory {
	var b stepBuilder
	for _, id := range s.order {
		geminiStep(&b, s.records[id])
	}
	return atif.Trajectory{SessionID: s.sessionID, Steps: b.steps}
}

func geminiStep(b *stepBuilder, r geminiRecord) {
	switch r.Type {
	case "gemini":
		var text string
		_ = json.Unmarshal(r.Content, &text)
		s := b.add(atif.Step{Source: atif.SourceAgent, Timestamp: r.Timestamp, Message: text})
		var thoughts []string
		for _, th := range r.Thoughts {
			thoughts = append(thoughts, strings.TrimSpace(th.Subject+": "+th.Description))
		}
		s.ReasoningContent = strings.Join(thoughts, "\n")
		if r.Tokens != nil {
			s.Metrics = &atif.Metrics{PromptTokens: r.Tokens.Input, CompletionTokens: r.Tokens.Output + r.Tokens.Thoughts,
				CachedTokens: r.Tokens.Cached}
		}
		i := len(b.steps) - 1
		for _, c := range r.ToolCalls {
			b.call(i, atif.ToolCall{ToolCallID: c.ID, FunctionName: c.Name, Arguments: rawJSON(c.Args)})
		}
	case "user":
		var parts []geminiPart
		if json.Unmarshal(r.Content, &parts) != nil {
			return
		}
		var texts []string
		for _, p := range parts {
			if p.FunctionResponse != nil {
				var resp struct {
					Output string `json:"output"`
				}
				content := string(p.FunctionResponse.Response)
				if json.Unmarshal(p.FunctionResponse.Response, &resp) == nil && resp.Output != "" {
					content = resp.Output
				}
				b.result(p.FunctionResponse.ID, content)
				continue
			}
			texts = append(texts, p.Text)
		}
		if len(texts) > 0 {
			b.add(atif.Step{Source: atif.SourceUser, Timestamp: r.Timestamp, Message: strings.Join(texts, "\n")})
		}
	}
}

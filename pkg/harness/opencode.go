package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// opencodeEvent is one line of `opencode run --format json`: step_start,
// text, tool_use, step_finish (with the step's tokens and cost), error.
type opencodeEvent struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp"` // Unix ms
	SessionID string `json:"sessionID"`
	Part      *struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Tool   string `json:"tool"`
		CallID string `json:"callID"`
		State  *struct {
			Input  json.RawMessage `json:"input"`
			Output string          `json:"output"`
		} `json:"state"`
		// step-finish: input leaves the cache reads and writes out.
		Tokens *struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			Reasoning int64 `json:"reasoning"`
			Cache     struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
		Cost *float64 `json:"cost"`
	} `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message    string `json:"message"`
			StatusCode int    `json:"statusCode"`
		} `json:"data"`
	} `json:"error"`
}

func eachOpencodeEvent(agentLogDir string, fn func(opencodeEvent)) error {
	data, err := readStdout(agentLogDir)
	if err != nil {
		return err
	}
	return eachJSONLine(data, func(line []byte) error {
		var ev opencodeEvent
		if json.Unmarshal(line, &ev) == nil {
			fn(ev)
		}
		return nil
	})
}

// opencodeOutput reads opencode's JSON events on stdout: the steps'
// tokens and cost summed, and the last error event.
type opencodeOutput struct {
	stdoutOnly
	usage         Usage
	reported      bool
	class, detail string
}

func (p *opencodeOutput) event(ev opencodeEvent) {
	if ev.Type == "error" && ev.Error != nil {
		p.class, p.detail = classifyStatus(ev.Error.Data.StatusCode), ev.Error.Data.Message
	}
	if ev.Type != "step_finish" || ev.Part == nil || ev.Part.Tokens == nil {
		return
	}
	p.reported = true
	tk := ev.Part.Tokens
	p.usage.InputTokens += tk.Input + tk.Cache.Read + tk.Cache.Write
	p.usage.CacheTokens += tk.Cache.Read
	p.usage.OutputTokens += tk.Output + tk.Reasoning
	p.usage.ReasoningTokens += tk.Reasoning
	// opencode prices only the models of its own catalogue; a custom
	// provider's steps cost 0, which is not a price.
	if ev.Part.Cost != nil && *ev.Part.Cost > 0 {
		p.usage.CostUSD += *ev.Part.Cost
		p.usage.CostReported = true
	}
}

func (p *opencodeOutput) Usage() (Usage, bool)            { return p.usage, p.reported }
func (p *opencodeOutput) ModelError(int) (string, string) { return p.class, p.detail }

// opencodeTrajectory builds the trajectory from opencode's JSON event
// stream (its own session store is a SQLite database, kept as the native
// log): the instruction is the user step, each step_start … step_finish
// one agent step. opencode's session-title call (a model call without
// tools) appears in no event.
func opencodeTrajectory(src LogSource) (atif.Trajectory, error) {
	var t atif.Trajectory
	var b stepBuilder
	instr, err := readLog(filepath.Join(src.AgentLogDir, "instruction.md"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return t, err
	}
	if len(instr) > 0 {
		b.add(atif.Step{Source: atif.SourceUser, Message: string(instr)})
	}
	open := -1
	err = eachOpencodeEvent(src.AgentLogDir, func(ev opencodeEvent) {
		if t.SessionID == "" {
			t.SessionID = ev.SessionID
		}
		ts := ""
		if ev.Timestamp > 0 {
			ts = time.UnixMilli(ev.Timestamp).UTC().Format(time.RFC3339Nano)
		}
		if ev.Part == nil {
			return
		}
		if open < 0 && ev.Type != "error" {
			b.add(atif.Step{Source: atif.SourceAgent, Timestamp: ts})
			open = len(b.steps) - 1
		}
		switch ev.Type {
		case "text":
			s := &b.steps[open]
			if s.Message != "" {
				s.Message += "\n"
			}
			s.Message += ev.Part.Text
		case "tool_use":
			id := ev.Part.CallID
			if id == "" {
				id = "call_" + strconv.Itoa(len(b.byCall)+1)
			}
			var in json.RawMessage
			out := ""
			if ev.Part.State != nil {
				in, out = ev.Part.State.Input, ev.Part.State.Output
			}
			b.call(open, atif.ToolCall{ToolCallID: id, FunctionName: ev.Part.Tool, Arguments: rawJSON(in)})
			b.result(id, out)
		case "step_finish":
			if tk := ev.Part.Tokens; tk != nil {
				b.steps[open].Metrics = &atif.Metrics{PromptTokens: tk.Input + tk.Cache.Read + tk.Cache.Write,
					CompletionTokens: tk.Output + tk.Reasoning, CachedTokens: tk.Cache.Read}
			}
			open = -1
		}
	})
	if err != nil {
		return t, fmt.Errorf("read opencode events: %w", err)
	}
	if t.SessionID == "" {
		return t, fmt.Errorf("%w: opencode printed no events", ErrNoLog)
	}
	t.Steps = b.steps
	return t, nil
}

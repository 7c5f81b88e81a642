package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

// Usage is the token count of one call or a sum of calls, read from the wire
// protocol. Input includes cache reads and writes; Output includes the
// reasoning tokens (OpenAI's convention; the others are converted).
type Usage struct {
	Input      int64 `json:"input_tokens"`
	Cached     int64 `json:"cached_tokens"`
	CacheWrite int64 `json:"cache_write_tokens,omitempty"`
	Output     int64 `json:"output_tokens"`
	Reasoning  int64 `json:"reasoning_tokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{Input: u.Input + v.Input, Cached: u.Cached + v.Cached, CacheWrite: u.CacheWrite + v.CacheWrite,
		Output: u.Output + v.Output, Reasoning: u.Reasoning + v.Reasoning}
}

// Total is input plus output tokens, what a token budget counts.
func (u Usage) Total() int64 { return u.Input + u.Output }

// meter reads usage from an answer as it streams through: SSE events one by
// one, or a whole JSON body at its end.
type meter struct {
	api wireapi.API
	sse bool

	buf   []byte // SSE: the incomplete line; JSON: the body so far
	data  []byte // SSE: the current event's data lines
	usage Usage
	model string
	found bool // usage was seen
	// cost is a cost the provider reported (OpenRouter's usage.cost).
	cost      float64
	costFound bool
}

// maxJSONBody bounds what a non-streamed answer may buffer for metering.
const maxJSONBody = 64 << 20

func newMeter(api wireapi.API, sse bool) *meter { return &meter{api: api, sse: sse} }

// Write feeds answer bytes; it never fails (metering must not break a call).
func (m *meter) Write(p []byte) (int, error) {
	if !m.sse {
		if len(m.buf)+len(p) <= maxJSONBody {
			m.buf = append(m.buf, p...)
		}
		return len(p), nil
	}
	m.buf = append(m.buf, p...)
	for {
		i := bytes.IndexByte(m.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(m.buf[:i], []byte("\r"))
		m.line(line)
		m.buf = m.buf[i+1:]
	}
	if len(m.buf) == 0 {
		m.buf = nil // let the backing array go between events
	}
	return len(p), nil
}

func (m *meter) line(line []byte) {
	switch {
	case len(line) == 0:
		m.dispatch()
	case bytes.HasPrefix(line, []byte("data:")):
		d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
		if len(m.data) > 0 {
			m.data = append(m.data, '\n')
		}
		m.data = append(m.data, d...)
	}
}

func (m *meter) dispatch() {
	if len(m.data) == 0 {
		return
	}
	d := m.data
	m.data = nil
	// Only events carrying usage (usage, usageMetadata) or the model are
	// decoded: a long answer is mostly deltas, and decoding each would cost
	// more than forwarding it.
	if !bytes.Contains(d, []byte(`"usage`)) && !bytes.Contains(d, []byte(`"response.created"`)) {
		return
	}
	var v map[string]any
	if json.Unmarshal(d, &v) == nil {
		m.event(v)
	}
}

// finish reads a buffered JSON answer, or an SSE event the stream ended
// without a blank line after.
func (m *meter) finish() {
	if m.sse {
		if len(m.buf) > 0 {
			m.line(m.buf)
			m.buf = nil
		}
		m.dispatch()
		return
	}
	b := bytes.TrimSpace(m.buf)
	m.buf = nil
	if len(b) > 0 && b[0] == '[' { // Gemini's streamGenerateContent without alt=sse
		var arr []map[string]any
		if json.Unmarshal(b, &arr) == nil {
			for _, v := range arr {
				m.event(v)
			}
		}
		return
	}
	var v map[string]any
	if json.Unmarshal(b, &v) == nil {
		m.body(v)
	}
}

// event reads one streamed event.
func (m *meter) event(v map[string]any) {
	switch m.api {
	case wireapi.Responses:
		switch v["type"] {
		case "response.completed", "response.incomplete", "response.failed", "response.done":
			if r, ok := v["response"].(map[string]any); ok {
				m.body(r)
			}
		case "response.created":
			if r, ok := v["response"].(map[string]any); ok {
				m.setModel(r["model"])
			}
		}
	case wireapi.Chat:
		m.body(v)
	case wireapi.Messages:
		switch v["type"] {
		case "message_start":
			if msg, ok := v["message"].(map[string]any); ok {
				m.body(msg)
			}
		case "message_delta":
			if u, ok := v["usage"].(map[string]any); ok {
				m.anthropic(u)
			}
		}
	case wireapi.Gemini:
		m.body(v)
	}
}

// body reads a whole answer object (or, for Chat and Gemini, a chunk: both
// carry their usage in the same place as the whole answer).
func (m *meter) body(v map[string]any) {
	m.setModel(v["model"])
	switch m.api {
	case wireapi.Responses:
		if u, ok := v["usage"].(map[string]any); ok {
			m.found = true
			m.usage = Usage{
				Input:     num(u, "input_tokens"),
				Cached:    num(u, "input_tokens_details", "cached_tokens"),
				Output:    num(u, "output_tokens"),
				Reasoning: num(u, "output_tokens_details", "reasoning_tokens"),
			}
		}
	case wireapi.Chat:
		if u, ok := v["usage"].(map[string]any); ok {
			m.found = true
			m.usage = Usage{
				Input:     num(u, "prompt_tokens"),
				Cached:    max(num(u, "prompt_tokens_details", "cached_tokens"), num(u, "prompt_cache_hit_tokens")),
				Output:    num(u, "completion_tokens"),
				Reasoning: num(u, "completion_tokens_details", "reasoning_tokens"),
			}
			if c, ok := u["cost"].(float64); ok {
				m.cost, m.costFound = c, true
			}
		}
	case wireapi.Messages:
		if u, ok := v["usage"].(map[string]any); ok {
			m.anthropic(u)
		}
	case wireapi.Gemini:
		m.setModel(v["modelVersion"])
		if u, ok := v["usageMetadata"].(map[string]any); ok {
			m.found = true
			thoughts := num(u, "thoughtsTokenCount")
			m.usage = Usage{
				Input:     num(u, "promptTokenCount") + num(u, "toolUsePromptTokenCount"),
				Cached:    num(u, "cachedContentTokenCount"),
				Output:    num(u, "candidatesTokenCount") + thoughts,
				Reasoning: thoughts,
			}
		}
	}
}

// anthropic reads an Anthropic usage object: message_start carries the
// input side, message_delta the (cumulative) output and sometimes the input
// again; a field present replaces the one seen before.
func (m *meter) anthropic(u map[string]any) {
	m.found = true
	in := m.usage.Input - m.usage.Cached - m.usage.CacheWrite
	if _, ok := u["input_tokens"]; ok {
		in = num(u, "input_tokens")
	}
	if _, ok := u["cache_read_input_tokens"]; ok {
		m.usage.Cached = num(u, "cache_read_input_tokens")
	}
	if _, ok := u["cache_creation_input_tokens"]; ok {
		m.usage.CacheWrite = num(u, "cache_creation_input_tokens")
	}
	m.usage.Input = in + m.usage.Cached + m.usage.CacheWrite
	if _, ok := u["output_tokens"]; ok {
		m.usage.Output = num(u, "output_tokens")
	}
}

func (m *meter) setModel(v any) {
	if s, ok := v.(string); ok && s != "" {
		m.model = s
	}
}

// num reads a number at path; 0 when absent.
func num(v map[string]any, path ...string) int64 {
	var cur any = v
	for _, p := range path {
		o, ok := cur.(map[string]any)
		if !ok {
			return 0
		}
		cur = o[p]
	}
	f, _ := cur.(float64)
	return int64(f)
}

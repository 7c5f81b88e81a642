package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// The one translation the gateway does: a harness speaking OpenAI Responses
// (codex) with an upstream that serves Chat Completions only (OpenRouter,
// Together, most OpenAI-compatible servers). The request's conversation
// becomes Chat messages (developer/system text, user and assistant text,
// function calls and their outputs), its function tools Chat tools; the
// Chat answer — streamed or not — becomes the Responses events codex reads
// (response.created, output items for the text and each function call,
// response.completed with usage). Reasoning items, built-in tools (web
// search) and tool namespaces have no Chat form and are left out. The
// record keeps what went over the wire to the upstream; metering reads the
// Chat answer.

// responsesRequest is the part of a Responses request the translation reads.
type responsesRequest struct {
	Instructions      string            `json:"instructions"`
	Input             json.RawMessage   `json:"input"`
	Tools             []json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	Stream            bool              `json:"stream"`
	MaxOutputTokens   *int64            `json:"max_output_tokens"`
	Temperature       *float64          `json:"temperature"`
	TopP              *float64          `json:"top_p"`
}

type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// responsesToChat turns a Responses request into a Chat Completions one for
// model, and says whether it streams.
func responsesToChat(body []byte, model string) ([]byte, bool, error) {
	var r responsesRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, false, fmt.Errorf("responses request: %w", err)
	}
	var msgs []chatMessage
	var system []string
	if r.Instructions != "" {
		system = append(system, r.Instructions)
	}
	leading := true // developer/system text before the first other message joins one system message
	addSystem := func(text string) {
		if leading {
			system = append(system, text)
			return
		}
		msgs = append(msgs, chatMessage{Role: "system", Content: text})
	}

	var items []map[string]json.RawMessage
	if len(r.Input) > 0 && r.Input[0] == '"' {
		var s string
		if err := json.Unmarshal(r.Input, &s); err != nil {
			return nil, false, fmt.Errorf("responses request input: %w", err)
		}
		items = []map[string]json.RawMessage{{"type": json.RawMessage(`"message"`), "role": json.RawMessage(`"user"`), "content": r.Input}}
	} else if len(r.Input) > 0 {
		if err := json.Unmarshal(r.Input, &items); err != nil {
			return nil, false, fmt.Errorf("responses request input: %w", err)
		}
	}
	for _, it := range items {
		typ := rawString(it["type"])
		if typ == "" && it["role"] != nil {
			typ = "message"
		}
		switch typ {
		case "message":
			role, text := rawString(it["role"]), contentText(it["content"])
			switch role {
			case "system", "developer":
				addSystem(text)
				continue
			case "assistant":
				leading = false
				msgs = append(msgs, chatMessage{Role: "assistant", Content: text})
			default:
				leading = false
				msgs = append(msgs, chatMessage{Role: "user", Content: text})
			}
		case "function_call":
			leading = false
			var tc chatToolCall
			tc.ID, tc.Type = rawString(it["call_id"]), "function"
			tc.Function.Name, tc.Function.Arguments = rawString(it["name"]), rawString(it["arguments"])
			if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
				msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, tc)
				if msgs[n-1].Content == "" {
					msgs[n-1].Content = nil
				}
			} else {
				msgs = append(msgs, chatMessage{Role: "assistant", Content: nil, ToolCalls: []chatToolCall{tc}})
			}
		case "function_call_output":
			leading = false
			out := it["output"]
			text := rawString(out)
			if len(out) > 0 && out[0] == '[' {
				text = contentText(out)
			}
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: rawString(it["call_id"]), Content: text})
		}
	}
	if len(system) > 0 {
		msgs = append([]chatMessage{{Role: "system", Content: strings.Join(system, "\n\n")}}, msgs...)
	}

	out := map[string]any{"model": model, "messages": msgs, "stream": r.Stream}
	if r.Stream {
		out["stream_options"] = map[string]any{"include_usage": true}
	}
	var tools []any
	for _, t := range r.Tools {
		var ft struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(t, &ft) != nil || ft.Type != "function" || ft.Name == "" {
			continue
		}
		fn := map[string]any{"name": ft.Name, "description": ft.Description}
		if len(ft.Parameters) > 0 {
			fn["parameters"] = ft.Parameters
		}
		tools = append(tools, map[string]any{"type": "function", "function": fn})
	}
	if len(tools) > 0 {
		out["tools"] = tools
		if len(r.ToolChoice) > 0 {
			var choice any = json.RawMessage(r.ToolChoice)
			var named struct {
				Type string `json:"type"`
				Name string `json:"name"`
			}
			if json.Unmarshal(r.ToolChoice, &named) == nil && named.Type == "function" && named.Name != "" {
				choice = map[string]any{"type": "function", "function": map[string]any{"name": named.Name}}
			}
			out["tool_choice"] = choice
		}
		if r.ParallelToolCalls != nil {
			out["parallel_tool_calls"] = *r.ParallelToolCalls
		}
	}
	if r.MaxOutputTokens != nil {
		out["max_tokens"] = *r.MaxOutputTokens
	}
	if r.Temperature != nil {
		out["temperature"] = *r.Temperature
	}
	if r.TopP != nil {
		out["top_p"] = *r.TopP
	}
	b, err := json.Marshal(out)
	return b, r.Stream, err
}

func rawString(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// contentText joins the text parts of a Responses content (a string, or a
// list of input_text / output_text parts).
func contentText(v json.RawMessage) string {
	if len(v) > 0 && v[0] == '"' {
		return rawString(v)
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(v, &parts)
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// chatAnswer accumulates a Chat Completions answer.
type chatAnswer struct {
	id     string
	model  string
	text   strings.Builder
	tools  map[int]*chatToolCall
	usage  map[string]any
	finish string
}

type chunkChoice struct {
	Delta struct {
		Content   *string `json:"content"`
		ToolCalls []struct {
			Index    int    `json:"index"`
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"delta"`
	Message *struct {
		Content   *string        `json:"content"`
		ToolCalls []chatToolCall `json:"tool_calls"`
	} `json:"message"`
	FinishReason *string `json:"finish_reason"`
}

type chatChunk struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Choices []chunkChoice  `json:"choices"`
	Usage   map[string]any `json:"usage"`
}

// responsesWriter writes the Responses events for a Chat answer.
type responsesWriter struct {
	w       io.Writer
	flush   func()
	seq     int
	id      string
	model   string
	created int64
	textOn  bool
	outputs []any
}

func (rw *responsesWriter) event(typ string, fields map[string]any) error {
	fields["type"] = typ
	fields["sequence_number"] = rw.seq
	rw.seq++
	b, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(rw.w, "event: %s\ndata: %s\n\n", typ, b); err != nil {
		return err
	}
	rw.flush()
	return nil
}

func (rw *responsesWriter) response(status string, output []any, usage any) map[string]any {
	if output == nil {
		output = []any{}
	}
	return map[string]any{"id": rw.id, "object": "response", "created_at": rw.created, "status": status,
		"model": rw.model, "output": output, "usage": usage}
}

func (rw *responsesWriter) start() error {
	if err := rw.event("response.created", map[string]any{"response": rw.response("in_progress", nil, nil)}); err != nil {
		return err
	}
	return rw.event("response.in_progress", map[string]any{"response": rw.response("in_progress", nil, nil)})
}

func (rw *responsesWriter) textDelta(s string) error {
	if !rw.textOn {
		rw.textOn = true
		item := map[string]any{"type": "message", "id": rw.id + "_msg", "role": "assistant", "status": "in_progress", "content": []any{}}
		if err := rw.event("response.output_item.added", map[string]any{"output_index": 0, "item": item}); err != nil {
			return err
		}
		if err := rw.event("response.content_part.added", map[string]any{"output_index": 0, "item_id": rw.id + "_msg", "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}); err != nil {
			return err
		}
	}
	return rw.event("response.output_text.delta", map[string]any{"output_index": 0, "item_id": rw.id + "_msg", "content_index": 0, "delta": s})
}

// finish closes the text item, writes each function call and completes.
func (rw *responsesWriter) finish(a *chatAnswer) error {
	if rw.textOn || a.text.Len() > 0 {
		if !rw.textOn {
			if err := rw.textDelta(a.text.String()); err != nil {
				return err
			}
		}
		text := a.text.String()
		part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
		item := map[string]any{"type": "message", "id": rw.id + "_msg", "role": "assistant", "status": "completed", "content": []any{part}}
		for _, e := range []struct {
			typ    string
			fields map[string]any
		}{
			{"response.output_text.done", map[string]any{"output_index": 0, "item_id": rw.id + "_msg", "content_index": 0, "text": text}},
			{"response.content_part.done", map[string]any{"output_index": 0, "item_id": rw.id + "_msg", "content_index": 0, "part": part}},
			{"response.output_item.done", map[string]any{"output_index": 0, "item": item}},
		} {
			if err := rw.event(e.typ, e.fields); err != nil {
				return err
			}
		}
		rw.outputs = append(rw.outputs, item)
	}
	var idx []int
	for i := range a.tools {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		tc := a.tools[i]
		n := len(rw.outputs)
		callID := tc.ID
		if callID == "" {
			callID = fmt.Sprintf("call_%s_%d", rw.id, i)
		}
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", rw.id, i), "call_id": callID,
			"name": tc.Function.Name, "arguments": tc.Function.Arguments, "status": "completed"}
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["arguments"], added["status"] = "", "in_progress"
		if err := rw.event("response.output_item.added", map[string]any{"output_index": n, "item": added}); err != nil {
			return err
		}
		if err := rw.event("response.function_call_arguments.delta", map[string]any{"output_index": n, "item_id": item["id"], "delta": tc.Function.Arguments}); err != nil {
			return err
		}
		if err := rw.event("response.function_call_arguments.done", map[string]any{"output_index": n, "item_id": item["id"], "arguments": tc.Function.Arguments}); err != nil {
			return err
		}
		if err := rw.event("response.output_item.done", map[string]any{"output_index": n, "item": item}); err != nil {
			return err
		}
		rw.outputs = append(rw.outputs, item)
	}
	status := "completed"
	if a.finish == "length" {
		status = "incomplete"
	}
	typ := "response." + status
	return rw.event(typ, map[string]any{"response": rw.response(status, rw.outputs, responsesUsage(a.usage))})
}

// responsesUsage maps Chat usage onto Responses usage.
func responsesUsage(u map[string]any) any {
	if u == nil {
		return nil
	}
	in, out := num(u, "prompt_tokens"), num(u, "completion_tokens")
	return map[string]any{
		"input_tokens":          in,
		"input_tokens_details":  map[string]any{"cached_tokens": max(num(u, "prompt_tokens_details", "cached_tokens"), num(u, "prompt_cache_hit_tokens"))},
		"output_tokens":         out,
		"output_tokens_details": map[string]any{"reasoning_tokens": num(u, "completion_tokens_details", "reasoning_tokens")},
		"total_tokens":          in + out,
	}
}

func (a *chatAnswer) add(c chatChunk) {
	if c.ID != "" {
		a.id = c.ID
	}
	if c.Model != "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Message != nil { // a whole (non-streamed) answer
			if ch.Message.Content != nil {
				a.text.WriteString(*ch.Message.Content)
			}
			for i, tc := range ch.Message.ToolCalls {
				tc := tc
				a.tools[i] = &tc
			}
		}
		if ch.Delta.Content != nil {
			a.text.WriteString(*ch.Delta.Content)
		}
		for _, tc := range ch.Delta.ToolCalls {
			cur := a.tools[tc.Index]
			if cur == nil {
				cur = &chatToolCall{Type: "function"}
				a.tools[tc.Index] = cur
			}
			if tc.ID != "" {
				cur.ID = tc.ID
			}
			cur.Function.Name += tc.Function.Name
			cur.Function.Arguments += tc.Function.Arguments
		}
		if ch.FinishReason != nil {
			a.finish = *ch.FinishReason
		}
	}
}

// translateChatStream reads a Chat Completions SSE answer from r and writes
// the Responses events for it to w as the text arrives (function calls are
// written when complete: Chat streams their arguments in pieces).
func translateChatStream(r io.Reader, w io.Writer, flush func(), model string) error {
	rw := &responsesWriter{w: w, flush: flush, id: fmt.Sprintf("resp_gw%d", time.Now().UnixNano()), model: model, created: time.Now().Unix()}
	if err := rw.start(); err != nil {
		return err
	}
	a := &chatAnswer{tools: map[int]*chatToolCall{}}
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		} else if len(line) == 0 && len(data) > 0 {
			if bytes.Equal(data, []byte("[DONE]")) {
				return rw.finish(a)
			}
			var c chatChunk
			if json.Unmarshal(data, &c) == nil {
				before := a.text.Len()
				a.add(c)
				if a.text.Len() > before {
					if err := rw.textDelta(a.text.String()[before:]); err != nil {
						return err
					}
				}
			}
			data = data[:0]
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if a.finish != "" || a.usage != nil {
					return rw.finish(a) // an upstream that ends without [DONE]
				}
				err = io.ErrUnexpectedEOF
			}
			_ = rw.event("response.failed", map[string]any{"response": rw.response("failed", nil, nil)})
			return fmt.Errorf("chat stream: %w", err)
		}
	}
}

// chatToResponsesJSON turns a whole Chat Completions answer into a
// Responses object.
func chatToResponsesJSON(body []byte, model string) ([]byte, error) {
	var c chatChunk
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("chat answer: %w", err)
	}
	a := &chatAnswer{tools: map[int]*chatToolCall{}}
	a.add(c)
	var buf bytes.Buffer
	rw := &responsesWriter{w: io.Discard, flush: func() {}, id: fmt.Sprintf("resp_gw%d", time.Now().UnixNano()), model: model, created: time.Now().Unix()}
	if err := rw.finish(a); err != nil {
		return nil, err
	}
	status := "completed"
	if a.finish == "length" {
		status = "incomplete"
	}
	if err := json.NewEncoder(&buf).Encode(rw.response(status, rw.outputs, responsesUsage(a.usage))); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

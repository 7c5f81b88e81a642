package modelmock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// answer is one model reply, independent of the wire API.
type answer struct {
	id     string // unique per request
	model  string
	text   string // the reply when tool is ""
	tool   string
	args   string // the tool call's arguments, JSON
	callID string
	usage  Usage
}

// sse writes Server-Sent Events, flushing after each one so the client sees
// every event as it is written.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return sse{w: w, f: f}
}

// event writes one event; name "" writes a data-only event (Chat
// Completions, Gemini).
func (s sse) event(name string, data any) {
	b := marshal(data)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.flush()
}

// marshal encodes v without HTML escaping (providers send "<" and ">" as
// they are).
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("modelmock: marshal: %v", err)) // only maps of plain values and decoded JSON reach here
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (s sse) raw(line string) {
	fmt.Fprintf(s.w, "%s\n\n", line)
	s.flush()
}

func (s sse) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(marshal(v))
}

// ---- OpenAI Responses -------------------------------------------------

func (a answer) responsesItem() obj {
	if a.tool != "" {
		return obj{"type": "function_call", "id": "fc_" + a.id, "call_id": a.callID, "name": a.tool, "arguments": a.args, "status": "completed"}
	}
	return obj{"type": "message", "id": "msg_" + a.id, "role": "assistant", "status": "completed",
		"content": []any{obj{"type": "output_text", "text": a.text, "annotations": []any{}}}}
}

func (a answer) responsesUsage() obj {
	return obj{
		"input_tokens":          a.usage.Input,
		"input_tokens_details":  obj{"cached_tokens": a.usage.Cached},
		"output_tokens":         a.usage.Output,
		"output_tokens_details": obj{"reasoning_tokens": a.usage.Reasoning},
		"total_tokens":          a.usage.Input + a.usage.Output,
	}
}

func (a answer) responsesObject(status string, output []any, usage any) obj {
	return obj{"id": "resp_" + a.id, "object": "response", "created_at": time.Now().Unix(),
		"status": status, "model": a.model, "output": output, "usage": usage}
}

func (a answer) writeResponses(w http.ResponseWriter, stream bool) {
	item := a.responsesItem()
	if !stream {
		writeJSON(w, http.StatusOK, a.responsesObject("completed", []any{item}, a.responsesUsage()))
		return
	}
	s := newSSE(w)
	seq := 0
	ev := func(typ string, fields obj) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		s.event(typ, fields)
	}
	ev("response.created", obj{"response": a.responsesObject("in_progress", []any{}, nil)})
	ev("response.in_progress", obj{"response": a.responsesObject("in_progress", []any{}, nil)})
	added := obj{}
	for k, v := range item {
		added[k] = v
	}
	added["status"] = "in_progress"
	if a.tool != "" {
		added["arguments"] = ""
		ev("response.output_item.added", obj{"output_index": 0, "item": added})
		ev("response.function_call_arguments.delta", obj{"output_index": 0, "item_id": item["id"], "delta": a.args})
		ev("response.function_call_arguments.done", obj{"output_index": 0, "item_id": item["id"], "arguments": a.args})
	} else {
		added["content"] = []any{}
		ev("response.output_item.added", obj{"output_index": 0, "item": added})
		part := obj{"type": "output_text", "text": "", "annotations": []any{}}
		ev("response.content_part.added", obj{"output_index": 0, "item_id": item["id"], "content_index": 0, "part": part})
		ev("response.output_text.delta", obj{"output_index": 0, "item_id": item["id"], "content_index": 0, "delta": a.text})
		ev("response.output_text.done", obj{"output_index": 0, "item_id": item["id"], "content_index": 0, "text": a.text})
		ev("response.content_part.done", obj{"output_index": 0, "item_id": item["id"], "content_index": 0,
			"part": obj{"type": "output_text", "text": a.text, "annotations": []any{}}})
	}
	ev("response.output_item.done", obj{"output_index": 0, "item": item})
	ev("response.completed", obj{"response": a.responsesObject("completed", []any{item}, a.responsesUsage())})
}

// ---- OpenAI Chat Completions -----------------------------------------

func (a answer) chatUsage() obj {
	return obj{
		"prompt_tokens":             a.usage.Input,
		"completion_tokens":         a.usage.Output,
		"total_tokens":              a.usage.Input + a.usage.Output,
		"prompt_tokens_details":     obj{"cached_tokens": a.usage.Cached},
		"completion_tokens_details": obj{"reasoning_tokens": a.usage.Reasoning},
	}
}

func (a answer) chatFinish() string {
	if a.tool != "" {
		return "tool_calls"
	}
	return "stop"
}

func (a answer) writeChat(w http.ResponseWriter, stream, includeUsage bool) {
	created := time.Now().Unix()
	if !stream {
		msg := obj{"role": "assistant", "content": a.text}
		if a.tool != "" {
			msg["content"] = nil
			msg["tool_calls"] = []any{obj{"id": a.callID, "type": "function", "function": obj{"name": a.tool, "arguments": a.args}}}
		}
		writeJSON(w, http.StatusOK, obj{"id": "chatcmpl-" + a.id, "object": "chat.completion", "created": created, "model": a.model,
			"choices": []any{obj{"index": 0, "message": msg, "finish_reason": a.chatFinish()}}, "usage": a.chatUsage()})
		return
	}
	s := newSSE(w)
	chunk := func(choices []any, usage any) {
		c := obj{"id": "chatcmpl-" + a.id, "object": "chat.completion.chunk", "created": created, "model": a.model, "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		s.event("", c)
	}
	choice := func(delta obj, finish any) []any {
		return []any{obj{"index": 0, "delta": delta, "finish_reason": finish}}
	}
	if a.tool != "" {
		chunk(choice(obj{"role": "assistant", "content": nil, "tool_calls": []any{obj{"index": 0, "id": a.callID, "type": "function",
			"function": obj{"name": a.tool, "arguments": ""}}}}, nil), nil)
		chunk(choice(obj{"tool_calls": []any{obj{"index": 0, "function": obj{"arguments": a.args}}}}, nil), nil)
	} else {
		chunk(choice(obj{"role": "assistant", "content": ""}, nil), nil)
		chunk(choice(obj{"content": a.text}, nil), nil)
	}
	chunk(choice(obj{}, a.chatFinish()), nil)
	if includeUsage {
		chunk([]any{}, a.chatUsage())
	}
	s.raw("data: [DONE]")
}

// ---- Anthropic Messages ----------------------------------------------

func (a answer) messagesUsage(output int) obj {
	return obj{
		"input_tokens":                a.usage.Input - a.usage.Cached,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     a.usage.Cached,
		"output_tokens":               output,
	}
}

func (a answer) messagesBlock() obj {
	if a.tool != "" {
		var input any
		_ = json.Unmarshal([]byte(a.args), &input)
		return obj{"type": "tool_use", "id": a.callID, "name": a.tool, "input": input}
	}
	return obj{"type": "text", "text": a.text}
}

func (a answer) messagesStop() string {
	if a.tool != "" {
		return "tool_use"
	}
	return "end_turn"
}

func (a answer) writeMessages(w http.ResponseWriter, stream bool) {
	msg := func(content []any, stop any, usage obj) obj {
		return obj{"id": "msg_" + a.id, "type": "message", "role": "assistant", "model": a.model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	}
	if !stream {
		writeJSON(w, http.StatusOK, msg([]any{a.messagesBlock()}, a.messagesStop(), a.messagesUsage(a.usage.Output)))
		return
	}
	s := newSSE(w)
	s.event("message_start", obj{"type": "message_start", "message": msg([]any{}, nil, a.messagesUsage(1))})
	if a.tool != "" {
		s.event("content_block_start", obj{"type": "content_block_start", "index": 0,
			"content_block": obj{"type": "tool_use", "id": a.callID, "name": a.tool, "input": obj{}}})
		s.event("content_block_delta", obj{"type": "content_block_delta", "index": 0,
			"delta": obj{"type": "input_json_delta", "partial_json": a.args}})
	} else {
		s.event("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "text", "text": ""}})
		s.event("content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": "text_delta", "text": a.text}})
	}
	s.event("content_block_stop", obj{"type": "content_block_stop", "index": 0})
	s.event("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": a.messagesStop(), "stop_sequence": nil},
		"usage": obj{"output_tokens": a.usage.Output}})
	s.event("message_stop", obj{"type": "message_stop"})
}

// ---- Gemini ----------------------------------------------------------

func (a answer) geminiUsage() obj {
	return obj{
		"promptTokenCount":        a.usage.Input,
		"cachedContentTokenCount": a.usage.Cached,
		"candidatesTokenCount":    a.usage.Output - a.usage.Reasoning,
		"thoughtsTokenCount":      a.usage.Reasoning,
		"totalTokenCount":         a.usage.Input + a.usage.Output,
	}
}

func (a answer) geminiChunk(final bool) obj {
	var part obj
	if a.tool != "" {
		var args any
		_ = json.Unmarshal([]byte(a.args), &args)
		part = obj{"functionCall": obj{"name": a.tool, "args": args}}
	} else {
		part = obj{"text": a.text}
	}
	cand := obj{"content": obj{"role": "model", "parts": []any{part}}, "index": 0}
	c := obj{"candidates": []any{cand}, "modelVersion": a.model, "responseId": a.id}
	if final {
		cand["finishReason"] = "STOP"
		c["usageMetadata"] = a.geminiUsage()
	}
	return c
}

func (a answer) writeGemini(w http.ResponseWriter, stream bool) {
	if !stream {
		writeJSON(w, http.StatusOK, a.geminiChunk(true))
		return
	}
	s := newSSE(w)
	s.event("", a.geminiChunk(true))
}

// ---- errors ----------------------------------------------------------

// errorBody is the provider's own error shape for status.
func errorBody(api API, status int, message string) any {
	switch api {
	case Messages:
		typ := map[int]string{401: "authentication_error", 403: "permission_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
		if typ == "" {
			typ = "api_error"
		}
		return obj{"type": "error", "error": obj{"type": typ, "message": message}}
	case Gemini:
		st := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status]
		if st == "" {
			st = "INTERNAL"
		}
		return obj{"error": obj{"code": status, "message": message, "status": st}}
	}
	code := map[int]string{401: "invalid_api_key", 429: "rate_limit_exceeded"}[status]
	return obj{"error": obj{"message": message, "type": "mock_error", "code": code}}
}

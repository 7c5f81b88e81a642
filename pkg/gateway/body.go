package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

// requestModel is the model the harness asked for.
func requestModel(o op, path string, body []byte) string {
	if o.api == wireapi.Gemini {
		if i := strings.LastIndex(path, "/models/"); i >= 0 {
			m, _, _ := strings.Cut(path[i+len("/models/"):], ":")
			return m
		}
		return ""
	}
	if _, _, m, ok := topLevelString(body, "model"); ok {
		return m
	}
	var b struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Model
}

// setModel puts model into a JSON body's "model" field when it differs,
// leaving every other byte as it was (providers' prompt caches key on the
// prompt, and the record shows what the harness sent).
func setModel(body []byte, model string) []byte {
	want, _ := json.Marshal(model)
	if s, e, cur, ok := topLevelString(body, "model"); ok {
		if cur == model {
			return body
		}
		out := make([]byte, 0, len(body)+len(want))
		out = append(append(append(out, body[:s]...), want...), body[e:]...)
		return out
	}
	// No plain "model" string: decode to set it.
	var b map[string]json.RawMessage
	if json.Unmarshal(body, &b) != nil {
		return body
	}
	b["model"] = want
	out, err := json.Marshal(b)
	if err != nil {
		return body
	}
	return out
}

// includeUsage asks a streamed Chat Completions call for its usage chunk
// (stream_options.include_usage) when the harness did not, so every call is
// metered: without it the stream carries no usage at all. OpenAI's clients
// accept the extra chunk (empty choices) the option adds.
func includeUsage(body []byte) []byte {
	s, e, ok := topLevelValue(body, "stream")
	if !ok || string(body[s:e]) != "true" {
		return body
	}
	if s, e, ok := topLevelValue(body, "stream_options"); ok {
		var opts map[string]json.RawMessage
		if json.Unmarshal(body[s:e], &opts) != nil || string(opts["include_usage"]) == "true" {
			return body
		}
		opts["include_usage"] = json.RawMessage("true")
		v, err := json.Marshal(opts)
		if err != nil {
			return body
		}
		return append(append(append(make([]byte, 0, len(body)+24), body[:s]...), v...), body[e:]...)
	}
	i := bytes.IndexByte(body, '{') + 1 // topLevelValue found an object
	return append(append(append(make([]byte, 0, len(body)+40), body[:i]...), `"stream_options":{"include_usage":true},`...), body[i:]...)
}

// guessAPI picks the error shape for a request that is not a model call.
func guessAPI(r *http.Request) wireapi.API {
	switch {
	case r.Header.Get("X-Api-Key") != "" || r.Header.Get("Anthropic-Version") != "":
		return wireapi.Messages
	case r.Header.Get("X-Goog-Api-Key") != "" || strings.Contains(r.URL.Path, "/models/"):
		return wireapi.Gemini
	}
	return wireapi.Chat
}

// writeError answers in the API's own error shape, so the harness reports
// the gateway's message as it would the provider's.
func writeError(w http.ResponseWriter, api wireapi.API, status int, msg string) {
	var body any
	switch api {
	case wireapi.Messages:
		typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}[status]
		if typ == "" {
			typ = "api_error"
		}
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	case wireapi.Gemini:
		st := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}[status]
		if st == "" {
			st = "INTERNAL"
		}
		body = map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}}
	default:
		body = map[string]any{"error": map[string]any{"message": msg, "type": "gauntlet_gateway", "code": http.StatusText(status)}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

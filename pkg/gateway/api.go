package gateway

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

// setKey puts the upstream's key where api expects it.
func setKey(api wireapi.API, h http.Header, key string) {
	switch api {
	case wireapi.Messages:
		h.Set("x-api-key", key)
	case wireapi.Gemini:
		h.Set("x-goog-api-key", key)
	default:
		h.Set("Authorization", "Bearer "+key)
	}
}

// authHeaders are the headers any harness may carry its key (the gateway
// token) in; none is forwarded.
var authHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Proxy-Authorization"}

// op is one operation a harness request asks for.
type op struct {
	api wireapi.API
	// rest is the upstream path after the base URL, with the model
	// substituted where the path carries it (Gemini).
	rest string
	// metered operations generate tokens; the others (token counting, model
	// lists) pass through and are recorded without usage.
	metered bool
	// bodyModel says the JSON body carries the model in "model".
	bodyModel bool
}

// parseOp maps a harness request's path (any prefix: /v1, /v1beta, none)
// onto the operation and the upstream path; model replaces the model a
// Gemini path names.
func parseOp(method, path, model string) (op, error) {
	switch {
	case method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		return op{api: wireapi.Responses, rest: "/responses", metered: true, bodyModel: true}, nil
	case method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		return op{api: wireapi.Chat, rest: "/chat/completions", metered: true, bodyModel: true}, nil
	case method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		return op{api: wireapi.Messages, rest: "/messages/count_tokens", bodyModel: true}, nil
	case method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		return op{api: wireapi.Messages, rest: "/messages", metered: true, bodyModel: true}, nil
	}
	if i := strings.LastIndex(path, "/models/"); i >= 0 && method == http.MethodPost {
		_, action, ok := strings.Cut(path[i+len("/models/"):], ":")
		switch {
		case ok && (action == "streamGenerateContent" || action == "generateContent"):
			return op{api: wireapi.Gemini, rest: "/models/" + model + ":" + action, metered: true}, nil
		case ok && action == "countTokens":
			return op{api: wireapi.Gemini, rest: "/models/" + model + ":" + action}, nil
		}
	}
	return op{}, fmt.Errorf("%s %s is not a model call the gateway forwards (it forwards POST …/responses, …/chat/completions, …/messages, …/messages/count_tokens and …/models/M:streamGenerateContent|generateContent|countTokens)", method, path)
}

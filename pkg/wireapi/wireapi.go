// Package wireapi names the model APIs as they go over the wire — the
// vocabulary the harness table (what each harness speaks), the model
// gateway (what it meters and translates) and the scripted model (what it
// answers) share. It imports nothing, so none of them imports another for
// the names.
package wireapi

// API is a model API as it goes over the wire. Each harness speaks one;
// each upstream serves one or more.
type API string

// The wire APIs.
const (
	// Responses is OpenAI's Responses API, POST {base}/responses (codex).
	Responses API = "openai-responses"
	// Chat is OpenAI's Chat Completions, POST {base}/chat/completions
	// (opencode, any OpenAI-compatible server).
	Chat API = "openai-chat"
	// Messages is Anthropic's Messages API, POST {base}/messages (claude-code).
	Messages API = "anthropic-messages"
	// Gemini is Google's generateContent, POST
	// {base}/models/{model}:streamGenerateContent (gemini-cli).
	Gemini API = "gemini"
)

// All lists the wire APIs in documentation order.
var All = []API{Responses, Chat, Messages, Gemini}

// Title is the API's name for messages.
func (a API) Title() string {
	switch a {
	case Responses:
		return "OpenAI Responses"
	case Chat:
		return "OpenAI Chat Completions"
	case Messages:
		return "Anthropic Messages"
	case Gemini:
		return "Gemini generateContent"
	}
	return string(a)
}

// Valid reports whether a is one of All.
func (a API) Valid() bool {
	for _, w := range All {
		if a == w {
			return true
		}
	}
	return false
}

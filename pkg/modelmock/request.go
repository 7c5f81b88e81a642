package modelmock

import (
	"encoding/json"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

// API names a wire API the mock speaks (wireapi.API).
type API = wireapi.API

// The wire APIs the mock answers.
const (
	Responses = wireapi.Responses // POST …/responses
	Chat      = wireapi.Chat      // POST …/chat/completions
	Messages  = wireapi.Messages  // POST …/messages
	Gemini    = wireapi.Gemini    // POST …/models/{m}:streamGenerateContent or :generateContent
)

// routeAPI maps a request path onto its wire API by its end, so the mock
// answers under any prefix (/v1, /v1beta, a gateway's own).
func routeAPI(path string) (API, bool) {
	switch {
	case strings.HasSuffix(path, "/responses"):
		return Responses, true
	case strings.HasSuffix(path, "/chat/completions"):
		return Chat, true
	case strings.HasSuffix(path, "/messages"):
		return Messages, true
	case strings.HasSuffix(path, ":streamGenerateContent"), strings.HasSuffix(path, ":generateContent"):
		return Gemini, true
	}
	return "", false
}

// tool is one tool a request offers: its name and its parameters' names.
type tool struct {
	name   string
	params map[string]bool
}

// parsed is what the mock needs from a request body.
type parsed struct {
	model  string
	stream bool
	tools  []tool
	// turns is the number of assistant turns already in the conversation.
	turns int
}

type obj = map[string]any

func parseRequest(api API, path string, body []byte) (parsed, error) {
	var b obj
	if err := json.Unmarshal(body, &b); err != nil {
		return parsed{}, err
	}
	p := parsed{}
	p.model, _ = b["model"].(string)
	p.stream, _ = b["stream"].(bool)
	switch api {
	case Responses:
		for _, t := range list(b["tools"]) {
			p.tools = appendTool(p.tools, str(t, "name"), t)
		}
		p.turns = runs(list(b["input"]), func(it any) bool {
			m, _ := it.(obj)
			switch str(m, "type") {
			case "function_call", "custom_tool_call", "local_shell_call":
				return true
			case "message":
				return str(m, "role") == "assistant"
			}
			return false
		})
	case Chat:
		for _, t := range list(b["tools"]) {
			f, _ := asObj(t)["function"].(obj)
			p.tools = appendTool(p.tools, str(f, "name"), f)
		}
		p.turns = runs(list(b["messages"]), func(it any) bool { return str(it, "role") == "assistant" })
	case Messages:
		for _, t := range list(b["tools"]) {
			p.tools = appendTool(p.tools, str(t, "name"), withParams(t, "input_schema"))
		}
		p.turns = runs(list(b["messages"]), func(it any) bool { return str(it, "role") == "assistant" })
	case Gemini:
		p.stream = strings.HasSuffix(path, ":streamGenerateContent")
		if i := strings.LastIndex(path, "/models/"); i >= 0 {
			p.model, _, _ = strings.Cut(path[i+len("/models/"):], ":")
		}
		for _, t := range list(b["tools"]) {
			for _, d := range list(asObj(t)["functionDeclarations"]) {
				p.tools = appendTool(p.tools, str(d, "name"), withParams(d, "parametersJsonSchema"))
			}
		}
		p.turns = runs(list(b["contents"]), func(it any) bool { return str(it, "role") == "model" })
	}
	return p, nil
}

// runs counts the maximal runs of consecutive items for which is holds: one
// assistant turn may span several items (a message and its tool calls).
func runs(items []any, is func(any) bool) int {
	n, in := 0, false
	for _, it := range items {
		if is(it) {
			if !in {
				n++
			}
			in = true
		} else {
			in = false
		}
	}
	return n
}

// withParams returns a tool object whose "parameters" is the schema under key
// when it has none of its own (Anthropic's input_schema, Gemini's
// parametersJsonSchema).
func withParams(t any, key string) any {
	m, _ := t.(obj)
	if m == nil || m["parameters"] != nil {
		return t
	}
	c := obj{}
	for k, v := range m {
		c[k] = v
	}
	c["parameters"] = m[key]
	return c
}

func appendTool(tools []tool, name string, def any) []tool {
	if name == "" {
		return tools
	}
	t := tool{name: name, params: map[string]bool{}}
	if m, ok := def.(obj); ok {
		if ps, ok := m["parameters"].(obj); ok {
			if props, ok := ps["properties"].(obj); ok {
				for k := range props {
					t.params[k] = true
				}
			}
		}
	}
	return append(tools, t)
}

func asObj(v any) obj {
	m, _ := v.(obj)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any, key string) string {
	m, _ := v.(obj)
	s, _ := m[key].(string)
	return s
}

// shellTools are the shell tools of the agent programs, in preference order
// (cline's run_commands takes a list of commands).
var shellTools = []string{"exec_command", "Bash", "run_shell_command", "bash", "shell", "run_commands"}

// finishTools are tools through which a program wants its final answer, by
// the argument that carries the answer's text: cline ends a run only when
// the model calls submit_and_exit (a plain text answer gets "[SYSTEM] This
// run is not complete until you call … submit_and_exit" and another turn).
var finishTools = []struct{ name, textArg string }{{"submit_and_exit", "summary"}}

// finishCall turns a text answer into a call of the request's finishing
// tool, when it offers one: how a real model ends such a program's run.
func finishCall(tools []tool, text string) (string, map[string]any, bool) {
	for _, f := range finishTools {
		for _, t := range tools {
			if t.name != f.name {
				continue
			}
			args := map[string]any{f.textArg: text}
			if t.params["verified"] {
				args["verified"] = true
			}
			return t.name, args, true
		}
	}
	return "", nil, false
}

// shellCall turns a ShellCall into a call of the request's shell tool: its
// name and the argument names its schema declares (codex's cmd, the others'
// command; description where the tool has one).
func shellCall(tools []tool, c ShellCall) (string, map[string]any, bool) {
	for _, want := range shellTools {
		for _, t := range tools {
			if t.name != want {
				continue
			}
			args := map[string]any{}
			switch {
			case t.params["commands"] && !t.params["command"]:
				args["commands"] = []any{c.Command}
			case t.params["cmd"] && !t.params["command"]:
				args["cmd"] = c.Command
			default:
				args["command"] = c.Command
			}
			if t.params["description"] {
				d := c.Description
				if d == "" {
					d = "run a shell command"
				}
				args["description"] = d
			}
			return t.name, args, true
		}
	}
	return "", nil, false
}

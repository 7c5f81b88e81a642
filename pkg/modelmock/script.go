// Package modelmock is a scripted model server speaking the four wire APIs the
// agent programs use — OpenAI Responses, OpenAI Chat Completions, Anthropic
// Messages and Gemini generateContent — with the shapes the real programs
// were seen to accept (shared/fixtures/agent-wire). It replays a conversation
// script, sends token usage with every answer, can fail on purpose (401, 429,
// 500, an endpoint that never answers) and records every request it got.
//
// It stands in for a model provider, the one part of an attempt that cannot
// run on a machine without internet access; tests start it with NewServer
// (httptest on 127.0.0.1) and `gauntlet mock-model` serves it as a process.
package modelmock

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Script is a conversation the mock replays. It is data: a JSON file like
//
//	{
//	  "usage": {"input": 1234, "cached": 1000, "output": 56, "reasoning": 7},
//	  "turns": [
//	    {"shell": {"command": "echo hello > /app/out.txt", "description": "write hello"}},
//	    {"text": "Done: wrote hello to out.txt."}
//	  ],
//	  "no_tools_text": "Mock title"
//	}
//
// The answer to a request is chosen from the request itself, not from a
// counter, so concurrent conversations and retried requests get the right
// turn: turn i answers a request that already holds i assistant turns.
// Requests past the last turn get the last turn again.
type Script struct {
	// Usage is sent with every answer whose turn gives none.
	Usage Usage `json:"usage"`
	// Turns are the model's answers in conversation order.
	Turns []Turn `json:"turns"`
	// NoToolsText, when set, answers requests that offer no tools (opencode
	// asks for a session title that way) without advancing the conversation.
	NoToolsText string `json:"no_tools_text,omitempty"`
	// APIKey, when set, must arrive as the request's key (x-api-key,
	// Authorization: Bearer or x-goog-api-key); anything else gets a 401.
	APIKey string `json:"api_key,omitempty"`
	// Failure, when set, answers requests with an error instead of a turn.
	Failure *Failure `json:"failure,omitempty"`
	// Model is the model name answers report; the request's when empty.
	Model string `json:"model,omitempty"`
}

// Turn is one answer: text, a call of the harness's shell tool, a call of
// a named tool, or none (hang). Exactly one of them is set. Text goes to a
// program that takes its final answer only through a tool (cline's
// submit_and_exit) as a call of that tool with the text.
type Turn struct {
	Text  string     `json:"text,omitempty"`
	Shell *ShellCall `json:"shell,omitempty"`
	Tool  *ToolCall  `json:"tool,omitempty"`
	// Hang holds the request and never answers it (until the client gives
	// up or the server closes): an agent stuck on its next model call,
	// which a test can then end (a timeout, a memory kill) after the calls
	// before it were answered. Its request is recorded with this turn and
	// status 0 while it is held.
	Hang bool `json:"hang,omitempty"`
	// Usage overrides the script's usage for this answer.
	Usage *Usage `json:"usage,omitempty"`
}

// ShellCall runs Command through whatever shell tool the request offers
// (codex exec_command {cmd}, claude Bash {command}, gemini run_shell_command
// {command}, opencode bash {command}); the tool and its argument name come
// from the request's tool list.
type ShellCall struct {
	Command     string `json:"command"`
	Description string `json:"description,omitempty"`
}

// ToolCall calls the tool Name with Arguments verbatim.
type ToolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// Usage is the token count of one answer. Input includes Cached and Output
// includes Reasoning (OpenAI's convention); each wire API gets them in its
// own shape (Anthropic's input_tokens leave cache reads out, Gemini's
// candidatesTokenCount leaves thoughts out).
type Usage struct {
	Input     int `json:"input"`
	Cached    int `json:"cached"`
	Output    int `json:"output"`
	Reasoning int `json:"reasoning"`
}

// Failure makes the mock answer with an HTTP error status or not at all.
type Failure struct {
	// Status is the HTTP status to answer with (401, 429, 500, …).
	Status int `json:"status,omitempty"`
	// Hang accepts the request and never answers (until the client gives up
	// or the server closes): an endpoint that is up but dead.
	Hang bool `json:"hang,omitempty"`
	// Times limits the failure to the first Times requests; 0 fails all.
	Times int `json:"times,omitempty"`
}

// DefaultScript is the two-turn conversation the agent programs were
// recorded with: one shell call writing /app/out.txt, then a final answer,
// with the fixtures' usage.
func DefaultScript() Script {
	return Script{
		Usage: Usage{Input: 1234, Cached: 1000, Output: 56, Reasoning: 7},
		Turns: []Turn{
			{Shell: &ShellCall{Command: "echo hello > /app/out.txt", Description: "write hello to out.txt"}},
			{Text: "Done: wrote hello to out.txt."},
		},
		NoToolsText: "Mock title",
	}
}

// LoadScript reads a JSON script file.
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("read model script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return Script{}, fmt.Errorf("model script %s: %w", path, err)
	}
	return s, nil
}

// ParseScript decodes a JSON script, rejecting unknown fields, and checks it.
func ParseScript(data []byte) (Script, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("decode: %w", err)
	}
	if err := s.Validate(); err != nil {
		return Script{}, err
	}
	return s, nil
}

// Validate checks that every turn says exactly one thing and that numbers
// make sense, naming the field at fault.
func (s Script) Validate() error {
	var errs []error
	if len(s.Turns) == 0 && s.Failure == nil {
		errs = append(errs, errors.New("turns: at least one turn is required (or a failure)"))
	}
	errs = append(errs, s.Usage.validate("usage"))
	for i, t := range s.Turns {
		n := 0
		if t.Text != "" {
			n++
		}
		if t.Shell != nil {
			n++
			if t.Shell.Command == "" {
				errs = append(errs, fmt.Errorf("turns[%d].shell.command: is required", i))
			}
		}
		if t.Tool != nil {
			n++
			if t.Tool.Name == "" {
				errs = append(errs, fmt.Errorf("turns[%d].tool.name: is required", i))
			}
		}
		if t.Hang {
			n++
		}
		if n != 1 {
			errs = append(errs, fmt.Errorf("turns[%d]: give exactly one of text, shell, tool, hang (got %d)", i, n))
		}
		if t.Usage != nil {
			errs = append(errs, t.Usage.validate(fmt.Sprintf("turns[%d].usage", i)))
		}
	}
	if f := s.Failure; f != nil {
		errs = append(errs, f.validate("failure"))
	}
	return errors.Join(errs...)
}

func (u Usage) validate(field string) error {
	switch {
	case u.Input < 0 || u.Cached < 0 || u.Output < 0 || u.Reasoning < 0:
		return fmt.Errorf("%s: token counts must not be negative", field)
	case u.Cached > u.Input:
		return fmt.Errorf("%s.cached: %d exceeds input %d (input includes cached tokens)", field, u.Cached, u.Input)
	case u.Reasoning > u.Output:
		return fmt.Errorf("%s.reasoning: %d exceeds output %d (output includes reasoning tokens)", field, u.Reasoning, u.Output)
	}
	return nil
}

func (f Failure) validate(field string) error {
	switch {
	case f.Hang && f.Status != 0:
		return fmt.Errorf("%s: give status or hang, not both", field)
	case !f.Hang && (f.Status < 400 || f.Status > 599):
		return fmt.Errorf("%s.status: %d is not an HTTP error status (400-599)", field, f.Status)
	case f.Times < 0:
		return fmt.Errorf("%s.times: must not be negative", field)
	}
	return nil
}

// scripts holds the built-in scripts, one JSON file per name.
//
//go:embed scripts/*.json
var scripts embed.FS

// BuiltinScripts lists the names of the built-in scripts.
func BuiltinScripts() []string {
	entries, _ := scripts.ReadDir("scripts")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	return names
}

// BuiltinScript returns the built-in script name ("fix-median" solves the
// demo benchmark's fix-median task).
func BuiltinScript(name string) (Script, error) {
	data, err := scripts.ReadFile("scripts/" + name + ".json")
	if err != nil {
		return Script{}, fmt.Errorf("model script %q: no such built-in script (available: %s)", name, strings.Join(BuiltinScripts(), ", "))
	}
	s, err := ParseScript(data)
	if err != nil {
		return Script{}, fmt.Errorf("built-in model script %q: %w", name, err)
	}
	return s, nil
}

package terminus

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/terminus/llm"
)

func TestParseResponse(t *testing.T) {
	tests := []struct {
		name         string
		in           string
		want         Response
		wantErrors   []string // substrings, in order
		wantWarnings []string
	}{
		{name: "plain", in: `{"analysis":"a","plan":"p","commands":[{"keystrokes":"ls\n","duration":0.5}],"task_complete":false}`,
			want: Response{Analysis: "a", Plan: "p", Commands: []Command{{"ls\n", 0.5}}}},
		{name: "default duration and string complete", in: `{"analysis":"a","plan":"p","commands":[{"keystrokes":"C-c"}],"task_complete":"true"}`,
			want: Response{Analysis: "a", Plan: "p", Commands: []Command{{"C-c", 1}}, TaskComplete: true}, wantWarnings: []string{"should be a boolean"}},
		{name: "text around", in: "Here:\n```json\n{\"analysis\":\"a\",\"plan\":\"p\",\"commands\":[]}\n```",
			want: Response{Analysis: "a", Plan: "p", Commands: []Command{}}, wantWarnings: []string{"text before", "text after"}},
		{name: "cut short", in: `{"analysis":"a","plan":"p","commands":[{"keystrokes":"ls\n"`,
			want: Response{Analysis: "a", Plan: "p", Commands: []Command{{"ls\n", 1}}}, wantWarnings: []string{"missing closing brackets"}},
		{name: "long duration", in: `{"analysis":"a","plan":"p","commands":[{"keystrokes":"make\n","duration":600}]}`,
			want: Response{Analysis: "a", Plan: "p", Commands: []Command{{"make\n", 60}}}, wantWarnings: []string{"exceeds the 60 s maximum"}},
		{name: "missing newline between commands", in: `{"analysis":"a","plan":"p","commands":[{"keystrokes":"ls"},{"keystrokes":"pwd\n"}]}`,
			want: Response{Analysis: "a", Plan: "p", Commands: []Command{{"ls", 1}, {"pwd\n", 1}}}, wantWarnings: []string{"command 1 does not end with a newline"}},
		{name: "key then command is fine", in: `{"analysis":"a","plan":"p","commands":[{"keystrokes":"C-c"},{"keystrokes":"pwd\n"}]}`,
			want: Response{Analysis: "a", Plan: "p", Commands: []Command{{"C-c", 1}, {"pwd\n", 1}}}},
		{name: "complete without commands", in: `{"analysis":"a","plan":"p","task_complete":true}`,
			want: Response{Analysis: "a", Plan: "p", TaskComplete: true}, wantWarnings: []string{"commands is missing"}},
		{name: "unknown field", in: `{"analysis":"a","plan":"p","commands":[],"mood":"good"}`,
			want: Response{Analysis: "a", Plan: "p", Commands: []Command{}}, wantWarnings: []string{`unknown field "mood"`}},
		{name: "no json", in: "I am done.", wantErrors: []string{"no JSON object"}},
		{name: "broken json", in: `{"analysis": "a", "plan": }`, wantErrors: []string{"could not be parsed"}},
		{name: "missing fields", in: `{"analysis":"a"}`, want: Response{Analysis: "a"}, wantErrors: []string{"missing required fields: plan, commands"}},
		{name: "commands not a list", in: `{"analysis":"a","plan":"p","commands":"ls"}`, want: Response{Analysis: "a", Plan: "p"}, wantErrors: []string{"commands must be a list"}},
		{name: "keystrokes not a string", in: `{"analysis":"a","plan":"p","commands":[{"keystrokes":3}]}`,
			want: Response{Analysis: "a", Plan: "p", Commands: []Command{}}, wantErrors: []string{"command 1: keystrokes must be a string"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, fb := ParseResponse(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseResponse(%q) response (-want +got):\n%s", tc.in, diff)
			}
			check := func(kind string, got, want []string) {
				if len(got) != len(want) {
					t.Errorf("ParseResponse(%q) %s = %q, want %d matching %q", tc.in, kind, got, len(want), want)
					return
				}
				for i := range want {
					if !strings.Contains(got[i], want[i]) {
						t.Errorf("ParseResponse(%q) %s[%d] = %q, want it to contain %q", tc.in, kind, i, got[i], want[i])
					}
				}
			}
			check("errors", fb.Errors, tc.wantErrors)
			check("warnings", fb.Warnings, tc.wantWarnings)
		})
	}
}

func TestLimitOutput(t *testing.T) {
	short := strings.Repeat("x", MaxOutputBytes)
	if got := LimitOutput(short); got != short {
		t.Errorf("LimitOutput changed %d bytes", len(short))
	}
	long := strings.Repeat("a", 6000) + strings.Repeat("é", 3000) + strings.Repeat("z", 6000)
	got := LimitOutput(long)
	if !strings.HasPrefix(got, strings.Repeat("a", 5000)+"\n[... ") || !strings.HasSuffix(got, "...]\n"+strings.Repeat("z", 5000)) {
		t.Errorf("LimitOutput kept the wrong parts: %.80q … %.80q", got, got[len(got)-80:])
	}
	if !strings.Contains(got, "[... 8000 bytes of output omitted") {
		t.Errorf("LimitOutput note: %q", got[5000:5100])
	}
	// A cut inside a two-byte character moves to its boundary.
	mixed := strings.Repeat("é", 6000)
	got = LimitOutput(mixed)
	head := got[:strings.Index(got, "\n[...")]
	if len(head) != 5000 || !strings.HasPrefix(strings.Repeat("é", 2500), head) {
		t.Errorf("head = %d bytes", len(head))
	}
	odd := "x" + mixed
	got = LimitOutput(odd)
	if head := got[:strings.Index(got, "\n[...")]; len(head) != 4999 {
		t.Errorf("head of odd input = %d bytes, want 4999 (cut before a split character)", len(head))
	}
}

func TestObserver(t *testing.T) {
	var o observer
	o.reset("$ ls\nfile\n$")
	if got := o.observe("$ ls\nfile\n$ echo hi\nhi\n$", "screen"); got != newOutputHeading+"\n$ echo hi\nhi\n$" {
		t.Errorf("observe = %q", got)
	}
	if got := o.observe("cleared\n$", "cleared\n$"); got != screenHeading+"\ncleared\n$" {
		t.Errorf("observe after a reset = %q", got)
	}
}

func TestContextTokens(t *testing.T) {
	for model, want := range map[string]int{"openai/gpt-5.2": 400000, "gpt-4o-mini": 128000, "anthropic/claude-sonnet-4-5": 200000,
		"gpt-4.1-mini": 1047576, "my-local-model": DefaultContextTokens} {
		if got := ContextTokens(model); got != want {
			t.Errorf("ContextTokens(%q) = %d, want %d", model, got, want)
		}
	}
}

func TestHarnessRowMatchesBinary(t *testing.T) {
	h, ok := harness.Lookup("terminus-2")
	if !ok || h.Version != Version || h.KeyEnv != EnvAPIKey || h.Env[EnvWireAPI] != llm.ChatCompletions || h.WireAPI != harness.WireOpenAIChat {
		t.Errorf("harness row = %+v, want version %s, key %s, wire API %s", h, Version, EnvAPIKey, llm.ChatCompletions)
	}
	if _, ok := h.Env[EnvBaseURL]; !ok {
		t.Errorf("harness row sets no %s", EnvBaseURL)
	}
}

package runconfig

import (
	"strings"
	"testing"
)

// TestParseRefusesControlCharacters: every string that reaches the runner's
// argv, environment, files or headers is refused at parse when it holds a
// character the runner cannot pass (a NUL fails execve, so every attempt
// would crash the runner and spend its retries), in the TOML and the JSON
// form, naming the field and what is allowed, never echoing the value.
func TestParseRefusesControlCharacters(t *testing.T) {
	const endpoint = "[agents.model]\ntype = \"endpoint\"\nmodel = \"m\"\napi_key_secret = \"K\"\nbase_url = \"https://llm.example.com/v1\"\n"
	tests := []struct {
		name, toml, field, msg string
	}{
		{"NUL in [env]", head + agent + "[env]\nLOG_LEVEL = \"in\\u0000fo\"\n",
			"env.LOG_LEVEL", "contains a NUL character (U+0000); control characters other than tab, newline and carriage return are not allowed"},
		{"escape in [env]", head + agent + "[env]\nLOG_LEVEL = \"\\u001b[31m\"\n",
			"env.LOG_LEVEL", "contains a control character (U+001B)"},
		{"DEL in [agents.env]", head + agent + "[agents.env]\nEFFORT = \"hi\\u007f\"\n",
			"agents[0].env.EFFORT", "contains a control character (U+007F)"},
		{"C1 control in [verifier].env", head + agent + "[verifier]\nenv = { STRICT = \"\\u0085\" }\n",
			"verifier.env.STRICT", "contains a control character (U+0085)"},
		{"NUL in a command", head + "[[agents]]\nharness = \"command\"\ncommand = \"python3 solve.py\\u0000\"\n",
			"agents[0].command", "contains a NUL character (U+0000)"},
		{"newline in a model id", head + "[[agents]]\nharness = \"codex\"\n[agents.model]\ntype = \"provider\"\nmodel = \"openai/gpt\\n5\"\napi_key_secret = \"K\"\n",
			"agents[0].model.model", "contains a newline (U+000A); control characters other than tab are not allowed"},
		{"NUL in a hosted base model", head + "[[agents]]\nharness = \"terminus-2\"\n[agents.model]\ntype = \"hosted\"\nbase_model = \"q\\u0000\"\nlora_model_name = \"l\"\n",
			"agents[0].model.base_model", "contains a NUL character (U+0000)"},
		{"carriage return in a LoRA name", head + "[[agents]]\nharness = \"terminus-2\"\n[agents.model]\ntype = \"hosted\"\nbase_model = \"q\"\nlora_model_name = \"l\\r\"\n",
			"agents[0].model.lora_model_name", "contains a carriage return (U+000D)"},
		{"CRLF in an extra header", head + "[[agents]]\nharness = \"codex\"\n" + endpoint + "extra_headers = { \"X-Org\" = \"a\\r\\nX-Injected: 1\" }\n",
			"agents[0].model.extra_headers.X-Org", "contains a carriage return (U+000D)"},
		{"NUL in a judge model", head + agent + "[execution]\njudge_model = \"openai/x\\u0000\"\n",
			"execution.judge_model", "contains a NUL character (U+0000)"},
		{"NUL in the benchmark", "[experiment]\nbenchmark = \"b\\u0000\"\n" + agent,
			"experiment.benchmark", "contains a NUL character (U+0000)"},
		{"NUL in a manifest version", "[experiment]\nbenchmark = \"b\"\nmanifest_version = \"2\\u0000\"\n" + agent,
			"experiment.manifest_version", "contains a NUL character (U+0000)"},
		{"NUL in an agent name", head + "[[agents]]\nharness = \"oracle\"\nname = \"a\\u0000\"\n",
			"agents[0].name", "contains a NUL character (U+0000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.toml))
			checkErrors(t, err, []wantErr{{tt.field, tt.msg}})
			_, err = ParseJSON(tomlToJSON(t, tt.toml))
			checkErrors(t, err, []wantErr{{tt.field, tt.msg}})
		})
	}
}

func TestParseControlCharacterMessageNeverEchoesTheValue(t *testing.T) {
	_, err := Parse([]byte(head + agent + "[env]\nTOKEN_HINT = \"sk-live-ABCDEF123456\\u0000\"\n"))
	if err == nil || strings.Contains(err.Error(), "ABCDEF123456") {
		t.Errorf("Parse error = %v, want an error that does not echo the value", err)
	}
}

// TestParseAcceptsTabsAndLineBreaks: what the runner passes fine stays
// allowed: multi-line env values and commands, tabs anywhere, non-ASCII text.
func TestParseAcceptsTabsAndLineBreaks(t *testing.T) {
	doc := head + "[[agents]]\nharness = \"command\"\ncommand = \"\"\"\nset -e\r\n\tpython3 solve.py\n\"\"\"\n" +
		"[agents.env]\nPROMPT_PREFIX = \"line one\\nline two\\r\\n\\tindented — ünïcode\"\n"
	for _, form := range []struct {
		name  string
		parse func([]byte) (Config, error)
		data  []byte
	}{{"TOML", Parse, []byte(doc)}, {"JSON", ParseJSON, tomlToJSON(t, doc)}} {
		cfg, err := form.parse(form.data)
		if err != nil {
			t.Fatalf("%s: %v", form.name, err)
		}
		if got, want := cfg.Agents[0].Env["PROMPT_PREFIX"], "line one\nline two\r\n\tindented — ünïcode"; got != want {
			t.Errorf("%s: env value = %q, want %q", form.name, got, want)
		}
		if !strings.Contains(cfg.Agents[0].Command, "\tpython3 solve.py") {
			t.Errorf("%s: command = %q, want it to keep its tab and lines", form.name, cfg.Agents[0].Command)
		}
	}
}

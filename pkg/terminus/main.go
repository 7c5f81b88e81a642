package terminus

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/gauntlet-bench/gauntlet/pkg/terminus/llm"
	"github.com/gauntlet-bench/gauntlet/pkg/terminus/terminal"
)

// Environment variables terminus-2 reads. The token is read only from the
// environment (argv is visible to every local user) and is removed from the
// terminal's environment, so nothing typed in the terminal can print it.
const (
	EnvBaseURL       = "TERMINUS_BASE_URL"
	EnvWireAPI       = "TERMINUS_WIRE_API"
	EnvAPIKey        = "TERMINUS_API_KEY"
	EnvModel         = "TERMINUS_MODEL"
	EnvMaxEpisodes   = "TERMINUS_MAX_EPISODES"
	EnvContextTokens = "TERMINUS_CONTEXT_TOKENS"
	EnvTemperature   = "TERMINUS_TEMPERATURE"
	EnvTerminal      = "TERMINUS_TERMINAL"
	// The runner's own variables, used when the TERMINUS_ ones are unset.
	envGauntletModel   = "GAUNTLET_MODEL"
	envInstructionFile = "GAUNTLET_INSTRUCTION_FILE"
	envInstruction     = "GAUNTLET_INSTRUCTION"
	envAgentLogsDir    = "GAUNTLET_AGENT_LOGS_DIR"
)

// ExitUsage is the exit status for bad flags or configuration.
const ExitUsage = 2

// Main is terminus-2's entry point: it reads flags and environment, runs
// the agent in a terminal in the working directory and returns the exit
// status (Outcome.ExitCode, or ExitUsage).
func Main(args, environ []string, stderr io.Writer) int {
	logger := slog.New(slog.NewJSONHandler(stderr, nil)).With("component", "terminus-2")
	env := envMap(environ)
	defEpisodes, err := envInt(env, EnvMaxEpisodes, DefaultMaxEpisodes)
	if err != nil {
		logger.Error(err.Error())
		return ExitUsage
	}
	defContext, err := envInt(env, EnvContextTokens, 0)
	if err != nil {
		logger.Error(err.Error())
		return ExitUsage
	}
	fs := flag.NewFlagSet("terminus-2", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("base-url", env[EnvBaseURL], "model API root: with /v1 for chat-completions, without for anthropic-messages (env "+EnvBaseURL+")")
	wireAPI := fs.String("wire-api", or(env[EnvWireAPI], llm.ChatCompletions), "chat-completions or anthropic-messages (env "+EnvWireAPI+")")
	model := fs.String("model", or(env[EnvModel], env[envGauntletModel]), "model name sent to the API (env "+EnvModel+", else "+envGauntletModel+")")
	instructionFile := fs.String("instruction-file", env[envInstructionFile], "file holding the task instruction (else $"+envInstruction+")")
	logsDir := fs.String("logs-dir", or(env[envAgentLogsDir], "/logs/agent"), "where trajectory.json and usage.json are written")
	maxEpisodes := fs.Int("max-episodes", defEpisodes, "turns before giving up (env "+EnvMaxEpisodes+")")
	contextTokens := fs.Int("context-tokens", defContext, "the model's context window; 0 = from the built-in table (env "+EnvContextTokens+")")
	maxTokens := fs.Int("max-tokens", 0, "bound on each reply's tokens (0 = the provider's default; 8192 for Anthropic)")
	temperature := fs.String("temperature", env[EnvTemperature], "sampling temperature; empty = not sent (env "+EnvTemperature+")")
	termKind := fs.String("terminal", or(env[EnvTerminal], "pty"), "pty (bash on a pty drawn by a built-in emulator) or tmux (the image's tmux, as the published agent) (env "+EnvTerminal+")")
	retries := fs.Int("retries", 3, "retries of a 429, 5xx or unanswered model call")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	if *version {
		fmt.Fprintln(stderr, "terminus-2", Version)
		return 0
	}
	fail := func(format string, a ...any) int {
		logger.Error(fmt.Sprintf(format, a...))
		return ExitUsage
	}
	instruction := env[envInstruction]
	if *instructionFile != "" {
		data, err := os.ReadFile(*instructionFile)
		if err != nil {
			return fail("--instruction-file: %v", err)
		}
		instruction = string(data)
	}
	if strings.TrimSpace(instruction) == "" {
		return fail("no instruction: set --instruction-file or $%s", envInstruction)
	}
	var temp *float64
	if *temperature != "" {
		t, err := strconv.ParseFloat(*temperature, 64)
		if err != nil || t < 0 || t > 2 {
			return fail("--temperature %q: want a number from 0 to 2", *temperature)
		}
		temp = &t
	}
	if *maxEpisodes < 1 {
		return fail("--max-episodes %d: want ≥ 1", *maxEpisodes)
	}
	if *contextTokens < 0 || (*contextTokens > 0 && *contextTokens <= MinFreeTokens) {
		return fail("--context-tokens %d: want 0 (the table's) or more than %d", *contextTokens, MinFreeTokens)
	}
	client, err := llm.New(llm.Config{API: *wireAPI, BaseURL: *baseURL, Model: *model, Key: env[EnvAPIKey],
		MaxTokens: *maxTokens, Temperature: temp, Retries: *retries, Logger: logger})
	if err != nil {
		return fail("model settings: %v", err)
	}
	if info, err := os.Stat(*logsDir); err != nil || !info.IsDir() {
		return fail("--logs-dir %q: not a directory", *logsDir)
	}
	var startTerm func(terminal.Options) (Term, error)
	switch *termKind {
	case "pty":
		startTerm = func(o terminal.Options) (Term, error) { return terminal.Start(o) }
	case "tmux":
		if _, err := exec.LookPath("tmux"); err != nil {
			return fail("--terminal tmux: no tmux on PATH in this image; use --terminal pty")
		}
		startTerm = func(o terminal.Options) (Term, error) { return terminal.StartTmux(o) }
	default:
		return fail("--terminal %q: want pty or tmux", *termKind)
	}
	dir, err := os.Getwd()
	if err != nil {
		return fail("working directory: %v", err)
	}
	shellEnv := terminalEnv(environ)
	// Terminal-Bench images have bash; an image without it gets its sh.
	shell := []string{"bash", "-i"}
	if _, err := exec.LookPath("bash"); err != nil {
		logger.Warn("no bash on PATH; the terminal runs sh")
		shell = []string{"sh", "-i"}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	res := Run(ctx, Config{Instruction: instruction, Model: *model, ContextTokens: *contextTokens,
		MaxEpisodes: *maxEpisodes, LogDir: *logsDir, Logger: logger},
		client, func() (Term, error) {
			return startTerm(terminal.Options{Shell: shell, Dir: dir, Env: shellEnv})
		})
	attrs := []any{"outcome", res.Outcome, "episodes", res.Episodes, "model_calls", res.Usage.ModelCalls,
		"input_tokens", res.Usage.InputTokens, "output_tokens", res.Usage.OutputTokens}
	if res.Err != nil {
		var e *llm.Error
		if errors.As(res.Err, &e) {
			attrs = append(attrs, "status", e.Status)
		}
		logger.Error("terminus-2 ended: "+res.Err.Error(), attrs...)
	} else {
		logger.Info("terminus-2 ended", attrs...)
	}
	return res.Outcome.ExitCode()
}

// terminalEnv is the shell's environment: terminus-2's own minus its
// settings and token.
func terminalEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "TERMINUS_") {
			out = append(out, kv)
		}
	}
	return out
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// envInt reads an integer variable; unset is def, anything but an integer
// an error naming the variable.
func envInt(env map[string]string, key string, def int) (int, error) {
	s, ok := env[key]
	if !ok || s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("$%s %q: want an integer", key, s)
	}
	return n, nil
}

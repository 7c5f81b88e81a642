// Package terminus is terminus-2, Terminal-Bench 2's reference agent, in
// Go: a loop that shows a model a real terminal, types the keystrokes its
// JSON answers ask for, and shows it the new output, until the model has
// said twice that the task is complete (or a limit is reached). It records
// an ATIF trajectory (one agent step per model call) and a usage report in
// the agent's log directory. docs/TERMINUS2.md compares it with the
// published Python agent.
package terminus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/terminus/llm"
)

// Version is terminus-2's version as gauntlet builds it, reported in the
// trajectory and as the harness row's agent_info.version.
const Version = "2.0.0-gauntlet.1"

// Defaults of Config.
const (
	DefaultMaxEpisodes = 1000
	// MinFreeTokens is how much room must be left in the context before a
	// model call; with less, the conversation is summarised first.
	MinFreeTokens = 8000
)

// Outcome is how a run ended.
type Outcome string

// Outcomes, each with its exit code (ExitCode).
const (
	Completed        Outcome = "completed"         // task_complete confirmed
	EpisodeLimit     Outcome = "episode_limit"     // MaxEpisodes used up
	AuthError        Outcome = "auth"              // the model endpoint refused the key
	ModelUnavailable Outcome = "model_unavailable" // 429/5xx/no answer after retries
	ModelRejected    Outcome = "model_rejected"    // the endpoint refused a request (e.g. unknown model, context too long)
	Interrupted      Outcome = "interrupted"       // the context was cancelled (SIGTERM)
	Failed           Outcome = "failed"            // terminus-2 itself failed (terminal, log dir)
)

// ExitCode is the process exit status for an outcome, which the harness
// row's error classes read.
func (o Outcome) ExitCode() int {
	switch o {
	case Completed:
		return 0
	case AuthError:
		return 3
	case ModelUnavailable:
		return 4
	case EpisodeLimit:
		return 5
	case ModelRejected:
		return 6
	case Interrupted:
		return 143
	}
	return 1
}

// Model answers a conversation (llm.Client).
type Model interface {
	Complete(ctx context.Context, msgs []llm.Message) (llm.Reply, error)
}

// Term is the terminal the agent types into (terminal.Terminal, or
// terminal.Tmux).
type Term interface {
	// Type types keystrokes, a key name as that key (terminal.Keys).
	Type(keystrokes string) error
	Wait(ctx context.Context, max time.Duration) time.Duration
	Screen() string
	History() string
	Exited() bool
	Close() error
}

// Config configures Run.
type Config struct {
	Instruction string
	// Model names the model in the trajectory.
	Model string
	// ContextTokens is the model's context window (0 = ContextTokens(Model)).
	ContextTokens int
	// MaxEpisodes bounds the turns (0 = DefaultMaxEpisodes).
	MaxEpisodes int
	// LogDir receives trajectory.json and usage.json.
	LogDir string
	// SessionID names the trajectory ("" = a new random id).
	SessionID string
	Logger    *slog.Logger
	// Now is the clock of the trajectory's timestamps (nil = time.Now).
	Now func() time.Time
}

// Result is how Run ended.
type Result struct {
	Outcome  Outcome
	Episodes int
	Usage    UsageReport
	// Err is the error behind any outcome but Completed and EpisodeLimit.
	Err error
}

// Run drives one task: it starts the terminal, converses with the model
// until the task is confirmed complete or a limit or error ends it, and
// keeps the trajectory and usage report in cfg.LogDir up to date.
func Run(ctx context.Context, cfg Config, model Model, start func() (Term, error)) Result {
	if cfg.MaxEpisodes <= 0 {
		cfg.MaxEpisodes = DefaultMaxEpisodes
	}
	if cfg.ContextTokens <= 0 {
		cfg.ContextTokens = ContextTokens(cfg.Model)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionID == "" {
		cfg.SessionID = uuid.NewString()
	}
	a := &agent{cfg: cfg, model: model, start: start,
		rec: newRecorder(cfg.LogDir, cfg.SessionID, Version, cfg.Model, cfg.Now)}
	res := a.run(ctx)
	a.rec.usage.Outcome = string(res.Outcome)
	a.rec.usage.Episodes = res.Episodes
	if res.Err != nil {
		a.rec.usage.Error = res.Err.Error()
	}
	if err := a.rec.flush(); err != nil && res.Err == nil {
		res = Result{Outcome: Failed, Episodes: res.Episodes, Err: err}
	}
	if a.term != nil {
		_ = a.term.Close()
	}
	res.Usage = a.rec.usage
	return res
}

type agent struct {
	cfg   Config
	model Model
	start func() (Term, error)
	term  Term
	obs   observer
	rec   *recorder

	history []llm.Message
	// contextUsed is the size of history as of the last reply's usage
	// (prompt + completion tokens), or an estimate when none was reported.
	contextUsed int
}

func (a *agent) run(ctx context.Context) Result {
	if err := a.startTerminal(ctx); err != nil {
		return Result{Outcome: Failed, Err: err}
	}
	prompt := initialPrompt(a.cfg.Instruction, a.term.Screen())
	a.rec.user(prompt)
	if err := a.rec.flush(); err != nil {
		return Result{Outcome: Failed, Err: err}
	}
	pendingCompletion := false
	for episode := 1; ; episode++ {
		if ctx.Err() != nil {
			return Result{Outcome: Interrupted, Episodes: episode - 1, Err: ctx.Err()}
		}
		if episode > a.cfg.MaxEpisodes {
			a.cfg.Logger.WarnContext(ctx, "episode limit reached", "max_episodes", a.cfg.MaxEpisodes)
			return Result{Outcome: EpisodeLimit, Episodes: episode - 1,
				Err: fmt.Errorf("the episode limit (%d) was reached before the task was confirmed complete", a.cfg.MaxEpisodes)}
		}
		reply, err := a.call(ctx, &prompt)
		if err != nil {
			return Result{Outcome: outcomeOf(ctx, err), Episodes: episode - 1, Err: err}
		}
		resp, fb := ParseResponse(reply.Content)
		step := a.rec.agent(reply, map[string]any{"episode": episode})
		if len(fb.Errors) > 0 {
			a.cfg.Logger.InfoContext(ctx, "unusable response", "episode", episode, "errors", fb.Errors)
			prompt = parseErrorPrompt(fb)
			step.Observation = &atif.Observation{Results: []atif.Result{{Content: prompt}}}
			if err := a.rec.flush(); err != nil {
				return Result{Outcome: Failed, Episodes: episode, Err: err}
			}
			continue
		}
		step.Extra["analysis"], step.Extra["plan"] = resp.Analysis, resp.Plan
		if len(fb.Warnings) > 0 {
			step.Extra["warnings"] = fb.Warnings
		}
		output, err := a.execute(ctx, resp.Commands)
		if err != nil {
			return Result{Outcome: Failed, Episodes: episode, Err: err}
		}
		lastCall := ""
		for i, c := range resp.Commands {
			lastCall = fmt.Sprintf("call_%d_%d", episode, i+1)
			args, err := json.Marshal(c)
			if err != nil {
				return Result{Outcome: Failed, Episodes: episode, Err: fmt.Errorf("encode tool call: %w", err)}
			}
			step.ToolCalls = append(step.ToolCalls, atif.ToolCall{ToolCallID: lastCall, FunctionName: ToolBashCommand,
				Arguments: args})
		}
		done := false
		if resp.TaskComplete {
			lastCall = fmt.Sprintf("call_%d_done", episode)
			step.ToolCalls = append(step.ToolCalls, atif.ToolCall{ToolCallID: lastCall, FunctionName: ToolMarkTaskComplete,
				Arguments: json.RawMessage(`{}`)})
			if pendingCompletion {
				done = true
				output = observationPrompt(output, fb)
			} else {
				pendingCompletion = true
				output = confirmPrompt(observationPrompt(output, fb))
			}
		} else {
			pendingCompletion = false
			output = observationPrompt(output, fb)
		}
		prompt = output
		step.Observation = &atif.Observation{Results: []atif.Result{{SourceCallID: lastCall, Content: output}}}
		if err := a.rec.flush(); err != nil {
			return Result{Outcome: Failed, Episodes: episode, Err: err}
		}
		if done {
			a.cfg.Logger.InfoContext(ctx, "task marked complete", "episodes", episode)
			return Result{Outcome: Completed, Episodes: episode}
		}
	}
}

func outcomeOf(ctx context.Context, err error) Outcome {
	var e *llm.Error
	switch {
	case ctx.Err() != nil:
		return Interrupted
	case errors.As(err, &e) && e.Kind == llm.KindAuth:
		return AuthError
	case errors.As(err, &e) && e.Kind == llm.KindUnavailable:
		return ModelUnavailable
	case errors.As(err, &e):
		return ModelRejected
	}
	return Failed
}

// startupWait bounds the wait for a new shell's first prompt.
const startupWait = 10 * time.Second

func (a *agent) startTerminal(ctx context.Context) error {
	term, err := a.start()
	if err != nil {
		return fmt.Errorf("start the terminal: %w", err)
	}
	a.term = term
	// The first screen shown should hold the shell's prompt.
	term.Wait(ctx, startupWait)
	a.obs.reset(term.History())
	return nil
}

// execute types each command's keystrokes and waits its duration, then
// returns the new output. A shell that has exited (the agent typed exit)
// is replaced by a new one, and the output says so.
func (a *agent) execute(ctx context.Context, cmds []Command) (string, error) {
	for _, c := range cmds {
		if err := a.term.Type(c.Keystrokes); err != nil {
			break // the shell has exited; reported below
		}
		a.term.Wait(ctx, time.Duration(c.Duration*float64(time.Second)))
		if a.term.Exited() {
			break
		}
	}
	output := a.obs.observe(a.term.History(), a.term.Screen())
	if a.term.Exited() {
		_ = a.term.Close()
		if err := a.startTerminal(ctx); err != nil {
			return "", err
		}
		output += "\n\nThe shell exited, so a new terminal was started; commands after the exit were not typed. It shows:\n" + a.term.Screen()
	}
	return output, nil
}

// call sends prompt as the next user message and returns the reply,
// summarising the conversation first when the context is nearly full, or
// when the endpoint says it no longer fits. It may rewrite *prompt (the
// handoff carries the pending observation).
func (a *agent) call(ctx context.Context, prompt *string) (llm.Reply, error) {
	summarised := false
	if a.freeTokens(*prompt) < MinFreeTokens && len(a.history) > 0 {
		if err := a.summarise(ctx, prompt); err != nil {
			return llm.Reply{}, err
		}
		summarised = true
	}
	for {
		msgs := append(append([]llm.Message(nil), a.history...), llm.Message{Role: "user", Content: *prompt})
		reply, err := a.model.Complete(ctx, msgs)
		var e *llm.Error
		if err != nil && errors.As(err, &e) && e.Kind == llm.KindContextLength && !summarised && len(a.history) > 0 {
			a.cfg.Logger.WarnContext(ctx, "the endpoint says the context is full; summarising", "err", err)
			if err := a.summarise(ctx, prompt); err != nil {
				return llm.Reply{}, err
			}
			summarised = true
			continue
		}
		if err != nil {
			return llm.Reply{}, err
		}
		a.history = append(msgs, llm.Message{Role: "assistant", Content: reply.Content})
		a.noteUsage(reply, msgs)
		return reply, nil
	}
}

func (a *agent) noteUsage(reply llm.Reply, msgs []llm.Message) {
	if reply.Usage.Reported {
		a.contextUsed = int(reply.Usage.PromptTokens + reply.Usage.CompletionTokens)
		return
	}
	a.contextUsed = estimateTokens(append(msgs, llm.Message{Content: reply.Content})...)
}

// freeTokens is the room left in the context after sending prompt: the
// last reported usage plus an estimate for the new message.
func (a *agent) freeTokens(prompt string) int {
	return a.cfg.ContextTokens - a.contextUsed - estimateTokens(llm.Message{Content: prompt})
}

// estimateTokens guesses a token count at four bytes a token, the usual
// rule of thumb for English text and code.
func estimateTokens(msgs ...llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)/4 + 4
	}
	return n
}

// summarise replaces the conversation with a handoff in three calls: the
// full conversation writes a summary; a fresh context given the task, the
// summary and the screen asks questions; the full conversation answers
// them. The new conversation is the fresh one, and *prompt becomes the
// answers followed by the pending observation.
func (a *agent) summarise(ctx context.Context, prompt *string) error {
	a.cfg.Logger.InfoContext(ctx, "summarising the conversation", "context_used", a.contextUsed, "context_tokens", a.cfg.ContextTokens)
	a.rec.usage.Summaries++
	n := a.rec.usage.Summaries

	old := a.history
	summaryMsgs := append(append([]llm.Message(nil), old...), llm.Message{Role: "user", Content: summaryPrompt})
	summary, err := a.model.Complete(ctx, summaryMsgs)
	var e *llm.Error
	if err != nil && errors.As(err, &e) && e.Kind == llm.KindContextLength && len(old) > 2 {
		// Not even the summary request fits: summarise the first turn and
		// the latest ones only.
		old = append(append([]llm.Message(nil), old[:1]...), old[len(old)-2:]...)
		summaryMsgs = append(append([]llm.Message(nil), old...), llm.Message{Role: "user", Content: summaryPrompt})
		summary, err = a.model.Complete(ctx, summaryMsgs)
	}
	if err != nil {
		return fmt.Errorf("summarise (summary): %w", err)
	}
	a.rec.agent(summary, map[string]any{"summarization": n, "part": "summary", "prompt": summaryPrompt})

	qPrompt := questionsPrompt(a.cfg.Instruction, summary.Content, a.term.Screen())
	questions, err := a.model.Complete(ctx, []llm.Message{{Role: "user", Content: qPrompt}})
	if err != nil {
		return fmt.Errorf("summarise (questions): %w", err)
	}
	a.rec.agent(questions, map[string]any{"summarization": n, "part": "questions", "prompt": qPrompt})

	ansMsgs := append(summaryMsgs, llm.Message{Role: "assistant", Content: summary.Content},
		llm.Message{Role: "user", Content: answersPrompt(questions.Content)})
	answers, err := a.model.Complete(ctx, ansMsgs)
	if err != nil {
		return fmt.Errorf("summarise (answers): %w", err)
	}
	a.rec.agent(answers, map[string]any{"summarization": n, "part": "answers", "prompt": answersPrompt(questions.Content)})

	a.history = []llm.Message{{Role: "user", Content: qPrompt}, {Role: "assistant", Content: questions.Content}}
	a.contextUsed = estimateTokens(a.history...)
	if questions.Usage.Reported {
		a.contextUsed = int(questions.Usage.PromptTokens + questions.Usage.CompletionTokens)
	}
	*prompt = resumePrompt(answers.Content, *prompt)
	return a.rec.flush()
}

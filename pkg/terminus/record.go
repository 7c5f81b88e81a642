package terminus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/terminus/llm"
)

// Files terminus-2 writes to its log directory.
const (
	TrajectoryFile = atif.FileName
	// UsageFile is read by the runner (harness.ReadUsageJSON's format).
	UsageFile = "usage.json"
)

// Tool names of the trajectory's tool calls.
const (
	ToolBashCommand      = "bash_command"
	ToolMarkTaskComplete = "mark_task_complete"
)

// UsageReport is usage.json: the runner reads the token fields; the rest
// says how the agent ended. Cost is left to the platform, which prices the
// tokens the gateway metered.
type UsageReport struct {
	InputTokens  int64  `json:"input_tokens"` // prompt tokens, cached ones included
	CacheTokens  int64  `json:"cache_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	ModelCalls   int    `json:"model_calls"`
	Episodes     int    `json:"episodes"`
	Summaries    int    `json:"summarizations"`
	Outcome      string `json:"outcome"`
	Error        string `json:"error,omitempty"`
}

// recorder keeps the trajectory and the usage and writes both to the log
// directory after every step, so an agent killed at its timeout still
// leaves them behind.
type recorder struct {
	dir   string
	traj  atif.Trajectory
	usage UsageReport
	now   func() time.Time
}

func newRecorder(dir, sessionID, version, model string, now func() time.Time) *recorder {
	return &recorder{dir: dir, now: now, traj: atif.Trajectory{
		SchemaVersion: atif.SchemaVersion, SessionID: sessionID,
		Agent: atif.Agent{Name: "terminus-2", Version: version, ModelName: model},
	}, usage: UsageReport{Outcome: "running"}}
}

func (r *recorder) timestamp() string { return r.now().UTC().Format(time.RFC3339Nano) }

func (r *recorder) user(message string) {
	r.traj.Steps = append(r.traj.Steps, atif.Step{StepID: len(r.traj.Steps) + 1, Timestamp: r.timestamp(),
		Source: atif.SourceUser, Message: message})
}

// agent records one model call; it returns the step so that the caller
// can add tool calls and the observation.
func (r *recorder) agent(reply llm.Reply, extra map[string]any) *atif.Step {
	r.usage.ModelCalls++
	r.usage.InputTokens += reply.Usage.PromptTokens
	r.usage.CacheTokens += reply.Usage.CachedTokens
	r.usage.OutputTokens += reply.Usage.CompletionTokens
	if reply.Model != "" {
		extra["model"] = reply.Model // as the endpoint named it
	}
	step := atif.Step{StepID: len(r.traj.Steps) + 1, Timestamp: r.timestamp(), Source: atif.SourceAgent,
		Message: reply.Content, ReasoningContent: reply.Reasoning, Extra: extra}
	if reply.Usage.Reported {
		step.Metrics = &atif.Metrics{PromptTokens: reply.Usage.PromptTokens,
			CompletionTokens: reply.Usage.CompletionTokens, CachedTokens: reply.Usage.CachedTokens}
	}
	r.traj.Steps = append(r.traj.Steps, step)
	return &r.traj.Steps[len(r.traj.Steps)-1]
}

// flush writes trajectory.json and usage.json, each replaced atomically.
func (r *recorder) flush() error {
	r.traj.Total()
	if err := writeJSON(filepath.Join(r.dir, TrajectoryFile), r.traj); err != nil {
		return err
	}
	return writeJSON(filepath.Join(r.dir, UsageFile), r.usage)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

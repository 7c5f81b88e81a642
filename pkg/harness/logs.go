package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// LogSource is where an agent's logs are on the host after the agent phase.
type LogSource struct {
	// AgentLogDir is the host copy of /logs/agent (stdout.txt, stderr.txt).
	AgentLogDir string
	// HomeDir is the host path of the agent's home, where the programs
	// write their native logs.
	HomeDir string
}

// TrajectoryParser builds the steps of an ATIF trajectory (and its session
// id) from an agent's logs; the caller fills in the agent and the totals.
type TrajectoryParser func(src LogSource) (atif.Trajectory, error)

// Model error classes a ModelErrorParser reports.
const (
	// ModelErrorAuth: the provider refused the key (401, 403). Final.
	ModelErrorAuth = "auth"
	// ModelErrorUnavailable: the provider kept failing (429, 5xx) after
	// retries.
	ModelErrorUnavailable = "model_unavailable"
)

// ModelErrorParser reads whether an agent that exited with exitCode failed
// because of its model; class is "" when nothing says so, detail is the
// program's own words.
type ModelErrorParser func(agentLogDir string, exitCode int) (class, detail string)

// maxLogBytes bounds how much of a log an agent wrote is parsed.
const maxLogBytes = 64 << 20

// ErrNoLog reports that the program left no log to build a trajectory from.
var ErrNoLog = errors.New("no native log")

// readLog reads an agent-written log (no symlinks, bounded).
func readLog(path string) ([]byte, error) {
	return ReadAgentFile(path, maxLogBytes)
}

// findLog returns the one file matching pattern under dir (the newest name
// when several match).
func findLog(dir, pattern string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return "", err
	}
	if len(matches) == 0 {
		return "", fmt.Errorf("%w: nothing matches %s", ErrNoLog, pattern)
	}
	sort.Strings(matches)
	return matches[len(matches)-1], nil
}

// eachJSONLine calls fn with every line of data that is a JSON object;
// other lines (a program's plain-text notes on stdout) are skipped, the
// way test2json passes through what it does not recognise.
func eachJSONLine(data []byte, fn func(line []byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxLogBytes)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' || !json.Valid(line) {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	return sc.Err()
}

// readStdout reads the agent's captured stdout.
func readStdout(agentLogDir string) ([]byte, error) {
	data, err := readLog(filepath.Join(agentLogDir, StdoutFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// classifyStatus maps a provider's HTTP status to a model error class.
func classifyStatus(status int) string {
	switch {
	case status == 401 || status == 403:
		return ModelErrorAuth
	case status == 429 || status >= 500 && status <= 599:
		return ModelErrorUnavailable
	}
	return ""
}

var statusInText = regexp.MustCompile(`(?:status|status code|statusCode)[:=]?\s*"?(\d{3})\b`)

// statusFromText finds an HTTP status in a program's error message.
func statusFromText(s string) int {
	m := statusInText.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// rawJSON returns v as JSON arguments ({} for nothing).
func rawJSON(v any) json.RawMessage {
	if v == nil {
		return json.RawMessage("{}")
	}
	if s, ok := v.(string); ok && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// stepBuilder numbers steps and finds the step that made a tool call.
type stepBuilder struct {
	steps  []atif.Step
	byCall map[string]int // tool call id → step index
}

func (b *stepBuilder) add(s atif.Step) *atif.Step {
	s.StepID = len(b.steps) + 1
	b.steps = append(b.steps, s)
	return &b.steps[len(b.steps)-1]
}

func (b *stepBuilder) call(stepIndex int, c atif.ToolCall) {
	if b.byCall == nil {
		b.byCall = map[string]int{}
	}
	b.steps[stepIndex].ToolCalls = append(b.steps[stepIndex].ToolCalls, c)
	b.byCall[c.ToolCallID] = stepIndex
}

// trajectory is the steps built so far under the session id; the steps
// are the builder's own until the next line is read.
func (b *stepBuilder) trajectory(sessionID string) atif.Trajectory {
	return atif.Trajectory{SessionID: sessionID, Steps: slices.Clone(b.steps)}
}

// result attaches a tool's output to the step that called it (dropped when
// no step did: the trajectory must not claim a call that is not there).
func (b *stepBuilder) result(callID, content string) {
	i, ok := b.byCall[callID]
	if !ok {
		return
	}
	s := &b.steps[i]
	if s.Observation == nil {
		s.Observation = &atif.Observation{}
	}
	s.Observation.Results = append(s.Observation.Results, atif.Result{SourceCallID: callID, Content: content})
}

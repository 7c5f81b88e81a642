package harbor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/google/uuid"
)

// TrialResultFile is the name of a trial's result file in its trial directory.
const TrialResultFile = "result.json"

// TrialResult is a trial's result.json in Harbor's TrialResult shape. Top-level
// keys this type does not model are kept in Extra and written back, so a
// result Harbor wrote survives a read/write round trip.
type TrialResult struct {
	ID        string `json:"id"` // a UUID
	TaskName  string `json:"task_name"`
	TrialName string `json:"trial_name"`
	TrialURI  string `json:"trial_uri"`
	// TaskID says where the task came from: a local path or a git checkout.
	TaskID       *TaskID `json:"task_id"`
	Source       *string `json:"source"`
	TaskChecksum string  `json:"task_checksum"`
	// Config is Harbor's TrialConfig, kept verbatim.
	Config         json.RawMessage `json:"config"`
	AgentInfo      AgentInfo       `json:"agent_info"`
	AgentResult    *AgentResult    `json:"agent_result"`
	VerifierResult *VerifierResult `json:"verifier_result"`
	ExceptionInfo  *ExceptionInfo  `json:"exception_info"`
	StartedAt      *time.Time      `json:"started_at"`
	FinishedAt     *time.Time      `json:"finished_at"`
	// Phase timings.
	EnvironmentSetup *TimingInfo `json:"environment_setup"`
	AgentSetup       *TimingInfo `json:"agent_setup"`
	AgentExecution   *TimingInfo `json:"agent_execution"`
	Verifier         *TimingInfo `json:"verifier"`
	// StepResults are a multi-step trial's steps, in the order they ran
	// (steps the trial stopped before are absent); nil for a single-step
	// trial. Harbor's TrialResult.step_results.
	StepResults []StepResult `json:"step_results,omitempty"`
	// Extra holds top-level keys not modelled above, verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

// StepResult is one step of a multi-step trial, in Harbor's StepResult
// shape: the step's agent usage, its verifier's rewards, its exception and
// its phase timings.
type StepResult struct {
	StepName       string          `json:"step_name"`
	AgentResult    *AgentResult    `json:"agent_result"`
	VerifierResult *VerifierResult `json:"verifier_result"`
	ExceptionInfo  *ExceptionInfo  `json:"exception_info"`
	AgentExecution *TimingInfo     `json:"agent_execution"`
	Verifier       *TimingInfo     `json:"verifier"`
}

// UsageTotals sums the agent's tokens and cost as Harbor's
// TrialResult.compute_token_cost_totals does: the trial's agent_result
// when it has one, else every step's; a total is nil when no context
// reports it.
func (t TrialResult) UsageTotals() (input, cache, output *int, cost *float64) {
	var contexts []*AgentResult
	switch {
	case t.AgentResult != nil:
		contexts = []*AgentResult{t.AgentResult}
	default:
		for _, s := range t.StepResults {
			if s.AgentResult != nil {
				contexts = append(contexts, s.AgentResult)
			}
		}
	}
	addInt := func(sum **int, v *int) {
		if v != nil {
			n := *v
			if *sum != nil {
				n += **sum
			}
			*sum = &n
		}
	}
	for _, c := range contexts {
		addInt(&input, c.NInputTokens)
		addInt(&cache, c.NCacheTokens)
		addInt(&output, c.NOutputTokens)
		if c.CostUSD != nil {
			v := *c.CostUSD
			if cost != nil {
				v += *cost
			}
			cost = &v
		}
	}
	return input, cache, output, cost
}

// TaskID is Harbor's task id: PackageTaskId {org, name, ref} when Name is
// set, else GitTaskId {git_url, git_commit_id, path} when GitURL is, else
// LocalTaskId {path}.
type TaskID struct {
	GitURL      string
	GitCommitID string
	Path        string
	// Org, Name and Ref identify a package task (Ref: a tag, revision or
	// "sha256:<hex>" content hash).
	Org  string
	Name string
	Ref  string
}

// AgentInfo identifies the agent (harness) and model of a trial.
type AgentInfo struct {
	Name      string     `json:"name"`
	Version   string     `json:"version"`
	ModelInfo *ModelInfo `json:"model_info"`
}

// ModelInfo names the model an agent used.
type ModelInfo struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
}

// AgentResult is Harbor's AgentContext: what the agent reported using.
type AgentResult struct {
	NInputTokens  *int     `json:"n_input_tokens"` // includes cached tokens
	NCacheTokens  *int     `json:"n_cache_tokens"`
	NOutputTokens *int     `json:"n_output_tokens"`
	CostUSD       *float64 `json:"cost_usd"`
	// RolloutDetails is kept verbatim (token ids, logprobs).
	RolloutDetails json.RawMessage `json:"rollout_details"`
	Metadata       map[string]any  `json:"metadata"`
}

// VerifierResult holds the rewards the verifier produced. Harbor allows null
// reward values; those entries are dropped on reading.
type VerifierResult struct {
	Rewards map[string]float64 `json:"rewards"`
}

// Exception types of result.json's exception_info, named as Harbor names
// them: the runner records them and the grader classifies a trial by them.
const (
	ExceptionAgentSetup        = "AgentSetupError"
	ExceptionAgentSetupTimeout = "AgentSetupTimeoutError"
	ExceptionAgentTimeout      = "AgentTimeoutError"
	ExceptionAgentExit         = "NonZeroAgentExitCodeError"
	// ExceptionAgentOOM is gauntlet's own (Harbor has none): the kernel
	// killed the agent for exceeding its memory limit; an agent error.
	ExceptionAgentOOM        = "AgentOutOfMemoryError"
	ExceptionVerifierTimeout = "VerifierTimeoutError"
	ExceptionRewardMissing   = "RewardFileNotFoundError"
	ExceptionRewardEmpty     = "RewardFileEmptyError"
	ExceptionRewardMalformed = "VerifierOutputParseError"
	// The agent's model failed it (gauntlet's names; Harbor has none): the
	// provider refused the key, stayed unavailable after retries, or the
	// attempt's model budget ran out. All are the agent's errors.
	ExceptionModelAuth        = "ModelAuthError"
	ExceptionModelUnavailable = "ModelUnavailableError"
	ExceptionModelBudget      = "ModelBudgetExceededError"
	// ExceptionJudgeAuth is gauntlet's own: the verifier produced no
	// reward and its LLM judge's provider refused the judge's key. The
	// platform's error, not the agent's, and final: another attempt (a
	// whole new agent run) would be refused the same way.
	ExceptionJudgeAuth = "JudgeModelAuthError"
	// ExceptionJudgeFailed is gauntlet's own: the verifier produced no
	// reward and its LLM judge's latest model call had failed (the
	// provider unavailable, rate limits, a gateway fault). The platform's
	// error, retried.
	ExceptionJudgeFailed = "JudgeModelError"
	// ExceptionPlatform is gauntlet's own: the attempt left no result
	// because the platform failed it (its sandbox never started, was lost
	// or ran out of space); the message says how.
	ExceptionPlatform = "PlatformError"
)

// AgentPhaseExceptions are the exception types that mean the agent phase
// itself failed: the agent's own error.
var AgentPhaseExceptions = []string{
	ExceptionAgentSetup, ExceptionAgentSetupTimeout, ExceptionAgentTimeout, ExceptionAgentExit, ExceptionAgentOOM,
	ExceptionModelAuth, ExceptionModelUnavailable, ExceptionModelBudget,
}

// JudgeExceptions are the exception types that mean the LLM judge failed.
var JudgeExceptions = []string{ExceptionJudgeAuth, ExceptionJudgeFailed}

// ExceptionInfo describes the exception that ended a trial.
type ExceptionInfo struct {
	ExceptionType      string    `json:"exception_type"`
	ExceptionMessage   string    `json:"exception_message"`
	ExceptionTraceback string    `json:"exception_traceback"`
	OccurredAt         time.Time `json:"occurred_at"`
}

// TimingInfo is the start and end of one trial phase.
type TimingInfo struct {
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// Reward returns the verifier's main reward (MainReward: its "reward"
// entry, its sole entry, else the least of several); false when there is no
// verifier result or it holds no reward.
func (t TrialResult) Reward() (float64, bool) {
	if t.VerifierResult == nil {
		return 0, false
	}
	return MainReward(t.VerifierResult.Rewards)
}

// Duration is FinishedAt − StartedAt, or false when either is missing.
func (ti *TimingInfo) Duration() (time.Duration, bool) {
	if ti == nil || ti.StartedAt == nil || ti.FinishedAt == nil {
		return 0, false
	}
	return ti.FinishedAt.Sub(*ti.StartedAt), true
}

// ReadTrialResult reads and decodes the result.json at path.
func ReadTrialResult(path string) (TrialResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return TrialResult{}, fmt.Errorf("read trial result: %w", err)
	}
	defer f.Close()
	tr, err := DecodeTrialResult(f)
	if err != nil {
		return TrialResult{}, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}

// DecodeTrialResult decodes one result.json document of at most
// MaxTrialResultBytes. task_name, trial_name and agent_info.name are
// required; decode errors say the line, column and field.
func DecodeTrialResult(r io.Reader) (TrialResult, error) {
	data, err := ReadLimited(r, MaxTrialResultBytes, "trial result")
	if err != nil {
		return TrialResult{}, err
	}
	return parseTrialResult(data)
}

// parseTrialResult decodes and checks one result.json document.
func parseTrialResult(data []byte) (TrialResult, error) {
	var tr TrialResult
	if err := decodeJSON(data, &tr); err != nil {
		return TrialResult{}, fmt.Errorf("decode trial result: %w", err)
	}
	if err := tr.validate(false); err != nil {
		return TrialResult{}, err
	}
	return tr, nil
}

// WriteTrialResult writes tr to path atomically (temporary file + rename),
// indented as Harbor writes it. id must be a UUID; derive it from stable inputs.
func WriteTrialResult(path string, tr TrialResult) error {
	if err := tr.validate(true); err != nil {
		return err
	}
	data, err := json.MarshalIndent(tr, "", "    ")
	if err != nil {
		return fmt.Errorf("encode trial result: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".result-*.json")
	if err != nil {
		return fmt.Errorf("write trial result: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write trial result: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write trial result: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write trial result: %w", err)
	}
	return nil
}

func (t TrialResult) validate(writing bool) error {
	var errs []error
	missing := func(field string) { errs = append(errs, fmt.Errorf("trial result: %s is required", field)) }
	if t.TaskName == "" {
		missing("task_name")
	}
	if t.TrialName == "" {
		missing("trial_name")
	}
	if t.AgentInfo.Name == "" {
		missing("agent_info.name")
	}
	if writing {
		// Harbor's TrialResult requires these; a reader accepts files
		// without them (gauntlet wrote config: null before 2026-12).
		if _, err := uuid.Parse(t.ID); err != nil {
			errs = append(errs, fmt.Errorf("trial result: id must be a UUID, got %q", t.ID))
		}
		if t.TaskID == nil {
			missing("task_id")
		}
		if err := checkConfig(t.Config); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkConfig checks a result's trial config as Harbor would on reading it:
// present, an object, and valid in the fields TrialConfig models (Harbor's
// defaults apply to absent ones).
func checkConfig(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return errors.New("trial result: config is required (Harbor's TrialConfig)")
	}
	c := TrialConfig{TimeoutMultiplier: 1}
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("trial result: config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("trial result: %w", err)
	}
	return nil
}

// Wire shapes: identical to the public types except that timestamps accept
// Python's isoformat (Harbor writes naive local times without a zone).

// trialResultFields is TrialResult without its JSON methods; it encodes
// exactly as Harbor's TrialResult, since pyTime writes what time.Time does.
type trialResultFields TrialResult

// trialResultWire reads a result.json: the top-level timestamps shadow the
// embedded ones so that they accept Python's isoformat.
type trialResultWire struct {
	trialResultFields
	StartedAt  *pyTime `json:"started_at"`
	FinishedAt *pyTime `json:"finished_at"`
}

var trialResultKeys = jsonKeys(TrialResult{})

// stepResultsKey is TrialResult.StepResults's key.
const stepResultsKey = "step_results"

// MarshalJSON writes Harbor's field names; nil pointers become null as in
// Harbor's own output, and Extra keys follow in sorted order.
func (t TrialResult) MarshalJSON() ([]byte, error) {
	data, err := json.Marshal(trialResultFields(t))
	if err != nil || len(t.Extra) == 0 {
		return data, err
	}
	var buf bytes.Buffer
	buf.Write(data[:len(data)-1])
	for _, k := range sortedKeys(t.Extra) {
		if _, known := trialResultKeys[k]; known && (k != stepResultsKey || t.StepResults != nil) {
			continue
		}
		key, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(key)
		buf.WriteByte(':')
		v := t.Extra[k]
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads Harbor's shape and keeps unknown top-level keys in Extra.
func (t *TrialResult) UnmarshalJSON(data []byte) error {
	var w trialResultWire
	err := json.Unmarshal(data, &w)
	if err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err = json.Unmarshal(data, &all); err != nil {
		return err
	}
	*t = TrialResult(w.trialResultFields)
	t.StartedAt, t.FinishedAt = fromPy(w.StartedAt), fromPy(w.FinishedAt)
	if t.Config, err = compactJSON(w.Config); err != nil {
		return err
	}
	if t.AgentResult != nil {
		if t.AgentResult.RolloutDetails, err = compactJSON(t.AgentResult.RolloutDetails); err != nil {
			return err
		}
	}
	for k, v := range all {
		// A single-step result Harbor wrote says "step_results": null;
		// kept as written (StepResults omits an empty list).
		if _, known := trialResultKeys[k]; known && (k != stepResultsKey || t.StepResults != nil) {
			continue
		}
		if t.Extra == nil {
			t.Extra = map[string]json.RawMessage{}
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return err
		}
		t.Extra[k] = buf.Bytes()
	}
	return nil
}

// compactJSON canonicalises a verbatim JSON value: null becomes nil, anything
// else loses insignificant white space, so a re-indented file reads the same.
func compactJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type taskIDWire struct {
	GitURL      *string `json:"git_url,omitempty"`
	GitCommitID *string `json:"git_commit_id,omitempty"`
	Path        string  `json:"path"`
	Org         string  `json:"org"`
	Name        string  `json:"name"`
	Ref         *string `json:"ref"`
}

// packageTaskIDWire always writes ref, null when unknown, as Harbor does.
type packageTaskIDWire struct {
	Org  string  `json:"org"`
	Name string  `json:"name"`
	Ref  *string `json:"ref"`
}

// gitTaskIDWire always writes git_commit_id, null when unknown, as Harbor does.
type gitTaskIDWire struct {
	GitURL      string  `json:"git_url"`
	GitCommitID *string `json:"git_commit_id"`
	Path        string  `json:"path"`
}

// MarshalJSON writes PackageTaskId, GitTaskId or LocalTaskId.
func (id TaskID) MarshalJSON() ([]byte, error) {
	if id.Name != "" {
		w := packageTaskIDWire{Org: id.Org, Name: id.Name}
		if id.Ref != "" {
			w.Ref = &id.Ref
		}
		return json.Marshal(w)
	}
	if id.GitURL == "" {
		return json.Marshal(struct {
			Path string `json:"path"`
		}{id.Path})
	}
	w := gitTaskIDWire{GitURL: id.GitURL, Path: id.Path}
	if id.GitCommitID != "" {
		w.GitCommitID = &id.GitCommitID
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads PackageTaskId, GitTaskId or LocalTaskId.
func (id *TaskID) UnmarshalJSON(data []byte) error {
	var w taskIDWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*id = TaskID{Path: w.Path, Org: w.Org, Name: w.Name}
	if w.Ref != nil {
		id.Ref = *w.Ref
	}
	if w.GitURL != nil {
		id.GitURL = *w.GitURL
	}
	if w.GitCommitID != nil {
		id.GitCommitID = *w.GitCommitID
	}
	return nil
}

// UnmarshalJSON drops null reward values.
func (v *VerifierResult) UnmarshalJSON(data []byte) error {
	var w struct {
		Rewards map[string]*float64 `json:"rewards"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*v = VerifierResult{}
	if w.Rewards == nil {
		return nil
	}
	v.Rewards = make(map[string]float64, len(w.Rewards))
	for k, r := range w.Rewards {
		if r != nil {
			v.Rewards[k] = *r
		}
	}
	return nil
}

type exceptionInfoWire struct {
	ExceptionType      string `json:"exception_type"`
	ExceptionMessage   string `json:"exception_message"`
	ExceptionTraceback string `json:"exception_traceback"`
	OccurredAt         pyTime `json:"occurred_at"`
}

// MarshalJSON writes Harbor's ExceptionInfo.
func (e ExceptionInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(exceptionInfoWire{e.ExceptionType, e.ExceptionMessage, e.ExceptionTraceback, pyTime(e.OccurredAt)})
}

// UnmarshalJSON reads Harbor's ExceptionInfo.
func (e *ExceptionInfo) UnmarshalJSON(data []byte) error {
	var w exceptionInfoWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*e = ExceptionInfo{w.ExceptionType, w.ExceptionMessage, w.ExceptionTraceback, time.Time(w.OccurredAt)}
	return nil
}

type timingInfoWire struct {
	StartedAt  *pyTime `json:"started_at"`
	FinishedAt *pyTime `json:"finished_at"`
}

// MarshalJSON writes Harbor's TimingInfo.
func (ti TimingInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(timingInfoWire{toPy(ti.StartedAt), toPy(ti.FinishedAt)})
}

// UnmarshalJSON reads Harbor's TimingInfo.
func (ti *TimingInfo) UnmarshalJSON(data []byte) error {
	var w timingInfoWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*ti = TimingInfo{fromPy(w.StartedAt), fromPy(w.FinishedAt)}
	return nil
}

// pyTime is a timestamp that reads Python's datetime.isoformat(), with or
// without a UTC offset (a naive time is taken as UTC), and writes RFC 3339,
// which Python and pydantic read back.
type pyTime time.Time

var naiveLayouts = []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"}

func (p pyTime) MarshalJSON() ([]byte, error) { return time.Time(p).MarshalJSON() }

func (p *pyTime) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("timestamp must be a string: %w", err)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			*p = pyTime(t)
			return nil
		}
	}
	for _, layout := range naiveLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			*p = pyTime(t)
			return nil
		}
	}
	return fmt.Errorf("invalid timestamp %q: want ISO 8601", s)
}

func toPy(t *time.Time) *pyTime {
	if t == nil {
		return nil
	}
	p := pyTime(*t)
	return &p
}

func fromPy(p *pyTime) *time.Time {
	if p == nil {
		return nil
	}
	t := time.Time(*p)
	return &t
}

// jsonKeys lists the JSON names of a struct type's fields, skipping those
// tagged "-".
func jsonKeys(v any) map[string]struct{} {
	rt := reflect.TypeOf(v)
	keys := make(map[string]struct{}, rt.NumField())
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "-" {
			keys[name] = struct{}{}
		}
	}
	return keys
}

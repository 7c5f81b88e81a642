package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	runpkg "github.com/gauntlet-bench/gauntlet/pkg/run"
)

// trialNamespace derives result ids: the same launch always gets the same id.
var trialNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://gauntlet-bench.dev/trial"))

// ResultExtraKey is the result.json key under which the runner records what
// Harbor's shape has no field for (slot identity, isolation, exit codes).
const ResultExtraKey = runpkg.ResultExtraKey

// ResultExtra is the value under ResultExtraKey.
type ResultExtra struct {
	LaunchID   string         `json:"launch_id,omitempty"`
	RunID      string         `json:"run_id,omitempty"`
	SlotID     string         `json:"slot_id,omitempty"`
	Generation int            `json:"generation"`
	Isolation  string         `json:"isolation"`
	ExitCodes  map[string]int `json:"exit_codes"`
	// Judge is the LLM judge's model use (the verifier's gateway), apart
	// from the agent's usage in agent_result.
	Judge *runpkg.JudgeUsage `json:"judge,omitempty"`
	// Limits are what the sandbox enforced and what it did not.
	Limits []string `json:"limits,omitempty"`
}

// noteLimit records what the sandbox enforces (or does not), once.
func (t *trial) noteLimit(note string) {
	if !slices.Contains(t.limitNotes, note) {
		t.limitNotes = append(t.limitNotes, note)
	}
}

// readReward reads the verifier's reward, refusing reward files that are not
// regular files (a symlink could make the runner read any host file).
func readReward(dir string) (harbor.Reward, error) {
	for _, name := range []string{harbor.RewardJSONFile, harbor.RewardTextFile} {
		info, err := os.Lstat(filepath.Join(dir, name))
		if err == nil && !info.Mode().IsRegular() {
			return harbor.Reward{}, fmt.Errorf("%w: %s is not a regular file", harbor.ErrRewardMalformed, name)
		}
	}
	return harbor.ReadReward(dir)
}

func rewardExceptionType(err error) string {
	switch {
	case errors.Is(err, harbor.ErrRewardMissing):
		return harbor.ExceptionRewardMissing
	case errors.Is(err, harbor.ErrRewardEmpty):
		return harbor.ExceptionRewardEmpty
	}
	return harbor.ExceptionRewardMalformed
}

// stripDir shortens host paths in a message to paths relative to dir's parent
// (logs/verifier/reward.txt → verifier/reward.txt), as the artifacts name them.
func stripDir(err error, dir string) string {
	return strings.ReplaceAll(err.Error(), filepath.Dir(dir)+string(filepath.Separator), "")
}

// finish collects artifacts and writes (and uploads) result.json.
func (t *trial) finish(ctx context.Context) (harbor.TrialResult, error) {
	t.imageSandbox().keepDiff()
	parts := map[string]string{"agent": t.host.AgentLogs, "verifier": t.host.VerifierLogs}
	if t.host.Artifacts != "" {
		parts["artifacts"] = t.host.Artifacts
	}
	maps.Copy(parts, t.steps.artifactParts()) // steps/<name>/{agent,verifier}
	if t.declared != "" {
		parts[DeclaredArtifactsDir] = t.declared
	}
	for part, src := range parts {
		skipped, err := copyTree(src, filepath.Join(t.out, ArtifactsDir, part), copyOptions{budget: maxArtifactBytes, redact: t.redact})
		if err != nil {
			return harbor.TrialResult{}, fmt.Errorf("collect artifacts: %w", err)
		}
		for _, s := range skipped {
			t.log.Warn("artifact not collected", "file", part+"/"+s)
		}
	}
	tr, err := t.result()
	if err != nil {
		return harbor.TrialResult{}, err
	}
	t.log.Info("trial finished", "exception", exceptionType(tr.ExceptionInfo), "has_reward", tr.VerifierResult != nil,
		"duration", tr.FinishedAt.Sub(*tr.StartedAt).Round(time.Millisecond).String())
	t.closeLog()
	if err := t.redact.file(filepath.Join(t.out, ArtifactsDir, RunnerLogFile)); err != nil {
		return harbor.TrialResult{}, err
	}
	if err := harbor.WriteTrialResult(filepath.Join(t.out, harbor.TrialResultFile), tr); err != nil {
		return harbor.TrialResult{}, err
	}
	if err := upload(ctx, t.httpClient(), t.spec.Output, t.out, t.work); err != nil {
		return tr, err
	}
	return tr, nil
}

// result builds result.json in Harbor's TrialResult shape.
func (t *trial) result() (harbor.TrialResult, error) {
	finished := time.Now().UTC()
	trialName := t.trialName()
	extra, err := json.Marshal(ResultExtra{
		LaunchID: t.spec.LaunchID, RunID: t.spec.RunID, SlotID: t.spec.SlotID, Generation: t.spec.Generation,
		Isolation: t.iso.name(), ExitCodes: t.exitCodes, Judge: t.judge, Limits: t.limitNotes,
	})
	if err != nil {
		return harbor.TrialResult{}, fmt.Errorf("encode result extra: %w", err)
	}
	taskID, config := t.trialConfig(trialName)
	rawConfig, err := config.Raw()
	if err != nil {
		return harbor.TrialResult{}, err
	}
	tr := harbor.TrialResult{
		ID:               uuid.NewSHA1(trialNamespace, []byte(t.spec.LaunchID+"\x00"+trialName)).String(),
		TaskName:         t.task.Name,
		TrialName:        trialName,
		TrialURI:         "file://" + t.out,
		TaskID:           &taskID,
		Config:           rawConfig,
		AgentInfo:        harbor.AgentInfo{Name: t.harness.Name, Version: t.harness.Version, ModelInfo: modelInfo(t.spec.Model)},
		AgentResult:      t.agentResult(),
		ExceptionInfo:    t.exceptionInfo(),
		StartedAt:        &t.startedAt,
		FinishedAt:       &finished,
		EnvironmentSetup: t.timings["environment_setup"],
		AgentSetup:       t.timings["agent_setup"],
		AgentExecution:   t.timings["agent_execution"],
		Verifier:         t.timings["verifier"],
		Extra:            map[string]json.RawMessage{ResultExtraKey: extra},
	}
	if src := t.spec.Trial.Source; src != "" {
		tr.Source = &src
	}
	if digest, err := harbor.TaskDigest(t.task.Dir); err == nil {
		tr.TaskChecksum = digest
	} else {
		t.log.Warn("task checksum not computed", "err", err)
	}
	if t.reward != nil {
		tr.VerifierResult = &harbor.VerifierResult{Rewards: t.reward.Values}
	}
	t.steps.fill(&tr)
	return tr, nil
}

// trialName is the slot's Harbor trial name (run.TrialName), or the task
// name and generation when the spec names no slot (a trial run by hand).
func (t *trial) trialName() string {
	if t.spec.SlotID == "" {
		return benchmark.TaskSegment(t.task.Name) + "__g" + strconv.Itoa(t.spec.Generation)
	}
	return runpkg.TrialName(t.spec.SlotID, t.spec.Generation)
}

// trialConfig describes what ran as Harbor's TrialConfig, and the task id
// that goes with it: a git task where the task's files came from a git
// repository, else the directory the runner read it from. Secrets appear by
// name only (as "${NAME}"), never by value.
func (t *trial) trialConfig(trialName string) (harbor.TaskID, harbor.TrialConfig) {
	info := t.spec.Trial
	task := harbor.TrialTask{Path: t.task.Dir, Source: info.Source}
	id := harbor.TaskID{Path: t.task.Dir}
	switch {
	case info.TaskContentHash != "" && strings.Contains(t.spec.Task.Name, "/"):
		// A package task: Harbor names it org/name (the manifest's task
		// name), pinned by its content hash.
		org, name, _ := strings.Cut(t.spec.Task.Name, "/")
		task = harbor.TrialTask{Name: t.spec.Task.Name, Ref: info.TaskContentHash, Source: info.Source}
		id = harbor.TaskID{Org: org, Name: name, Ref: info.TaskContentHash}
	case info.TaskGitURL != "":
		task = harbor.TrialTask{Path: info.TaskPath, GitURL: info.TaskGitURL, GitCommitID: info.TaskGitCommitID, Source: info.Source}
		id = harbor.TaskID{GitURL: info.TaskGitURL, GitCommitID: info.TaskGitCommitID, Path: info.TaskPath}
		if task.Path == "" {
			task.Path, id.Path = t.task.Name, t.task.Name
		}
	}
	mult := info.TimeoutMultiplier
	if mult <= 0 {
		mult = 1
	}
	c := harbor.TrialConfig{
		Task:              task,
		TrialName:         trialName,
		TimeoutMultiplier: mult,
		Agent: harbor.TrialAgent{Name: t.harness.Name, ModelName: t.spec.Model,
			Env: harbor.ConfigEnv(t.spec.Env, slices.Sorted(maps.Keys(t.spec.Secrets)))},
		// Gauntlet's sandbox is none of Harbor's environment types: the
		// import path names it (and the isolation it ran with) instead.
		Environment: harbor.TrialEnvironment{ImportPath: runpkg.HarborSandboxImportPath, Kwargs: map[string]any{"isolation": t.iso.name()}},
		Verifier:    harbor.TrialVerifier{Env: harbor.ConfigEnv(t.spec.VerifierEnv, slices.Sorted(maps.Keys(t.spec.VerifierSecrets)))},
	}
	if t.spec.Command != "" {
		c.Agent.Kwargs = map[string]any{"command": t.spec.Command}
	}
	if t.spec.RunID != "" {
		c.JobID = runpkg.HarborJobID(t.spec.RunID)
	}
	return id, c
}

func (t *trial) agentResult() *harbor.AgentResult {
	if _, ran := t.timings["agent_execution"]; !ran {
		return nil
	}
	ar := &harbor.AgentResult{}
	if u := t.usage; u != nil {
		in, cache, out := int(u.InputTokens), int(u.CacheTokens), int(u.OutputTokens)
		ar.NInputTokens, ar.NCacheTokens, ar.NOutputTokens = &in, &cache, &out
		if u.CostReported {
			cost := u.CostUSD
			ar.CostUSD = &cost
		}
	}
	if t.gateway != nil || t.programUsage != nil {
		ar.Metadata = map[string]any{}
		if g := t.gateway; g != nil {
			// The gateway metered these tokens; its cost is estimated from
			// list prices unless the provider reported one.
			ar.Metadata["model_gateway"] = g
			ar.Metadata["cost_estimated"] = g.CostEstimated
		}
		if p := t.programUsage; p != nil {
			ar.Metadata[programUsageMD] = p
		}
	}
	if t.memory != nil {
		// The attempt was killed for memory: whose processes used it.
		if ar.Metadata == nil {
			ar.Metadata = map[string]any{}
		}
		ar.Metadata["memory"] = t.memory
	}
	return ar
}

// exceptionInfo is the first exception of the trial; later ones are appended
// to its message so none is lost.
func (t *trial) exceptionInfo() *harbor.ExceptionInfo {
	if len(t.exceptions) == 0 {
		return nil
	}
	first := t.exceptions[0]
	for _, e := range t.exceptions[1:] {
		first.ExceptionMessage += "; then " + e.ExceptionType + ": " + e.ExceptionMessage
	}
	return &first
}

func exceptionType(e *harbor.ExceptionInfo) string {
	if e == nil {
		return ""
	}
	return e.ExceptionType
}

// modelInfo splits "provider/name"; a model without a provider keeps its name.
func modelInfo(model string) *harbor.ModelInfo {
	if model == "" {
		return nil
	}
	if provider, name, ok := strings.Cut(model, "/"); ok {
		return &harbor.ModelInfo{Name: name, Provider: provider}
	}
	return &harbor.ModelInfo{Name: model}
}

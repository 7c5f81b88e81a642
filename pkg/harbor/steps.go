package harbor

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Multi-step tasks (Harbor 2026-04-22): task.toml's [[steps]] names an
// ordered list of steps, each kept in steps/<name>/ with its own
// instruction.md, tests/, solution/ and workdir/. The steps run one after
// another in one environment; each step's verifier gives it a reward, and
// multi_step_reward_strategy derives the trial's reward from them.

// StepsDir is the directory of a multi-step task's steps.
const StepsDir = "steps"

// TrialStepsDir is the directory of a multi-step trial's per-step
// outputs in its trial directory: steps/<name>/{agent,verifier,artifacts}.
const TrialStepsDir = "steps"

// Files of a step directory, relative to steps/<name>/.
const (
	StepWorkdirDir  = "workdir"
	StepSetupScript = "workdir/setup.sh"
)

// Strategies of multi_step_reward_strategy.
const (
	// StrategyMean is the per-key mean over the steps that produced a
	// verifier result (a key a step lacks counts 0). Harbor's default.
	StrategyMean = "mean"
	// StrategyFinal is the last step that ran's verifier result, verbatim.
	StrategyFinal = "final"
)

// StepConfig is one [[steps]] entry of task.toml. Unset fields fall back to
// the task's [agent] and [verifier] (EffectiveAgent, EffectiveVerifier).
type StepConfig struct {
	Name string
	// AgentTimeoutSec and VerifierTimeoutSec are nil when the step sets none.
	AgentTimeoutSec    *float64
	VerifierTimeoutSec *float64
	AgentUser          string
	VerifierUser       string
	// AgentNetworkMode and VerifierNetworkMode override the task's phase
	// network modes for this step ("" = inherit).
	AgentNetworkMode, VerifierNetworkMode   string
	AgentAllowedHosts, VerifierAllowedHosts []string
	// VerifierEnv is added to the task's [verifier].env for this step's
	// verifier (the step's value wins).
	VerifierEnv map[string]string
	// MinReward is the threshold each named reward key must reach for the
	// remaining steps to run; a scalar min_reward gates on "reward". Nil
	// when the step sets none.
	MinReward map[string]float64
	// Healthcheck runs after the step's setup.sh and before its agent, on
	// top of [environment.healthcheck]; nil when the step has none.
	Healthcheck *HealthcheckConfig
	// Artifacts are collected after the step's agent into the step's own
	// directory, with the task's and the trial's.
	Artifacts []Artifact
	// VerifierCollect are the step's own collect hooks, run after the
	// task's in the step's collection pass.
	VerifierCollect []CollectHook
}

// steps reads [[steps]] and multi_step_reward_strategy, recording every
// invalid field and every step key gauntlet does not run.
func (r *fieldReader) steps(doc map[string]any) ([]StepConfig, string) {
	strategy := ""
	if s, ok := r.str(doc, "", "multi_step_reward_strategy"); ok {
		if s != StrategyMean && s != StrategyFinal {
			r.fail("multi_step_reward_strategy", "must be %q or %q, got %q", StrategyMean, StrategyFinal, s)
		}
		strategy = s
	}
	v, ok := doc["steps"]
	if !ok || v == nil {
		return nil, strategy
	}
	var list []map[string]any
	switch a := v.(type) {
	case []map[string]any:
		list = a
	case []any:
		for i, item := range a {
			m, ok := item.(map[string]any)
			if !ok {
				r.fail(fmt.Sprintf("steps[%d]", i), "must be a table with a name, got %s", tomlType(item))
				continue
			}
			list = append(list, m)
		}
	default:
		r.fail("steps", "must be an array of tables ([[steps]]), got %s", tomlType(v))
		return nil, strategy
	}
	if len(list) > 0 && strategy == "" {
		strategy = StrategyMean // Harbor's default for a multi-step task
	}
	seen := map[string]bool{}
	steps := make([]StepConfig, 0, len(list))
	for i, m := range list {
		p := fmt.Sprintf("steps[%d]", i)
		s := StepConfig{}
		name, present := r.str(m, p, "name")
		switch {
		case !present:
			if _, has := m["name"]; !has {
				r.fail(p+".name", "is required")
			}
		case !validStepName(name):
			r.fail(p+".name", "%q is not a directory name under steps/ (no '/', not empty, '.' or '..')", name)
		case seen[name]:
			r.fail(p+".name", "%q is used by an earlier step; step names must be unique", name)
		}
		seen[name] = true
		s.Name = name
		a := r.table(m, p, "agent")
		if t, ok := r.positive(a, p+".agent", "timeout_sec"); ok {
			s.AgentTimeoutSec = &t
		}
		s.AgentUser = r.user(a, p+".agent")
		s.AgentNetworkMode, s.AgentAllowedHosts = r.networkPolicy(a, p+".agent", "")
		vt := r.table(m, p, "verifier")
		if t, ok := r.positive(vt, p+".verifier", "timeout_sec"); ok {
			s.VerifierTimeoutSec = &t
		}
		s.VerifierUser = r.user(vt, p+".verifier")
		s.VerifierEnv = r.envMap(vt, p+".verifier", "env")
		s.VerifierCollect = r.collectHooks(vt, p+".verifier")
		s.VerifierNetworkMode, s.VerifierAllowedHosts = r.networkPolicy(vt, p+".verifier", "")
		s.MinReward = r.minReward(m, p)
		s.Healthcheck = r.healthcheck(m, p)
		s.Artifacts = r.artifacts(m, p)
		steps = append(steps, s)
	}
	return steps, strategy
}

// unsupportedStepKeys lists what a step uses that gauntlet does not run
// yet, naming the key (e.g. `steps[1].verifier.environment_mode`).
func (r *fieldReader) unsupportedStepKeys(doc map[string]any) []string {
	list, _ := doc["steps"].([]map[string]any)
	var out []string
	for i, m := range list {
		p := fmt.Sprintf("steps[%d]", i)
		if name, ok := m["name"].(string); ok && name != "" {
			p = fmt.Sprintf("steps[%d] (%s)", i, name)
		}
		v, _ := m["verifier"].(map[string]any)
		mode, hasMode := v["environment_mode"].(string)
		switch {
		case hasMode && mode != "shared" && mode != "separate":
			r.fail(fmt.Sprintf("steps[%d].verifier.environment_mode", i), "must be %q or %q, got %q", "shared", "separate", mode)
		case mode == "separate":
			out = append(out, p+`.verifier.environment_mode = "separate" (a separate verifier environment for a step)`)
		case v["environment"] != nil:
			out = append(out, p+".verifier.environment (a separate verifier environment for a step)")
		}
	}
	return out
}

// minReward reads min_reward: a number (gates on "reward") or a table of
// per-key numbers.
func (r *fieldReader) minReward(m map[string]any, prefix string) map[string]float64 {
	v, ok := m["min_reward"]
	if !ok {
		return nil
	}
	field := prefix + ".min_reward"
	if f, ok := tomlFloat(v); ok {
		if math.IsNaN(f) {
			r.fail(field, "must be a number, got NaN")
			return nil
		}
		return map[string]float64{RewardKey: f}
	}
	t, ok := v.(map[string]any)
	if !ok {
		r.fail(field, "must be a number or a table of reward key = number, got %s", tomlType(v))
		return nil
	}
	out := make(map[string]float64, len(t))
	for _, k := range sortedKeys(t) {
		f, ok := tomlFloat(t[k])
		if !ok || math.IsNaN(f) {
			r.fail(field+"."+k, "must be a number, got %s", tomlType(t[k]))
			continue
		}
		out[k] = f
	}
	return out
}

func tomlFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func validStepName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

// Step is one loaded step of a multi-step task.
type Step struct {
	Config StepConfig
	// Instruction is steps/<name>/instruction.md.
	Instruction string
	// Dir is steps/<name>/ in the task directory.
	Dir string
	// HasTests and HasSolution report steps/<name>/tests/test.sh and
	// steps/<name>/solution/solve.sh; HasWorkdir steps/<name>/workdir/.
	HasTests, HasSolution, HasWorkdir bool
}

// TestsDir is the step's own tests/ (may be missing: the task's tests/test.sh serves).
func (s Step) TestsDir() string { return filepath.Join(s.Dir, TestsDir) }

// SolutionDir is the step's own solution/ (may be missing).
func (s Step) SolutionDir() string { return filepath.Join(s.Dir, "solution") }

// WorkdirDir is the step's workdir/, uploaded into the environment's
// working directory before the step's agent (may be missing).
func (s Step) WorkdirDir() string { return filepath.Join(s.Dir, StepWorkdirDir) }

// HasSetup reports whether the step has workdir/setup.sh, run before its agent.
func (s Step) HasSetup() bool {
	return isRegular(filepath.Join(s.Dir, filepath.FromSlash(StepSetupScript)))
}

// loadSteps reads steps/<name>/ for every [[steps]] entry. A declared
// step without its directory or instruction, a step with no test script of
// its own nor the task's, and a directory under steps/ that task.toml does
// not declare are errors naming the task, the file and the field.
func loadSteps(dir, taskName string, cfg TaskConfig) ([]Step, error) {
	stepsDir := filepath.Join(dir, StepsDir)
	if len(cfg.Steps) == 0 {
		if isDir(stepsDir) {
			return nil, fmt.Errorf("%w: task %s: %s exists but %s declares no [[steps]]: declare each step (name = \"<dir>\") or remove the directory", ErrTaskIncomplete, taskName, stepsDir, TaskConfigFile)
		}
		return nil, nil
	}
	var errs []error
	declared := map[string]bool{}
	steps := make([]Step, 0, len(cfg.Steps))
	sharedTest := isRegular(filepath.Join(dir, TestScript))
	for i, sc := range cfg.Steps {
		declared[sc.Name] = true
		s := Step{Config: sc, Dir: filepath.Join(stepsDir, sc.Name)}
		field := fmt.Sprintf("steps[%d].name", i)
		if !isDir(s.Dir) {
			errs = append(errs, fmt.Errorf("%w: task %s: %s: %s = %q has no directory %s", ErrTaskIncomplete, taskName, TaskConfigFile, field, sc.Name, s.Dir))
			continue
		}
		path := filepath.Join(s.Dir, InstructionFile)
		data, err := ReadFileLimited(path, MaxInstructionBytes)
		switch {
		case errors.Is(err, os.ErrNotExist):
			errs = append(errs, fmt.Errorf("%w: task %s: %s: %s = %q: %s is missing", ErrTaskIncomplete, taskName, TaskConfigFile, field, sc.Name, path))
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("task %s: read %s: %w", taskName, path, err))
			continue
		}
		s.Instruction = string(data)
		s.HasTests = isRegular(filepath.Join(s.Dir, TestScript))
		s.HasSolution = isRegular(filepath.Join(s.Dir, SolutionScript))
		s.HasWorkdir = isDir(s.WorkdirDir())
		if !s.HasTests && !sharedTest {
			errs = append(errs, fmt.Errorf("%w: task %s: %s: %s = %q has no test script: want %s or %s", ErrTaskIncomplete, taskName, TaskConfigFile, field, sc.Name,
				filepath.Join(s.Dir, TestScript), filepath.Join(dir, TestScript)))
		}
		steps = append(steps, s)
	}
	entries, err := os.ReadDir(stepsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("task %s: read %s: %w", taskName, stepsDir, err))
	}
	for _, e := range entries {
		if e.IsDir() && !declared[e.Name()] {
			errs = append(errs, fmt.Errorf("%w: task %s: %s is not a step of %s: add [[steps]] name = %q or remove the directory", ErrTaskIncomplete, taskName,
				filepath.Join(stepsDir, e.Name()), TaskConfigFile, e.Name()))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return steps, nil
}

// StepAgentTimeout is a step's agent time limit: its own, else the task's; 0 = none.
func (c TaskConfig) StepAgentTimeout(s StepConfig) time.Duration {
	if s.AgentTimeoutSec != nil {
		return seconds(*s.AgentTimeoutSec)
	}
	return c.AgentTimeout()
}

// StepVerifierTimeout is a step's verifier time limit: its own, else the task's.
func (c TaskConfig) StepVerifierTimeout(s StepConfig) time.Duration {
	if s.VerifierTimeoutSec != nil {
		return seconds(*s.VerifierTimeoutSec)
	}
	return c.VerifierTimeout()
}

// ForStep is the task as one of its steps runs it: the step's instruction,
// and [agent] and [verifier] with the step's overrides applied (timeouts,
// users, network modes; the step's verifier env added to the task's).
func (t Task) ForStep(s Step) Task {
	st := t
	st.Instruction = s.Instruction
	cfg := t.Config
	if s.Config.AgentTimeoutSec != nil {
		v := *s.Config.AgentTimeoutSec
		cfg.Agent.TimeoutSec = &v
	}
	if s.Config.VerifierTimeoutSec != nil {
		cfg.Verifier.TimeoutSec = *s.Config.VerifierTimeoutSec
	}
	if s.Config.AgentUser != "" {
		cfg.Agent.User = s.Config.AgentUser
	}
	if s.Config.VerifierUser != "" {
		cfg.Verifier.User = s.Config.VerifierUser
	}
	if s.Config.AgentNetworkMode != "" {
		cfg.Agent.NetworkMode, cfg.Agent.AllowedHosts = s.Config.AgentNetworkMode, s.Config.AgentAllowedHosts
	}
	if s.Config.VerifierNetworkMode != "" {
		cfg.Verifier.NetworkMode, cfg.Verifier.AllowedHosts = s.Config.VerifierNetworkMode, s.Config.VerifierAllowedHosts
	}
	env := make(map[string]string, len(cfg.Verifier.Env)+len(s.Config.VerifierEnv))
	for k, v := range cfg.Verifier.Env {
		env[k] = v
	}
	for k, v := range s.Config.VerifierEnv {
		env[k] = v
	}
	cfg.Verifier.Env = env
	st.Config = cfg
	st.HasSolution = s.HasSolution || t.HasSolution
	return st
}

// StepNames lists the task's step names in order (nil for a single-step task).
func (c TaskConfig) StepNames() []string {
	var out []string
	for _, s := range c.Steps {
		out = append(out, s.Name)
	}
	return out
}

// MinRewardFailure says why rewards do not meet min (a key below its
// threshold, or missing: -inf, as Harbor reads it), or "" when they do.
func MinRewardFailure(rewards map[string]float64, min map[string]float64) string {
	for _, k := range sortedKeys(min) {
		v, ok := rewards[k]
		if !ok {
			return fmt.Sprintf("%s missing (counts as -inf), below min_reward %g", k, min[k])
		}
		if v < min[k] {
			return fmt.Sprintf("%s=%g below min_reward %g", k, v, min[k])
		}
	}
	return ""
}

// StepRewards derives a multi-step trial's rewards from its steps'
// verifier results (nil = that step produced none), as Harbor does: final
// takes the last step's verbatim; mean (the default) the per-key mean over
// the steps with a result, a key a step lacks counting 0. Nil when there
// is nothing to derive from.
func StepRewards(strategy string, steps []map[string]float64, produced []bool) map[string]float64 {
	if len(steps) == 0 {
		return nil
	}
	if strategy == StrategyFinal {
		if !produced[len(steps)-1] {
			return nil
		}
		return steps[len(steps)-1]
	}
	var valid []map[string]float64
	keys := map[string]bool{}
	for i, r := range steps {
		if !produced[i] {
			continue
		}
		valid = append(valid, r)
		for k := range r {
			keys[k] = true
		}
	}
	if len(valid) == 0 || len(keys) == 0 {
		return nil
	}
	out := make(map[string]float64, len(keys))
	for k := range keys {
		sum := 0.0
		for _, r := range valid {
			sum += r[k]
		}
		out[k] = sum / float64(len(valid))
	}
	return out
}

// multiStep reports whether cfg declares steps.
func (c TaskConfig) multiStep() bool { return len(c.Steps) > 0 }

package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	runpkg "github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// A multi-step task runs its steps in order in the trial's one
// environment, as Harbor's MultiStepTrial does: for each step its
// workdir/ is uploaded into the working directory and its setup.sh run,
// then the agent gets the step's instruction (a fresh session, Harbor's
// default), then the step's verifier runs with the task's tests/ and the
// step's own tests/ uploaded to /tests. The step's reward decides, with its
// min_reward, whether the next step runs; the trial's reward is derived
// from the steps' by multi_step_reward_strategy. Under image isolation the
// pod runs from the first step's setup to the last step's verifier, so
// what a step's agent left running still runs in the next step.

// Names of a step's files the runner writes in /logs/agent.
const (
	stepSetupStdout = "setup-stdout.txt"
	stepSetupStderr = "setup-stderr.txt"
)

// stepsLogDir is where each step's /logs/agent and /logs/verifier are
// moved once it ends: beside the /logs directories on the same
// filesystem (a rename, never a copy a running process could race), in a
// directory no phase mounts.
const stepsLogDir = ".steps"

// stepRun is a multi-step trial's state.
type stepRun struct {
	// logs holds steps/<name>/{agent,verifier} of the steps that ran.
	logs string
	// staged holds steps/<name>/{tests,solution}: the task's tests/ with
	// the step's own over them, and the step's solution (else the task's).
	staged string
	// current is the running step; last reports it is the task's last.
	current string
	last    bool
	// setUp: the harness's install step ran (once per trial, as Harbor
	// sets its agent up once).
	setUp   bool
	results []harbor.StepResult
	// produced[i] reports results[i] has a verifier result.
	produced []bool
	// usage sums the steps' agent usage; judge the steps' judge usage.
	usage         harness.Usage
	anyUsage      bool
	costSeen      bool
	costEstimated bool
	judge         *runpkg.JudgeUsage
	// stoppedBy says why steps were skipped ("" = every step ran).
	stoppedBy string
	// nonRoot: some step's agent or verifier runs as a user other than
	// root (image isolation), so the pod needs its user namespace.
	nonRoot bool
}

// nonRootUser reports whether a step of the trial runs a phase as a user
// other than root (false for a single-step trial: its own users decide).
func (s *stepRun) nonRootUser() bool { return s != nil && s.nonRoot }

// installed reports whether the harness's install step already ran in
// this trial (nil: a single-step trial, where it runs once anyway).
func (s *stepRun) installed() bool { return s != nil && s.setUp }

// podRunsOn reports whether the environment outlives the running step's
// verifier: a step that is not the task's last.
func (s *stepRun) podRunsOn() bool { return s != nil && !s.last }

// takeVerifierLogs moves what the running step's verifier left in dir
// (the pod's /logs/verifier) to the step's own directory, out of the
// pod's reach, and returns that directory for the reward to be read from.
func (s *stepRun) takeVerifierLogs(dir string) (string, error) {
	dst := filepath.Join(s.logs, s.current, "verifier")
	if err := moveEntries(dir, dst); err != nil {
		return "", fmt.Errorf("step %s: keep verifier logs: %w", s.current, err)
	}
	return dst, nil
}

// artifactParts are the steps' log directories, by their artifact path.
func (s *stepRun) artifactParts() map[string]string {
	if s == nil {
		return nil
	}
	parts := map[string]string{}
	for _, r := range s.results {
		for _, part := range []string{"agent", "verifier"} {
			parts["steps/"+r.StepName+"/"+part] = filepath.Join(s.logs, r.StepName, part)
		}
		declared := filepath.Join(s.logs, r.StepName, DeclaredArtifactsDir)
		if info, err := os.Stat(declared); err == nil && info.IsDir() {
			parts["steps/"+r.StepName+"/"+DeclaredArtifactsDir] = declared
		}
	}
	return parts
}

// fill adds the steps to result.json: step_results in Harbor's shape, and
// agent_result the sum of the steps' (Harbor leaves it null and its
// readers sum the steps, which gives the same totals).
func (s *stepRun) fill(tr *harbor.TrialResult) {
	if s == nil {
		return
	}
	tr.StepResults = s.results
	if s.anyUsage {
		in, cache, out := int(s.usage.InputTokens), int(s.usage.CacheTokens), int(s.usage.OutputTokens)
		ar := &harbor.AgentResult{NInputTokens: &in, NCacheTokens: &cache, NOutputTokens: &out}
		if s.costSeen {
			cost := s.usage.CostUSD
			ar.CostUSD = &cost
		}
		ar.Metadata = map[string]any{"cost_estimated": s.costEstimated}
		tr.AgentResult = ar
	}
}

// runSteps runs a multi-step task's steps. Its error means the trial
// could not be run; a step's failures are the step's exceptions.
func (ms multiStep) runSteps(ctx context.Context) error {
	t := ms.t
	base, spec := t.task, t.spec
	logsRoot := filepath.Join(filepath.Dir(t.host.VerifierLogs), stepsLogDir)
	t.steps = &stepRun{logs: logsRoot, staged: filepath.Join(t.work, "steps-task")}
	if err := os.MkdirAll(logsRoot, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", logsRoot, err)
	}
	if err := os.Chmod(logsRoot, 0o700); err != nil {
		return fmt.Errorf("chmod %s: %w", logsRoot, err)
	}
	hostTests, hostSolution, seenTests, seenSolution := t.host.Tests, t.host.Solution, t.seen.Tests, t.seen.Solution
	defer func() {
		t.task, t.spec = base, spec
		t.host.Tests, t.host.Solution, t.seen.Tests, t.seen.Solution = hostTests, hostSolution, seenTests, seenSolution
	}()
	if t.image != nil {
		for _, step := range base.Steps {
			st := base.ForStep(step)
			for _, spec := range []string{cmp.Or(st.Config.Agent.User, t.image.img.User), cmp.Or(st.Config.Verifier.User, t.image.img.User)} {
				u, err := resolveUser(t.image.root(), spec)
				if err != nil {
					return fmt.Errorf("step %s: %w", step.Config.Name, err)
				}
				t.steps.nonRoot = t.steps.nonRoot || !u.root()
			}
		}
	}
	t.log.Info("multi-step task", "steps", strings.Join(base.Config.StepNames(), ","), "reward_strategy", base.Config.MultiStepRewardStrategy)
	var span [2]harbor.TimingInfo // agent_execution, verifier over every step
	for i, step := range base.Steps {
		if reason := ms.budgetSpent(spec); reason != "" {
			t.steps.stoppedBy = reason
			t.except(harbor.ExceptionModelBudget, fmt.Sprintf("steps from %s on did not run: %s", step.Config.Name, reason))
			break
		}
		t.steps.current, t.steps.last = step.Config.Name, i == len(base.Steps)-1
		stopped, err := ms.runStep(ctx, base, spec, step, i)
		if err != nil {
			return err
		}
		widen(&span[0], t.timings["agent_execution"])
		widen(&span[1], t.timings["verifier"])
		if stopped != "" {
			t.steps.stoppedBy = stopped
			if !t.steps.last {
				t.log.Info("remaining steps skipped", "after", step.Config.Name, "reason", stopped)
			}
			break
		}
	}
	// The trial-level timings span the steps' (Harbor leaves them null).
	for i, name := range []string{"agent_execution", "verifier"} {
		if span[i].StartedAt != nil {
			ti := span[i]
			t.timings[name] = &ti
		}
	}
	if err := t.endEnvironment(); err != nil {
		return err
	}
	if err := ms.keepLingeringAgentLogs(); err != nil {
		return err
	}
	ms.finishSteps(base.Config.MultiStepRewardStrategy)
	return nil
}

// keepLingeringAgentLogs builds, in a pod or a container, the native logs
// and trajectory of the agent once nothing of the environment runs any
// more (never while a process of the agent could swap its files), into
// the last step that ran: the agent's home then holds every step's
// session.
func (ms multiStep) keepLingeringAgentLogs() error {
	t := ms.t
	lingers := t.iso.traits().lingers
	if !lingers || (t.harness.Bundle == nil && t.harness.WireAPI == "") || len(t.steps.results) == 0 {
		return nil
	}
	t.rigging().keepAgentLogs(nil)
	name := t.steps.results[len(t.steps.results)-1].StepName
	if err := moveEntries(t.host.AgentLogs, filepath.Join(t.steps.logs, name, "agent")); err != nil {
		return fmt.Errorf("step %s: keep agent logs: %w", name, err)
	}
	return nil
}

// runStep runs one step and reports why the remaining steps must not run
// ("" = they may).
func (ms multiStep) runStep(ctx context.Context, base harbor.Task, spec sandbox.Spec, step harbor.Step, index int) (string, error) {
	t := ms.t
	name := step.Config.Name
	started := len(t.exceptions)
	for _, phase := range []string{"agent_execution", "verifier", "step_setup"} {
		delete(t.timings, phase)
	}
	t.usage, t.programUsage, t.gateway, t.reward, t.judge = nil, nil, nil, nil, nil
	if err := ms.stageStep(base, step); err != nil {
		return "", err
	}
	t.task = base.ForStep(step)
	t.task.Dir = filepath.Join(t.steps.staged, name) // tests/ and solution/ the phases see (container isolation reads them there)
	t.spec = spec
	mult := spec.Trial.TimeoutMultiplier
	if mult <= 0 {
		mult = 1
	}
	if step.Config.AgentTimeoutSec != nil {
		t.spec.AgentTimeout = scaledSeconds(*step.Config.AgentTimeoutSec, mult)
	}
	if step.Config.VerifierTimeoutSec != nil {
		t.spec.VerifierTimeout = scaledSeconds(*step.Config.VerifierTimeoutSec, mult)
	}
	t.spec.MaxTokens, t.spec.MaxCostUSD = ms.remainingBudget(spec)
	t.log.Info("step started", "step", name, "index", index+1, "of", len(base.Steps),
		"agent_timeout", t.spec.AgentTimeout.String(), "verifier_timeout", t.spec.VerifierTimeout.String())
	if err := ms.writeStepInstruction(step.Instruction); err != nil {
		return "", err
	}
	if t.image != nil {
		// The step's agent user writes /logs/agent (a step may name its own).
		u, err := t.imageSandbox().phaseUser(roleAgent)
		if err != nil {
			return "", err
		}
		for _, dir := range []string{t.host.AgentLogs, t.host.Artifacts} {
			if err := os.Chown(dir, int(u.uid), int(u.gid)); err != nil {
				return "", fmt.Errorf("step %s: chown %s: %w", name, dir, err)
			}
		}
	}
	rig, err := t.rigging().prepareRig(ctx)
	if err != nil {
		return "", err
	}
	// The environment comes up once, before the first step's setup.sh
	// (the pod's start uploads that step's files itself).
	podStarts := t.image != nil && t.image.pod == nil
	if err := t.services().startEnvironment(ctx, rig); err != nil {
		t.rigging().closeRig(rig)
		return "", err
	}
	if !podStarts {
		if err := ms.prepareStepFiles(); err != nil {
			t.rigging().closeRig(rig)
			return "", err
		}
	}
	setupFailed, err := ms.stepSetup(ctx, step)
	if err != nil || setupFailed {
		t.rigging().closeRig(rig)
		if err != nil {
			return "", err
		}
		if err := ms.keepStepLogs(name); err != nil {
			return "", err
		}
		ms.recordStep(name, started)
		return "its workdir/setup.sh failed", nil
	}
	// The step's own healthcheck, after its setup.sh and before its agent,
	// on top of [environment.healthcheck] (which passed once, above).
	if hc := step.Config.Healthcheck; hc != nil {
		envBase, err := t.services().environmentBase()
		if err == nil {
			err = t.services().checkHealth(ctx, envBase, hc, fmt.Sprintf("steps[%d] (%s).healthcheck", index, name))
		}
		if err != nil {
			t.rigging().closeRig(rig)
			return "", err
		}
	}
	runCmd, err := t.harness.RunCommand(t.rigging().templateData(rig))
	if err != nil {
		t.rigging().closeRig(rig)
		return "", err
	}
	err = t.runAgent(ctx, runCmd, rig)
	t.steps.setUp = true
	t.rigging().closeRig(rig)
	if err != nil {
		return "", err
	}
	if err := ms.keepGatewayRecord(rig != nil, gatewayRecord, name); err != nil {
		return "", err
	}
	lingers := t.iso.traits().lingers
	if rig != nil && !lingers {
		t.rigging().keepAgentLogs(rig)
	}
	// The step's collection pass, as Harbor's: the task's collect hooks and
	// the step's own, then the artifacts.
	hooks := append(slices.Clone(t.task.Config.Verifier.Collect), step.Config.VerifierCollect...)
	if err := t.services().runCollectHooksOf(ctx, hooks); err != nil {
		return "", err
	}
	if err := t.verification().collectStepArtifacts(name, step); err != nil {
		return "", err
	}
	if err := t.runVerifier(ctx); err != nil {
		return "", err
	}
	if err := ms.keepGatewayRecord(t.spec.JudgeModel != "", judgeGatewayRecord, name); err != nil {
		return "", err
	}
	if err := ms.keepStepLogs(name); err != nil {
		return "", err
	}
	res := ms.recordStep(name, started)
	switch {
	case res.AgentExecution == nil && res.ExceptionInfo != nil:
		// The agent never ran (the harness's install step failed): Harbor
		// sets its agent up before the steps, and such a trial ends.
		return "its agent did not run (" + res.ExceptionInfo.ExceptionType + ")", nil
	case res.ExceptionInfo != nil && res.VerifierResult == nil:
		return "it failed without a reward (" + res.ExceptionInfo.ExceptionType + ")", nil
	case step.Config.MinReward != nil:
		var rewards map[string]float64
		if res.VerifierResult != nil {
			rewards = res.VerifierResult.Rewards
		}
		if why := harbor.MinRewardFailure(rewards, step.Config.MinReward); why != "" {
			return why, nil
		}
	}
	return "", nil
}

// scaledSeconds is s seconds times the run's timeout multiplier.
func scaledSeconds(s, mult float64) time.Duration {
	return time.Duration(s * mult * float64(time.Second))
}

// budgetSpent says why the attempt's model budget leaves nothing for
// another step ("" = it does, or there is none).
func (ms multiStep) budgetSpent(spec sandbox.Spec) string {
	t := ms.t
	if t.steps == nil || !t.steps.anyUsage {
		return ""
	}
	used := t.steps.usage
	switch {
	case spec.MaxTokens > 0 && used.InputTokens+used.OutputTokens >= spec.MaxTokens:
		return fmt.Sprintf("the attempt's token budget is spent (%d of %d tokens)", used.InputTokens+used.OutputTokens, spec.MaxTokens)
	case spec.MaxCostUSD > 0 && used.CostUSD >= spec.MaxCostUSD:
		return fmt.Sprintf("the attempt's cost budget is spent ($%.4f of $%.4f)", used.CostUSD, spec.MaxCostUSD)
	}
	return ""
}

// remainingBudget is what the attempt's budget leaves for the next step:
// one budget for the whole trial, however many steps use it.
func (ms multiStep) remainingBudget(spec sandbox.Spec) (int64, float64) {
	t := ms.t
	tokens, cost := spec.MaxTokens, spec.MaxCostUSD
	if t.steps.anyUsage {
		if tokens > 0 {
			tokens -= t.steps.usage.InputTokens + t.steps.usage.OutputTokens
		}
		if cost > 0 {
			cost -= t.steps.usage.CostUSD
		}
	}
	return tokens, cost
}

// stageStep lays out the step's tests/ (the task's tests/, then the
// step's own over them, as Harbor uploads both) and solution/ (the step's,
// else the task's) in the work dir, and points the trial's layouts at them.
func (ms multiStep) stageStep(base harbor.Task, step harbor.Step) error {
	t := ms.t
	dir := filepath.Join(t.steps.staged, step.Config.Name)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("step %s: stage: %w", step.Config.Name, err)
	}
	tests, solution := filepath.Join(dir, "tests"), filepath.Join(dir, "solution")
	for _, src := range []string{filepath.Join(base.Dir, harbor.TestsDir), step.TestsDir()} {
		if err := stageTree(src, tests); err != nil {
			return fmt.Errorf("step %s: stage tests: %w", step.Config.Name, err)
		}
	}
	src := step.SolutionDir()
	if !step.HasSolution {
		src = filepath.Join(base.Dir, "solution")
	}
	if err := stageTree(src, solution); err != nil {
		return fmt.Errorf("step %s: stage solution: %w", step.Config.Name, err)
	}
	sameTests, sameSolution := t.seen.Tests == t.host.Tests, t.seen.Solution == t.host.Solution
	if t.container == nil {
		// Container isolation reads them from the task dir (t.task.Dir).
		t.host.Tests, t.host.Solution = tests, solution
	}
	if sameTests {
		t.seen.Tests = t.host.Tests
	}
	if sameSolution {
		t.seen.Solution = t.host.Solution
	}
	return nil
}

// stageTree copies the task's directory src (if it exists) into dst.
func stageTree(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_, err := copyTree(src, dst, copyOptions{keepSymlinks: true})
	return err
}

// prepareStepFiles readies a running environment for the next step's
// agent: the previous step's /tests removed (the agent never sees a
// verifier's tests) and, for a harness that gets it, the step's solution
// put at /solution.
func (ms multiStep) prepareStepFiles() error {
	t := ms.t
	switch {
	case t.image != nil:
		r, err := os.OpenRoot(t.layer.root)
		if err != nil {
			return fmt.Errorf("image sandbox: %w", err)
		}
		defer r.Close()
		for _, target := range []string{TestsMount, SolutionMount} {
			if err := r.RemoveAll(strings.TrimPrefix(target, "/")); err != nil {
				return fmt.Errorf("image sandbox: remove %s: %w", target, err)
			}
		}
		if t.harness.MountsSolution {
			if err := uploadDir(t.layer.root, t.host.Solution, SolutionMount); err != nil {
				return fmt.Errorf("image sandbox: %w", err)
			}
		}
	case t.container != nil:
		for _, dir := range []string{t.host.Tests, t.host.Solution} {
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("container: clear %s: %w", dir, err)
			}
		}
		if t.harness.MountsSolution {
			return installReadOnly(filepath.Join(t.task.Dir, "solution"), t.host.Solution)
		}
	}
	return nil
}

// writeStepInstruction puts the step's instruction at
// /logs/agent/instruction.md, never through a link a process left there.
func (ms multiStep) writeStepInstruction(text string) error {
	t := ms.t
	path := filepath.Join(t.host.AgentLogs, "instruction.md")
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write instruction: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("write instruction: %w", err)
	}
	_, err = io.WriteString(f, text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write instruction: %w", err)
	}
	return nil
}

// stepSetup uploads the step's workdir/ into the environment's working
// directory and runs its workdir/setup.sh there as the step's agent user,
// as Harbor does. A setup.sh that fails (or times out) is the step's
// exception and stops the trial's remaining steps; it reports true.
func (ms multiStep) stepSetup(ctx context.Context, step harbor.Step) (bool, error) {
	t := ms.t
	if !step.HasWorkdir {
		return false, nil
	}
	if err := ms.uploadWorkdir(step.WorkdirDir()); err != nil {
		return false, fmt.Errorf("step %s: upload workdir: %w", step.Config.Name, err)
	}
	if !step.HasSetup() {
		return false, nil
	}
	env := baseEnv(t.seen.Tmp, t.seen.Tmp, t.seen.App)
	for k, v := range t.task.Config.Environment.Env {
		env[k] = v
	}
	pc := phaseCommand{
		script:  "bash " + t.seen.App + "/setup.sh",
		env:     envList(env),
		mounts:  t.agentMounts(),
		tmpDir:  t.host.Tmp,
		workDir: t.host.App,
		network: networkAllowed(t.phaseNetwork(t.task.Config.Agent.NetworkMode)),
	}
	if err := t.imageSandbox().imagePhase(&pc, roleAgent); err != nil {
		return false, err
	}
	out, err := t.phase(ctx, "step_setup", pc, t.spec.AgentTimeout, stepSetupStdout, stepSetupStderr, t.host.AgentLogs)
	if err != nil {
		return false, err
	}
	switch {
	case out.TimedOut:
		t.except(harbor.ExceptionAgentSetupTimeout, fmt.Sprintf("step %s: workdir/setup.sh did not finish within %s", step.Config.Name, t.spec.AgentTimeout))
	case out.ExitCode != 0:
		t.except(harbor.ExceptionAgentSetup, fmt.Sprintf("step %s: workdir/setup.sh exited with code %d (see steps/%s/agent/%s)", step.Config.Name, out.ExitCode, step.Config.Name, stepSetupStderr))
	default:
		return false, nil
	}
	return true, nil
}

// uploadWorkdir copies src's files into the environment's working
// directory, over what is there (Harbor's upload_dir): under image
// isolation through an os.Root of the pod's root, so nothing a process of
// the pod planted leads out of it; owned by the agent's user (the image's
// or task's agent user in a pod, the agent uid in a container).
func (ms multiStep) uploadWorkdir(src string) error {
	t := ms.t
	root, target := t.host.App, "."
	uid, gid := -1, -1
	if t.container != nil {
		// The agent's uid owns /app (handOver): the step's files are its.
		uid, gid = int(t.container.uid), int(t.container.gid)
	}
	if t.image != nil {
		root, target = t.layer.root, strings.TrimPrefix(filepath.Clean(t.seen.App), "/")
		if target == "" {
			target = "."
		}
		u, err := t.imageSandbox().phaseUser(roleAgent)
		if err != nil {
			return err
		}
		uid, gid = int(u.uid), int(u.gid)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		name := filepath.Join(target, rel)
		switch {
		case d.IsDir():
			if err := r.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := mergeFile(r, path, name); err != nil {
				return err
			}
		default:
			return nil // a task's workdir holds files and directories only
		}
		if uid >= 0 {
			return r.Lchown(name, uid, gid)
		}
		return nil
	})
}

// keepGatewayRecord moves the step's record of a model gateway (each
// step starts its own, which would write over the last's) to
// artifacts/steps/<name>/, when the step had that gateway.
func (ms multiStep) keepGatewayRecord(had bool, record, name string) error {
	t := ms.t
	src := filepath.Join(t.out, ArtifactsDir, record)
	if !had {
		return nil
	}
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	dst := filepath.Join(t.out, ArtifactsDir, "steps", name, record)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("step %s: keep the gateway record: %w", name, err)
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("step %s: keep the gateway record: %w", name, err)
	}
	return nil
}

// mergeFile writes the host file src to name in r, replacing any entry there.
func mergeFile(r *os.Root, src, name string) error {
	if err := r.RemoveAll(name); err != nil {
		return err
	}
	return uploadFile(r, src, name)
}

// keepStepLogs moves the step's /logs/agent (and /logs/verifier, unless
// its verifier's were taken already) to the step's directory, so the next
// step starts with them empty, as Harbor archives them per step.
func (ms multiStep) keepStepLogs(name string) error {
	t := ms.t
	dst := filepath.Join(t.steps.logs, name)
	if err := moveEntries(t.host.AgentLogs, filepath.Join(dst, "agent")); err != nil {
		return fmt.Errorf("step %s: keep agent logs: %w", name, err)
	}
	if err := moveEntries(t.host.VerifierLogs, filepath.Join(dst, "verifier")); err != nil {
		return fmt.Errorf("step %s: keep verifier logs: %w", name, err)
	}
	return nil
}

// moveEntries renames every entry of src into dst (created 0700): a
// rename moves a link as a link, never what it points to.
func moveEntries(src, dst string) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		to := filepath.Join(dst, e.Name())
		if err := os.RemoveAll(to); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(src, e.Name()), to); err != nil {
			return err
		}
	}
	return nil
}

// recordStep turns what the running step left in the trial's state into
// its StepResult: its exceptions (the trial's too, prefixed with the
// step), its agent usage, its reward and timings; and adds its usage to
// the trial's.
func (ms multiStep) recordStep(name string, firstException int) harbor.StepResult {
	t := ms.t
	s := t.steps
	res := harbor.StepResult{StepName: name, AgentExecution: t.timings["agent_execution"], Verifier: t.timings["verifier"]}
	if own := t.exceptions[firstException:]; len(own) > 0 {
		first := own[0]
		for _, e := range own[1:] {
			first.ExceptionMessage += "; then " + e.ExceptionType + ": " + e.ExceptionMessage
		}
		res.ExceptionInfo = &first
		for i := range own {
			own[i].ExceptionMessage = "step " + name + ": " + own[i].ExceptionMessage
		}
	}
	if _, ran := t.timings["agent_execution"]; ran {
		res.AgentResult = t.agentResult()
		if u := t.usage; u != nil {
			s.anyUsage = true
			s.usage.InputTokens += u.InputTokens
			s.usage.CacheTokens += u.CacheTokens
			s.usage.OutputTokens += u.OutputTokens
			s.usage.ReasoningTokens += u.ReasoningTokens
			if u.CostReported {
				s.costSeen = true
				s.usage.CostUSD += u.CostUSD
			}
			if t.gateway != nil && t.gateway.CostEstimated {
				s.costEstimated = true
			}
		}
	}
	if t.reward != nil {
		res.VerifierResult = &harbor.VerifierResult{Rewards: t.reward.Values}
	}
	if j := t.judge; j != nil {
		if s.judge == nil {
			s.judge = &runpkg.JudgeUsage{Model: j.Model, CostKnown: true}
		}
		s.judge.Calls += j.Calls
		s.judge.InputTokens += j.InputTokens
		s.judge.CacheTokens += j.CacheTokens
		s.judge.OutputTokens += j.OutputTokens
		s.judge.CostUSD += j.CostUSD
		s.judge.CostKnown = s.judge.CostKnown && j.CostKnown
		s.judge.CostEstimated = s.judge.CostEstimated || j.CostEstimated
		if j.Failure != "" {
			s.judge.Failure = j.Failure
		}
	}
	for _, phase := range []string{"step_setup", "agent_execution", "verifier"} {
		if code, ok := t.exitCodes[phase]; ok {
			t.exitCodes["steps/"+name+"/"+phase] = code
			delete(t.exitCodes, phase)
		}
	}
	s.results = append(s.results, res)
	s.produced = append(s.produced, res.VerifierResult != nil)
	t.log.Info("step finished", "step", name, "has_reward", res.VerifierResult != nil, "exception", exceptionType(res.ExceptionInfo))
	return res
}

// finishSteps sets the trial's reward from the steps' by the task's
// strategy, and its usage and judge use from their sums.
func (ms multiStep) finishSteps(strategy string) {
	t := ms.t
	s := t.steps
	rewards := make([]map[string]float64, len(s.results))
	for i, r := range s.results {
		if r.VerifierResult != nil {
			rewards[i] = r.VerifierResult.Rewards
		}
	}
	t.reward = nil
	if agg := harbor.StepRewards(strategy, rewards, s.produced); agg != nil {
		v, _ := harbor.MainReward(agg)
		t.reward = &harbor.Reward{Value: v, Values: agg, Source: "steps (" + strategy + ")"}
		t.log.Info("trial reward from its steps", "strategy", strategy, "reward", v, "steps_run", len(s.results))
	}
	t.usage, t.programUsage, t.gateway = nil, nil, nil
	t.judge = s.judge
}

// widen stretches span to cover ti.
func widen(span *harbor.TimingInfo, ti *harbor.TimingInfo) {
	if ti == nil || ti.StartedAt == nil {
		return
	}
	if span.StartedAt == nil || ti.StartedAt.Before(*span.StartedAt) {
		start := *ti.StartedAt
		span.StartedAt = &start
	}
	if ti.FinishedAt != nil && (span.FinishedAt == nil || ti.FinishedAt.After(*span.FinishedAt)) {
		end := *ti.FinishedAt
		span.FinishedAt = &end
	}
}

package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/confine"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	runpkg "github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// installTimeout bounds a harness's install step.
const installTimeout = 15 * time.Minute

// maxArtifactBytes bounds the logs copied into artifacts/.
const maxArtifactBytes = 256 << 20

// Names of the files the runner writes.
const (
	RunnerLogFile  = "runner.log"
	ArtifactsDir   = sandbox.ArtifactsDir
	agentStdout    = "stdout.txt"
	agentStderr    = "stderr.txt"
	installStdout  = "install-stdout.txt"
	installStderr  = "install-stderr.txt"
	verifierStdout = "test-stdout.txt"
	verifierStderr = "test-stderr.txt"
)

// Options configures Run.
type Options struct {
	// Isolation is IsolationBwrap (the default), IsolationContainer or
	// IsolationProcess.
	Isolation string
	// AgentUID and AgentGID run the agent under container isolation
	// (0 = DefaultAgentUID, DefaultAgentGID).
	AgentUID, AgentGID int
	// WorkDir is the trial's scratch directory (created if missing): the
	// seeded /app, the /logs tree and the agent's /tmp live there.
	WorkDir string
	// OutDir receives result.json and artifacts/ (created if missing).
	OutDir string
	// AgentsDir, when set, is mounted read-only at /agent in the agent phase
	// (scripts of command agents).
	AgentsDir string
	// BwrapPath is the bubblewrap binary; "" looks up bwrap on PATH.
	BwrapPath string
	// AgentBundles is the agent-bundle cache bundled harnesses run from
	// ("" = agentbundle.DefaultDir()).
	AgentBundles string
	// Forwarder is the sandbox-runner binary the agent's sandbox runs to
	// reach the model gateway ("" = this program, which is one).
	Forwarder string
	// Models resolves the agent's model to the upstream the model gateway
	// forwards to (nil = gateway.NewResolver(), the default provider table).
	Models *gateway.Resolver
	// Image is the task's unpacked image (bwrap isolation: required).
	Image *Image
	// VerifierImage is the separate verifier's unpacked image (a task
	// with [verifier] environment_mode = "separate"; verifierenv.go).
	VerifierImage *Image
	// Services are the unpacked images of the task's sidecar services, by
	// service name (services.go).
	Services map[string]ServiceImage
	// VerifierHandoff is the directory shared with the task's verifier
	// container (container isolation, a separate verifier:
	// verifierhandoff.go).
	VerifierHandoff string
	// SelfPath is this runner's binary, bound into image sandboxes to
	// enter a non-root image user ("" = os.Executable()). It must be
	// statically linked: the image has its own libc, or none.
	SelfPath string
	// InstalledAgentDir, when set, is mounted read-only at
	// /installed-agent in the agent phase (the harness's agent bundle).
	InstalledAgentDir string
	// StaticBinDir, when set, is mounted read-only at /opt/gauntlet/bin in
	// every phase of an image sandbox (the platform's static helpers).
	StaticBinDir string
	// PidsLimit bounds each phase's processes (0 = DefaultPidsLimit, < 0 =
	// none).
	PidsLimit int
	// Overlay is the driver of an image attempt's writable root:
	// OverlayAuto (the kernel's overlayfs, else fuse-overlayfs),
	// OverlayKernel or OverlayFuse.
	Overlay string
	// StorageMB is the per-attempt storage limit when the task sets no
	// storage_mb (0 = DefaultStorageMB, < 0 = none).
	StorageMB int
	// NetworkCeiling is the operator's most permissive network mode for
	// every task ("" or public = no restriction, allowlist, no-network).
	NetworkCeiling string
	// KeepDiff keeps an image sandbox's writable layer as
	// artifacts/diff.tar.gz (an OCI layer of what the attempt changed).
	KeepDiff bool
	// HTTPClient downloads task bundles and uploads outputs; nil uses a
	// client with a 5-minute timeout.
	HTTPClient *http.Client
	// Logger receives the runner's log besides artifacts/runner.log; nil = none.
	Logger *slog.Logger
	// MemoryStarvation is when an agent phase stalled on memory is ended
	// as memory-starved (zero: the defaults; memstarve.go).
	MemoryStarvation MemoryStarvation
}

// Run runs one trial of spec: it seeds the work dir from the task, runs the
// harness's install step and the agent in the trial's environment (killed
// at spec.AgentTimeout), then always runs the verifier (tests/test.sh) in
// the same environment (image and container isolation: what the agent left
// running still runs, as in Harbor's shared container; the host-rootfs and
// process modes: a sandbox of its own), ends it, reads the reward, collects /logs as artifacts and writes
// OutDir/result.json (uploading it when spec.Output has URLs). Agent and
// verifier failures are recorded in the result's exception_info; an error
// means the runner could not do its job and no trustworthy result exists.
func Run(ctx context.Context, spec sandbox.Spec, opts Options) (harbor.TrialResult, error) {
	return run(ctx, spec, opts, harness.All())
}

func run(ctx context.Context, spec sandbox.Spec, opts Options, table []harness.Harness) (harbor.TrialResult, error) {
	if opts.WorkDir == "" || opts.OutDir == "" {
		return harbor.TrialResult{}, errors.New("runner options: work dir and out dir are required")
	}
	h, ok := harness.LookupIn(table, spec.Harness)
	if !ok {
		return harbor.TrialResult{}, fmt.Errorf("spec harness %q: unknown; known harnesses: %s", spec.Harness, harness.Names(table))
	}
	iso, err := newIsolation(opts)
	if err != nil {
		return harbor.TrialResult{}, err
	}
	t, err := newTrial(spec, opts, h, iso)
	if err != nil {
		return harbor.TrialResult{}, err
	}
	t.verification().addRedacted("", "")
	defer t.closeLog()
	defer t.imageSandbox().closeLayer()
	defer t.verification().closeVerifierLayer()
	if err := t.run(ctx); err != nil {
		t.log.Error("trial aborted", "err", err)
		return harbor.TrialResult{}, err
	}
	return t.finish(ctx)
}

// trial is the state of one Run.
type trial struct {
	spec    sandbox.Spec
	opts    Options
	harness harness.Harness
	iso     isolation
	// container is iso under container isolation, else nil.
	container *containerIsolation
	// image is iso under image (bwrap) isolation, else nil; layer is its
	// attempt's writable root once set up.
	image *imageIsolation
	layer *layer
	// redact scrubs the secret values out of everything collected: the
	// spec's secrets, the judge key and redacted (the gateways' tokens).
	redact   *redactor
	redacted map[string]secret.Value
	work     string
	out      string
	host     layout // work dir parts on the host
	seen     layout // the same as the phases see them
	task     harbor.Task
	log      *slog.Logger
	logFile  *os.File

	startedAt  time.Time
	timings    map[string]*harbor.TimingInfo
	exceptions []harbor.ExceptionInfo
	usage      *harness.Usage
	// programUsage is what a bundled program reported itself, kept beside
	// the gateway's metering (usage); gateway is the gateway's totals.
	programUsage *harness.Usage
	gateway      *gateway.Totals
	// agentProgram is the host path of the harness bundle's program, which
	// the agent phase's memory watch tells from the commands it runs.
	agentProgram string
	// memory is whose processes used the memory, when the agent phase was
	// killed for it (result.json's agent_result.metadata.memory).
	memory *MemoryReport
	// judge is the verifier's LLM judge use, metered by its own gateway.
	judge *runpkg.JudgeUsage
	// limits say what the sandbox enforces and what it does not, for
	// result.json (the run's log shows them).
	limitNotes []string
	// rootless: the runner is root of a user namespace of its own, not of
	// the host (rootless.go).
	rootless bool
	// podLimits say what the pod's cgroup enforces (image isolation).
	podLimits []string
	// podStderr is the pod's bwrap's messages.
	podStderr *cappedFile
	// entry is the image's entrypoint running in the pod (entrypoint.go).
	entry *entrypointProc
	// envStarted: startEnvironment has run (it runs once per trial).
	envStarted bool
	// volumes are the compose file's volumes' directories, by key
	// (volumes.go).
	volumes map[string]string
	// ended: the environment that outlives the phases is gone.
	ended bool
	// podSocket is the socket path of the pod's model gateways, in
	// podSocketTmp when the work dir's path was too long for it.
	podSocket, podSocketTmp string
	// judgeFault is the judge's model failure, if its calls failed.
	judgeFault *gateway.Fault
	reward     *harbor.Reward
	exitCodes  map[string]int
	// steps is a multi-step trial's state (steps.go); nil for one step.
	steps *stepRun
	// Declared artifacts and the separate verifier (artifacts.go,
	// verifierenv.go): where the artifacts were collected, how each went,
	// and the verifier's own writable root.
	declared        string
	declaredEntries []ArtifactEntry
	verifierLayer   *layer
	// sidecars are the task's running sidecar services (services.go).
	sidecars []*sidecar
}

func newTrial(spec sandbox.Spec, opts Options, h harness.Harness, iso isolation) (*trial, error) {
	work, err := filepath.Abs(opts.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("work dir: %w", err)
	}
	out, err := filepath.Abs(opts.OutDir)
	if err != nil {
		return nil, fmt.Errorf("out dir: %w", err)
	}
	t := &trial{spec: spec, opts: opts, harness: h, iso: iso, work: work, out: out,
		startedAt: time.Now().UTC(), timings: map[string]*harbor.TimingInfo{}, exitCodes: map[string]int{}}
	t.container, _ = iso.(*containerIsolation)
	t.image, _ = iso.(*imageIsolation)
	for _, dir := range []string{work, out} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
		// Under container isolation the task files (tests, solution) and
		// the outputs must stay out of the agent's reach.
		if t.container != nil {
			if err := os.Chmod(dir, 0o700); err != nil {
				return nil, fmt.Errorf("chmod %s: %w", dir, err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(out, ArtifactsDir), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Join(out, ArtifactsDir), err)
	}
	if err := t.openLog(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *trial) openLog() error {
	f, err := os.OpenFile(filepath.Join(t.out, ArtifactsDir, RunnerLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open runner log: %w", err)
	}
	t.logFile = f
	handlers := []slog.Handler{slog.NewTextHandler(f, nil)}
	if t.opts.Logger != nil {
		handlers = append(handlers, t.opts.Logger.Handler())
	}
	t.log = slog.New(slog.NewMultiHandler(handlers...)).With("launch_id", t.spec.LaunchID)
	return nil
}

func (t *trial) closeLog() {
	if t.logFile != nil {
		_ = t.logFile.Close()
		t.logFile = nil
	}
}

// run executes the phases. Its error means the trial could not be run.
func (t *trial) run(ctx context.Context) error {
	defer func() {
		if err := t.endEnvironment(); err != nil {
			t.log.Error("the trial's environment did not end cleanly", "err", err)
		}
	}()
	t.log.Info("trial started", "harness", t.harness.Name, "model", t.spec.Model,
		"isolation", t.iso.name(), "task", t.spec.Task.Name)
	if w := t.iso.traits().warning; w != "" {
		t.log.Warn(w)
	}
	if t.container != nil && t.spec.Task.Dir != "" {
		t.log.Warn("container isolation with a task directory: keep it unreadable to the agent uid (the cloud passes a bundle, unpacked into the root-only work dir)")
	}
	if err := t.setUpEnvironment(ctx); err != nil {
		return err
	}
	if err := t.rigging().checkStaticBinary(); err != nil {
		return err
	}
	if len(t.task.Steps) > 0 {
		return t.multiStep().runSteps(ctx) // a multi-step task (steps.go)
	}
	rig, err := t.rigging().prepareRig(ctx)
	if err != nil {
		return err
	}
	if t.harness.MountsSolution && !t.task.HasSolution {
		// Harbor's oracle raises before it runs anything, and the trial
		// ends there, unverified.
		t.rigging().closeRig(rig)
		t.except(harbor.ExceptionAgentSetup, fmt.Sprintf("harness %q needs the task's %s, which does not exist", t.harness.Name, harbor.SolutionScript))
		return nil
	}
	runCmd, err := t.harness.RunCommand(t.rigging().templateData(rig))
	if err != nil {
		t.rigging().closeRig(rig)
		return err
	}
	err = t.runAgent(ctx, runCmd, rig)
	t.rigging().closeRig(rig)
	if err != nil {
		return err
	}
	// In a pod or a container what the agent left running lives on into
	// the verifier: its files are read once it is gone (it could swap
	// them for symlinks while the runner reads).
	lingers := t.iso.traits().lingers
	if rig != nil && !lingers {
		t.rigging().keepAgentLogs(rig)
	}
	if t.imageSandbox().podLost() && slices.ContainsFunc(t.exceptions, func(e harbor.ExceptionInfo) bool { return e.ExceptionType == harbor.ExceptionAgentOOM }) {
		// The out-of-memory kill took the pod's pid 1 too (at a limit far
		// below the agent's need even pid 1 cannot allocate): the
		// environment is gone, as a container whose init dies, and the
		// attempt ends with the agent's out-of-memory exception, unverified,
		// as Harbor's trial ends when its container dies.
		t.log.Warn("the pod is gone after the agent's out-of-memory end: the attempt ends unverified")
		err := t.endEnvironment()
		if rig != nil && lingers {
			t.rigging().keepAgentLogs(rig)
		}
		return err
	}
	// Harbor's [[verifier.collect]] hooks, after the agent (collect.go).
	if err := t.services().runCollectHooks(ctx); err != nil {
		return err
	}
	err = t.runVerifier(ctx)
	if eerr := t.endEnvironment(); eerr != nil {
		return errors.Join(err, eerr)
	}
	if rig != nil && lingers {
		t.rigging().keepAgentLogs(rig)
	}
	return err
}

// endEnvironment ends what outlives the phases: an image trial's pod, the
// agent uid's processes in a container (Harbor's shared container, which
// the verifier ran in). It does its work once.
func (t *trial) endEnvironment() error {
	if t.ended {
		return nil
	}
	t.ended = true
	t.imageSandbox().stopPod()
	if t.container == nil {
		return nil
	}
	if err := t.container.endAgent(); err != nil {
		return err
	}
	t.log.Info("no process of the agent uid is left")
	return nil
}

// setUpEnvironment fetches and loads the task and seeds /app.
func (t *trial) setUpEnvironment(ctx context.Context) error {
	timing := t.begin("environment_setup")
	dir, err := taskDir(ctx, t.httpClient(), t.spec.Task, filepath.Join(t.work, "task"))
	if err != nil {
		return err
	}
	if t.task, err = harbor.LoadTask(dir); err != nil {
		return fmt.Errorf("load task: %w", err)
	}
	if err := t.imageSandbox().setUpLayer(); err != nil {
		return err
	}
	t.host, t.seen = t.iso.layouts(t.work, dir, t.opts.AgentsDir)
	if err := t.prepareDirs(dir); err != nil {
		return err
	}
	// An image already holds the task's environment (Harbor copies nothing
	// from environment/ at run time); without one, /app is seeded from
	// environment/files.
	if t.image == nil {
		notes, err := seedApp(dir, t.host.App)
		if err != nil {
			return fmt.Errorf("seed %s: %w", AppMount, err)
		}
		for _, n := range notes {
			t.log.Warn("environment file not copied", "note", n)
		}
	}
	instruction := filepath.Join(t.host.AgentLogs, "instruction.md")
	if err := os.WriteFile(instruction, []byte(t.task.Instruction), 0o644); err != nil {
		return fmt.Errorf("write instruction: %w", err)
	}
	if t.container != nil {
		if err := t.container.handOver(t.host.App, t.host.AgentLogs, t.host.Artifacts, t.host.Tmp); err != nil {
			return err
		}
	}
	t.end(timing, "environment_setup")
	return nil
}

// prepareDirs creates the trial's directories (under container isolation:
// lays out the container for the agent phase).
func (t *trial) prepareDirs(taskDir string) error {
	if t.container != nil {
		if err := t.container.serveStaticBin(t.opts.StaticBinDir); err != nil {
			return err
		}
		return t.container.prepareAgent(t.host, taskDir, t.harness.MountsSolution)
	}
	if t.image != nil {
		return t.imageSandbox().prepareImageDirs()
	}
	for _, dir := range []string{t.host.App, t.host.AgentLogs, t.host.VerifierLogs, t.host.Tmp} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	if _, ok := t.iso.(bwrapIsolation); ok {
		if _, err := confine.WriteMaskFile(t.work); err != nil {
			return err
		}
		return writeEtcStubs(t.imageSandbox().etcStubs())
	}
	return nil
}

// installStep is the harness's install step as a phase command on base
// (the agent's): its Install, or, where the operator allows network
// installs (spec.NetworkInstalls), its pinned network recipe, which gets
// public network (under the operator's ceiling) whatever the task's mode;
// the agent then runs with the task's. A network recipe where they are not
// allowed is the platform's error: submit refuses such a harness.
func (t *trial) installStep(base phaseCommand) (phaseCommand, error) {
	install := base
	install.script = t.harness.Install
	if t.harness.NetworkInstall == "" {
		return install, nil
	}
	if !t.spec.NetworkInstalls {
		return install, fmt.Errorf("harness %s installs from the network (%s), which this deployment does not allow", t.harness.Name, t.harness.NetworkInstall)
	}
	install.script = strings.TrimSpace(t.harness.NetworkInstall + "\n" + t.harness.Install)
	install.netMode = effectiveNetwork(netPublic, t.opts.NetworkCeiling)
	install.network, install.allowedHosts = install.netMode == netPublic, nil
	if install.netMode == netAllowlist {
		install.netMode, install.network = netNone, false // no hosts to allow: the recipe's are unknown
	}
	if !install.network {
		t.log.Warn("the harness's network install runs without network: the operator's network ceiling denies it", "ceiling", t.opts.NetworkCeiling)
	}
	t.log.Info("the harness installs from the network", "recipe", t.harness.NetworkInstall, "network", install.netMode)
	if t.image != nil && install.network != base.network {
		if err := t.image.setResolver(install.network); err != nil {
			return install, err
		}
	}
	return install, nil
}

// runAgent runs the install step and the agent. Agent failures become
// exceptions; the error reports only a phase that could not be started.
func (t *trial) runAgent(ctx context.Context, runCmd string, rig *agentRig) error {
	if t.harness.MountsSolution && !t.task.HasSolution {
		t.except(harbor.ExceptionAgentSetup, fmt.Sprintf("harness %q needs the task's %s, which does not exist", t.harness.Name, harbor.SolutionScript))
		return nil
	}
	base := phaseCommand{
		env:     agentEnv(t.spec, t.task, t.harness, t.seen),
		mounts:  t.agentMounts(),
		tmpDir:  t.host.Tmp,
		workDir: t.host.App,
		network: networkAllowed(t.phaseNetwork(t.task.Config.Agent.NetworkMode)),
	}
	if err := t.imageSandbox().imagePhase(&base, roleAgent); err != nil {
		return err
	}
	if rig != nil {
		if err := t.rigging().rigPhase(rig, &base); err != nil {
			return err
		}
	}
	if rig == nil && t.harness.KeyEnv != "" && !t.hasSecret(t.harness.KeyEnv) {
		t.log.Warn("the harness's model key variable is not among the agent's secrets", "key_env", t.harness.KeyEnv)
	}
	install, err := t.installStep(base)
	if err != nil {
		return err
	}
	// The agent starts only once the environment is up and healthy.
	if err := t.services().startEnvironment(ctx, rig); err != nil {
		return err
	}
	if install.script != "" && !t.steps.installed() {
		out, err := t.phase(ctx, "agent_setup", install, installTimeout, installStdout, installStderr, t.host.AgentLogs)
		if err != nil {
			return err
		}
		if install.network != base.network && t.image != nil {
			if err := t.image.setResolver(base.network); err != nil {
				return err
			}
		}
		switch {
		case out.TimedOut:
			t.except(harbor.ExceptionAgentSetupTimeout, fmt.Sprintf("the harness install step did not finish within %s", installTimeout))
			return nil
		case out.ExitCode != 0:
			t.except(harbor.ExceptionAgentSetup, fmt.Sprintf("the harness install step exited with code %d (see agent/%s)", out.ExitCode, installStderr))
			return nil
		}
	}
	agent := base
	agent.script = runCmd
	if rig != nil {
		t.rigging().rigScript(rig, &agent, t.seen.AgentLogs)
	}
	out, err := t.phase(ctx, "agent_execution", agent, t.spec.AgentTimeout, agentStdout, agentStderr, t.host.AgentLogs)
	if err != nil {
		return err
	}
	switch {
	case out.OOMKills > 0:
		limit := fmt.Sprintf("its memory limit of %d MB", t.limits().MemoryMB)
		if t.container != nil {
			limit = "the container's memory (the task size)"
		}
		t.memory = out.Memory
		t.except(harbor.ExceptionAgentOOM, fmt.Sprintf("oom: the attempt exceeded %s; the kernel killed %d of its processes (exit code %d); %s",
			limit, out.OOMKills, out.ExitCode, out.Memory.Describe()))
	case out.Starved != nil:
		t.memory = out.Memory
		t.except(harbor.ExceptionAgentOOM, fmt.Sprintf("memory-starved: under its memory limit of %d MB %s, so the runner ended it; %s",
			t.limits().MemoryMB, out.Starved.Describe(), out.Memory.Describe()))
	case out.TimedOut:
		t.except(harbor.ExceptionAgentTimeout, fmt.Sprintf("agent execution timed out after %s", t.spec.AgentTimeout))
	default:
		failed, err := t.rigging().modelException(rig, out.ExitCode)
		if err != nil {
			return err
		}
		if !failed && out.ExitCode != 0 {
			t.except(harbor.ExceptionAgentExit, fmt.Sprintf("agent exited with code %d (see agent/%s)%s", out.ExitCode, agentStderr, t.imageSandbox().storageNote()))
		}
	}
	t.readUsage()
	return nil
}

func (t *trial) readUsage() {
	u, ok, err := t.rigging().reportedUsage()
	switch {
	case err != nil:
		t.log.Warn("agent usage report unreadable; tokens and cost left empty", "err", err)
	case ok:
		t.usage = &u
	}
}

// runVerifier runs tests/test.sh and reads the reward.
func (t *trial) runVerifier(ctx context.Context) error {
	if t.verification().separateVerifier() {
		if ok, err := t.verification().prepareSeparateVerifier(); err != nil || !ok {
			return err
		}
	} else if err := t.verification().collectDeclared(); err != nil {
		return err
	}
	// Nothing but this verifier run may leave a reward behind (a separate
	// verifier's logs are new).
	switch {
	case t.verification().separateVerifier():
	case t.image != nil:
		if err := t.imageSandbox().prepareImageVerifier(); err != nil {
			return err
		}
	default:
		if err := os.RemoveAll(t.host.VerifierLogs); err != nil {
			return fmt.Errorf("clear verifier logs: %w", err)
		}
		if err := os.MkdirAll(t.host.VerifierLogs, 0o755); err != nil {
			return fmt.Errorf("create verifier logs: %w", err)
		}
	}
	if t.container != nil {
		if err := t.container.prepareVerifier(t.host, t.task.Dir); err != nil {
			return err
		}
		defer reapOrphans()
	}
	judge, err := t.verification().prepareJudge(ctx)
	if err != nil {
		return err
	}
	defer t.verification().closeJudge(judge)
	pc := phaseCommand{
		role:    roleVerifier,
		script:  "bash " + t.seen.Tests + "/test.sh",
		env:     verifierEnv(t.spec, t.task, t.seen, judge.access(t.spec.JudgeModel)),
		mounts:  t.verifierMounts(),
		workDir: t.host.App,
		network: networkAllowed(t.phaseNetwork(t.task.Config.Verifier.NetworkMode)),
	}
	if err := t.imageSandbox().imagePhase(&pc, roleVerifier); err != nil {
		return err
	}
	if judge != nil {
		if err := t.rigging().rigMounts(judge, &pc, nil); err != nil {
			return err
		}
		t.rigging().rigScript(judge, &pc, t.seen.VerifierLogs)
	}
	out, err := t.phase(ctx, "verifier", pc, t.spec.VerifierTimeout, verifierStdout, verifierStderr, t.host.VerifierLogs)
	t.verification().closeJudge(judge)
	if err != nil {
		return err
	}
	// The reward is read once nothing of the pod runs any more: neither a
	// process the agent left running nor the verifier's own. A step of a
	// multi-step trial that more steps follow reads it from where the
	// pod cannot reach (steps.go).
	rewardDir := t.host.VerifierLogs
	if t.steps.podRunsOn() {
		if rewardDir, err = t.steps.takeVerifierLogs(t.host.VerifierLogs); err != nil {
			return err
		}
	} else {
		t.imageSandbox().stopPod()
	}
	if out.TimedOut {
		t.verification().exceptNoReward(harbor.ExceptionVerifierTimeout, fmt.Sprintf("verifier timed out after %s; no reward", t.spec.VerifierTimeout))
		return nil
	}
	reward, err := readReward(rewardDir)
	if err != nil {
		t.verification().exceptNoReward(rewardExceptionType(err), fmt.Sprintf("%v (verifier exit code %d)", stripDir(err, rewardDir), out.ExitCode))
		return nil
	}
	t.reward = &reward
	t.log.Info("reward read", "reward", reward.Value, "source", reward.Source)
	return nil
}

// phase runs one phase with the trial's limits and records its timing.
func (t *trial) phase(ctx context.Context, name string, pc phaseCommand, timeout time.Duration,
	stdout, stderr, captureDir string) (phaseOutcome, error) {
	if err := t.services().entrypointGone(); err != nil {
		return phaseOutcome{ExitCode: -1}, err
	}
	timing := t.begin(name)
	limit := "none"
	if timeout > 0 {
		limit = timeout.String()
	}
	t.log.Info("phase started", "phase", name, "timeout", limit, "network", pc.network)
	cg, notes := t.phaseCgroup(name, &pc)
	defer func() {
		if err := cg.remove(); err != nil {
			t.log.Warn("cgroup not removed", "phase", name, "err", err)
		}
	}()
	for _, n := range notes {
		t.log.Info("resource limits", "phase", name, "note", n)
		if name == "agent_execution" {
			t.noteLimit(n)
		}
	}
	oomBefore, containerOOM := 0, false
	if t.container != nil {
		oomBefore, containerOOM = containerOOMKills(cgroupRoot)
	}
	var pod *cgroup
	if t.image != nil && t.image.pod != nil {
		// The pod's one cgroup: the change of its count across the phase
		// (what still runs from an earlier phase counts there too).
		pod = t.image.pod.spec.cg
		oomBefore = pod.oomKills()
	}
	var watch *memWatch
	if name == "agent_execution" {
		// Whose processes use the memory, should the kernel kill some.
		memCg := cg
		if pod != nil {
			memCg = pod
		}
		watch = newMemWatch(memCg, t.agentProgram, t.platformBinaries()...)
		if err := watch.starving(t.opts.MemoryStarvation, memCg); err != nil {
			t.log.Info("memory starvation not watched", "phase", name, "err", err)
		}
		defer func() {
			highest, err := watch.close()
			if err != nil {
				t.log.Warn("memory watch not cleaned up", "phase", name, "err", err)
			}
			if highest >= 0 {
				t.log.Info("memory stall: the highest share of a window the phase's processes waited on memory", "phase", name,
					"percent", fmt.Sprintf("%.1f", highest), "window", t.opts.MemoryStarvation.resolved().Window.String())
			}
		}()
	}
	out, err := runPhase(ctx, t.iso, phase{
		name: name, cmd: pc, timeout: timeout, cgroup: cg, watch: watch,
		stdout: filepath.Join(captureDir, stdout), stderr: filepath.Join(captureDir, stderr),
	})
	for _, failure := range out.SetupRetries {
		t.log.Warn("the sandbox failed to set up before the phase's command ran; started it again", "phase", name, "failure", failure)
	}
	if err != nil {
		return out, err
	}
	if out.Canceled {
		return out, fmt.Errorf("%s phase: runner stopped: %w", name, context.Cause(ctx))
	}
	timing.StartedAt, timing.FinishedAt = &out.StartedAt, &out.FinishedAt
	t.exitCodes[name] = out.ExitCode
	out.OOMKills = cg.oomKills()
	if pod != nil {
		out.OOMKills = max(pod.oomKills()-oomBefore, 0)
	}
	if containerOOM {
		if after, ok := containerOOMKills(cgroupRoot); ok {
			out.OOMKills = max(after-oomBefore, 0)
		}
	}
	if out.Starved != nil {
		t.log.Warn("the phase's processes were stalled on memory over the whole window: ended as memory-starved", "phase", name,
			"stall_percent", out.Starved.StallPercent, "window_s", out.Starved.WindowSeconds, "limit_hits", out.Starved.LimitHits)
	}
	if out.OOMKills > 0 || out.Starved != nil {
		out.Memory = watch.report()
		if out.OOMKills > 0 {
			t.log.Warn("the kernel's OOM killer ended processes of the phase (memory limit)", "phase", name, "oom_kills", out.OOMKills)
		}
		if out.Memory != nil {
			t.log.Warn("memory use of the phase's processes", "phase", name, "used_by", out.Memory.UsedBy,
				"agent_rss_mb", out.Memory.AgentMB, "task_rss_mb", out.Memory.TaskMB, "killed", out.Memory.Killed)
		}
	}
	t.log.Info("phase finished", "phase", name, "exit_code", out.ExitCode, "timed_out", out.TimedOut,
		"duration", out.FinishedAt.Sub(out.StartedAt).Round(time.Millisecond).String())
	return out, nil
}

// phaseCgroup applies the trial's limits to a phase. Under container
// isolation, where the runner can create no cgroup, the container's own
// limits (the Fargate task size) apply; the pids limit becomes the agent
// uid's RLIMIT_NPROC (the uid is the phase's alone, and not root, so the
// kernel enforces it on every fork); and nothing can deny the phase the
// network but the task's security group.
func (t *trial) phaseCgroup(name string, pc *phaseCommand) (*cgroup, []string) {
	if t.container == nil && t.rootless {
		return nil, t.rootlessLimits(pc)
	}
	if t.image != nil {
		// The pod's cgroup holds every phase (pod.go).
		return nil, t.podLimits
	}
	if t.container == nil {
		return newCgroup(cgroupRoot, t.cgroupName(name), t.limits())
	}
	notes := []string{"cpu and memory limits are the container's (the task size)"}
	if _, ok := containerOOMKills(cgroupRoot); ok {
		notes = append(notes, "OOM kills counted from the container's own cgroup")
	} else {
		notes = append(notes, "OOM kills not counted: the container's cgroup memory events are not readable")
	}
	switch pids := t.limits().Pids; {
	case pc.role != roleAgent:
		notes = append(notes, "pids limit: none (the phase runs as root, which RLIMIT_NPROC does not bind; the container's own limits apply)")
	case pids > 0:
		pc.nproc = pids
		notes = append(notes, fmt.Sprintf("pids limit %d applied (RLIMIT_NPROC of the agent uid)", pids))
	default:
		notes = append(notes, "pids limit: none (the operator set none)")
	}
	if !pc.network {
		notes = append(notes, "the task denies network access, which container isolation cannot enforce per phase; the sandbox's security group governs egress")
	}
	return nil, notes
}

// rootlessLimits applies what a rootless runner can of the trial's limits
// to a phase: no cgroup is its to write, so cpu and memory are not
// enforced; the pids limit of a non-root agent becomes its RLIMIT_NPROC,
// which the kernel counts per user namespace, so per attempt.
func (t *trial) rootlessLimits(pc *phaseCommand) []string {
	lim := t.limits()
	var notes []string
	if lim.MemoryMB > 0 {
		notes = append(notes, fmt.Sprintf("memory limit %d MB NOT enforced (rootless runner: no cgroup of its own)", lim.MemoryMB))
	}
	if lim.CPUs > 0 {
		notes = append(notes, fmt.Sprintf("cpu limit %g NOT enforced (rootless runner: no cgroup of its own)", lim.CPUs))
	}
	switch {
	case lim.Pids <= 0:
	case pc.role == roleAgent && !pc.user.root():
		pc.nproc = lim.Pids
		notes = append(notes, fmt.Sprintf("pids limit %d applied (RLIMIT_NPROC of the agent uid in the attempt's user namespace)", lim.Pids))
	default:
		notes = append(notes, fmt.Sprintf("pids limit %d NOT enforced (rootless runner, phase user root)", lim.Pids))
	}
	return notes
}

// roleMounts are the trial's directories a phase of role sees, and
// whether it may write them: the one list of them, which every isolation
// renders. A host-rootfs or process phase binds its role's (agentMounts,
// verifierMounts); a pod binds the union of both roles' for its whole life,
// less what its image's overlay holds (podMounts).
func (t *trial) roleMounts(role phaseRole) []mount {
	m := []mount{{host: t.host.App, target: AppMount, writable: true}}
	if role == roleAgent {
		m = append(m, mount{host: t.host.AgentLogs, target: AgentLogMount, writable: true})
		if t.harness.MountsSolution {
			m = append(m, mount{host: t.host.Solution, target: SolutionMount})
		}
		if t.host.Agents != "" {
			m = append(m, mount{host: t.host.Agents, target: AgentsMount})
		}
	} else {
		m = append(m,
			mount{host: t.host.AgentLogs, target: AgentLogMount},
			mount{host: t.host.VerifierLogs, target: VerifierLogMount, writable: true},
			mount{host: t.host.Tests, target: TestsMount})
	}
	if t.opts.StaticBinDir != "" {
		m = append(m, mount{host: t.opts.StaticBinDir, target: StaticBinMount})
	}
	return m
}

// agentMounts are an agent phase's own mounts: none in a pod, whose
// mounts are bound once for every phase (podMounts).
func (t *trial) agentMounts() []mount {
	if t.image != nil {
		return nil
	}
	return t.roleMounts(roleAgent)
}

// verifierMounts are a verifier phase's own mounts (none in a pod).
func (t *trial) verifierMounts() []mount {
	if t.image != nil {
		return nil
	}
	return t.roleMounts(roleVerifier)
}

// phaseNetwork is a phase's network mode: the task's per-phase override, else
// the spec's (the task environment's) mode.
func (t *trial) phaseNetwork(override string) string {
	if override != "" {
		return override
	}
	return t.spec.Network
}

func (t *trial) limits() resourceLimits {
	lim := resourceLimits{CPUs: t.spec.CPUs, MemoryMB: t.spec.MemoryMB, Pids: t.opts.PidsLimit}
	if lim.Pids == 0 {
		lim.Pids = DefaultPidsLimit
	}
	if lim.CPUs == 0 {
		lim.CPUs = t.task.Config.Environment.CPUs
	}
	if lim.MemoryMB == 0 {
		lim.MemoryMB = t.task.Config.Environment.MemoryMB
	}
	return lim
}

// cgroupName is unique per trial and phase (launch id and work dir hashed).
func (t *trial) cgroupName(phase string) string {
	sum := sha256.Sum256([]byte(t.spec.LaunchID + "\x00" + t.work))
	return "trial-" + hex.EncodeToString(sum[:8]) + "-" + strings.ReplaceAll(phase, "_", "-")
}

func (t *trial) hasSecret(name string) bool {
	_, ok := t.spec.Secrets[name]
	return ok
}

func (t *trial) begin(name string) *harbor.TimingInfo {
	now := time.Now().UTC()
	ti := &harbor.TimingInfo{StartedAt: &now}
	t.timings[name] = ti
	return ti
}

func (t *trial) end(ti *harbor.TimingInfo, name string) {
	now := time.Now().UTC()
	ti.FinishedAt = &now
	t.log.Info("phase finished", "phase", name, "duration", now.Sub(*ti.StartedAt).Round(time.Millisecond).String())
}

func (t *trial) except(typ, msg string) {
	msg = t.redact.String(msg)
	t.log.Warn("trial exception", "type", typ, "message", msg)
	t.exceptions = append(t.exceptions, harbor.ExceptionInfo{
		ExceptionType: typ, ExceptionMessage: msg, OccurredAt: time.Now().UTC(),
	})
}

func (t *trial) httpClient() *http.Client {
	if t.opts.HTTPClient != nil {
		return t.opts.HTTPClient
	}
	return &http.Client{Timeout: 5 * time.Minute}
}

// platformBinaries are the platform's own executables that may run in a
// phase's cgroup beside the phase's command: the runner (pod-init, the
// gateway forwarder), bubblewrap and nsenter.
func (t *trial) platformBinaries() []string {
	var out []string
	if t.opts.SelfPath != "" {
		out = append(out, t.opts.SelfPath)
	}
	if fwd, err := t.rigging().forwarderBinary(); err == nil {
		out = append(out, fwd)
	}
	for _, name := range []string{"bwrap", "nsenter"} {
		if p, err := exec.LookPath(name); err == nil {
			out = append(out, p)
		}
	}
	return out
}

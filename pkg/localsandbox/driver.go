// Package localsandbox is the local sandbox driver: it runs sandbox-runner for
// each slot as a child process of the platform (the runner then isolates the
// agent and the verifier with bubblewrap, on an overlay over the task's
// image, which the driver finds unpacked in the image store's cache and
// hands the runner), stops it with its process group,
// copies its outputs into the blob store and reports each end as a
// sandbox.Completion on a queue. It grades nothing and gates no concurrency;
// the dispatcher does both.
package localsandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/agentbundle"
	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/leftovers"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// DefaultStopGrace is how long Stop waits after SIGTERM before SIGKILL.
const DefaultStopGrace = 2 * time.Second

// Config configures the driver.
type Config struct {
	// DataDir holds the sandboxes' work dirs (DataDir/sandboxes/<id>/).
	DataDir string
	// RunnerPath is the sandbox-runner binary.
	RunnerPath string
	// Isolation is sandbox.IsolationBwrap (the default: the task's image),
	// sandbox.IsolationHostBwrap (the host's root filesystem, a logged
	// development opt-in) or sandbox.IsolationProcess (no isolation, a
	// logged opt-in).
	Isolation string
	// Images gives the unpacked rootfs of a spec's image (bwrap
	// isolation: required).
	Images Images
	// InstalledAgentDir is mounted read-only at /installed-agent in the
	// agent phase ("" = none).
	InstalledAgentDir string
	// StaticBinDir is mounted read-only at /opt/gauntlet/bin in every
	// phase of an image sandbox ("" = none).
	StaticBinDir string
	// PidsLimit, StorageMB and NetworkCeiling are the operator's limits
	// (see runner.Options; 0 / "" = the runner's defaults).
	PidsLimit      int
	StorageMB      int
	NetworkCeiling string
	// KeepDiff keeps each image sandbox's writable layer as an artifact.
	KeepDiff bool
	// AgentsDir is mounted read-only at /agent for command agents ("" = none).
	AgentsDir string
	// BwrapPath is the bubblewrap binary; "" looks up bwrap on PATH.
	BwrapPath string
	// AgentBundles is the agent-bundle cache ("" = agentbundle.DefaultDir()).
	AgentBundles string
	// ModelGatewayConfig is the operator's TOML for the model gateway's
	// provider table ("" = the default table).
	ModelGatewayConfig string
	// Blobs receives each sandbox's outputs under its spec's Output.Prefix.
	Blobs blob.Store
	// Completions receives one JSON sandbox.Completion per sandbox end.
	Completions queue.Queue
	// StopGrace is the SIGTERM → SIGKILL delay of Stop; 0 = DefaultStopGrace.
	StopGrace time.Duration
	// EndedMemory bounds how many ended sandboxes the driver remembers, and
	// EndedRetention for how long (0 = DefaultEndedMemory and
	// DefaultEndedRetention): a repeated Launch of a remembered launch id
	// returns the ended sandbox instead of starting another.
	EndedMemory    int
	EndedRetention time.Duration
	// Space, when set, says whether the data dir's filesystem was full
	// while a sandbox ran: such an attempt ends sandbox.OutOfSpace, the
	// platform's condition, whatever it produced (its writes, the agent's
	// and the verifier's in bwrap-host mode too, may have failed).
	Space  SpaceWatcher
	Logger *slog.Logger
}

// SpaceWatcher is what the driver asks of the data dir's free-space monitor
// (diskspace.Monitor).
type SpaceWatcher interface {
	// FullSince reports whether the filesystem was full at any time since t.
	FullSince(t time.Time) bool
	// Note records a write that failed for want of space.
	Note(err error)
}

// Defaults of Config.EndedMemory and Config.EndedRetention. The pipeline
// launches a launch id again only while its slot is still launching, which
// ends once the completion is graded: minutes, not hours.
const (
	DefaultEndedMemory    = 4096
	DefaultEndedRetention = time.Hour
)

// Driver runs sandboxes as local processes. It implements sandbox.Driver.
type Driver struct {
	cfg   Config
	bwrap string // resolved bubblewrap path ("" under process isolation)
	log   *slog.Logger

	mu     sync.Mutex
	closed bool
	live   map[string]*proc // running sandboxes, by id
	// held are ended sandboxes whose completion is not sent yet (a full
	// data dir holds it until space returns); List still shows them, so
	// the watchdog does not take them for lost.
	held  map[string]sandbox.Handle
	ended endedSet       // recently ended sandboxes
	wg    sync.WaitGroup // sandbox goroutines
	owner *os.File       // the data dir's owner lock, once Recover took it
}

var _ sandbox.Driver = (*Driver)(nil)

// proc is one running sandbox-runner process.
type proc struct {
	handle sandbox.Handle
	spec   sandbox.Spec
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}

	mu      sync.Mutex
	exited  bool // the process has been reaped: its pid may be reused
	stopped bool // Stop was called
	// release frees the image store's hold on the sandbox's rootfs.
	release func()
}

// New checks the configuration and the isolation. When bubblewrap is needed
// and missing it returns an error wrapping sandbox.ErrUnavailable that says
// how to install it.
func New(cfg Config) (*Driver, error) {
	switch {
	case cfg.DataDir == "":
		return nil, errors.New("local sandbox config: DataDir is empty")
	case cfg.RunnerPath == "":
		return nil, errors.New("local sandbox config: RunnerPath is empty")
	case cfg.Blobs == nil:
		return nil, errors.New("local sandbox config: Blobs is nil")
	case cfg.Completions == nil:
		return nil, errors.New("local sandbox config: Completions is nil")
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.EndedMemory <= 0 {
		cfg.EndedMemory = DefaultEndedMemory
	}
	if cfg.EndedRetention <= 0 {
		cfg.EndedRetention = DefaultEndedRetention
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Driver{cfg: cfg, log: cfg.Logger.With("component", "localsandbox"), live: map[string]*proc{}, held: map[string]sandbox.Handle{},
		ended: newEndedSet(cfg.EndedMemory, cfg.EndedRetention)}
	if info, err := os.Stat(cfg.RunnerPath); err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("%w: sandbox-runner %q is not an executable file (build it: make build)", sandbox.ErrUnavailable, cfg.RunnerPath)
	}
	switch cfg.Isolation {
	case "", sandbox.IsolationBwrap:
		d.cfg.Isolation = sandbox.IsolationBwrap
		name := cfg.BwrapPath
		if name == "" {
			name = "bwrap"
		}
		path, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("%w: bubblewrap (%s) is not installed; install it with `apt-get install bubblewrap` (or `make deps`), or pass --sandbox=process to run agents without isolation", sandbox.ErrUnavailable, name)
		}
		d.bwrap = path
		if d.cfg.Isolation == sandbox.IsolationBwrap && cfg.Images == nil {
			return nil, errors.New("local sandbox config: bwrap isolation runs each task's image and Images is nil (no image store); for development only, isolation bwrap-host runs on the host's root filesystem")
		}
	case sandbox.IsolationHostBwrap:
		name := cfg.BwrapPath
		if name == "" {
			name = "bwrap"
		}
		path, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("%w: bubblewrap (%s) is not installed; install it with `apt-get install bubblewrap` (or `make deps`)", sandbox.ErrUnavailable, name)
		}
		d.bwrap = path
		d.log.Warn("sandboxes run on the HOST's root filesystem (--sandbox=bwrap-host, development only): tasks' images are not used")
	case sandbox.IsolationProcess:
		d.log.Warn("sandbox isolation is OFF (--sandbox=process): agents run as plain processes on this host with the platform's user rights and network")
	default:
		return nil, fmt.Errorf("local sandbox config: isolation %q: want %q, %q or %q", cfg.Isolation, sandbox.IsolationBwrap, sandbox.IsolationHostBwrap, sandbox.IsolationProcess)
	}
	if err := os.MkdirAll(d.sandboxesDir(), 0o700); err != nil {
		return nil, fmt.Errorf("create sandboxes dir: %w", err)
	}
	return d, nil
}

// SandboxID is the sandbox id of a launch: derived from the launch id, so a
// repeated launch names the same sandbox.
func SandboxID(launchID string) string {
	sum := sha256.Sum256([]byte(launchID))
	return "local-" + hex.EncodeToString(sum[:10])
}

// Launch starts sandbox-runner for spec, or returns the sandbox already
// launched for spec.LaunchID (running, or ended within the remembered
// window; never a second process for it). When
// the process cannot be started, Launch still returns the handle and a
// FailedToStart completion is sent, so the slot is retried like any other.
func (d *Driver) Launch(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	if spec.LaunchID == "" {
		return sandbox.Handle{}, errors.New("launch: spec launch_id is empty")
	}
	id := SandboxID(spec.LaunchID)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return sandbox.Handle{}, errors.New("launch: driver closed")
	}
	if p, ok := d.live[id]; ok {
		return p.handle, nil
	}
	if h, ok := d.ended.get(id, time.Now()); ok {
		return h, nil
	}
	task, err := sandbox.ResolveLocal(ctx, spec.Task, d.cfg.Blobs)
	if err != nil {
		return sandbox.Handle{}, fmt.Errorf("launch %s: %w", spec.LaunchID, err)
	}
	spec.Task = task
	h := sandbox.Handle{ID: id, LaunchID: spec.LaunchID, RunID: spec.RunID, SlotID: spec.SlotID, StartedAt: time.Now().UTC()}
	log := d.log.With("sandbox_id", id, "launch_id", spec.LaunchID)
	if d.cfg.Isolation == sandbox.IsolationProcess {
		log.Warn("launching WITHOUT isolation (--sandbox=process): the agent runs as a plain process on this host")
	}
	p := &proc{handle: h, spec: spec, dir: filepath.Join(d.sandboxesDir(), id), done: make(chan struct{})}
	d.live[id] = p
	d.wg.Add(1)
	if err := d.start(p); err != nil {
		err = diskspace.Wrap(d.cfg.DataDir, err) // the sandbox dir is the platform's storage
		log.Error("sandbox failed to start", "err", err)
		reason := sandbox.FailedToStart
		if _, full := diskspace.As(err); full {
			reason = sandbox.OutOfSpace
			d.noteFull(err)
		}
		go d.finish(p, reason, -1, "sandbox-runner failed to start: "+err.Error())
		return h, nil
	}
	log.Info("sandbox launched", "pid", p.cmd.Process.Pid, "run_id", spec.RunID, "slot_id", spec.SlotID)
	go d.wait(p)
	return h, nil
}

// start materialises the sandbox dir and starts the runner in its own
// process group, killed by the kernel if the platform dies. Secrets reach it
// only through its environment, which holds nothing else of the platform's.
func (d *Driver) start(p *proc) error {
	if err := leftovers.RemoveAll(p.dir); err != nil { // a stale dir of a crashed platform
		return fmt.Errorf("clear sandbox dir: %w", err)
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("create sandbox dir: %w", err)
	}
	specJSON, err := json.Marshal(p.spec) // Secrets are json:"-"
	if err != nil {
		return fmt.Errorf("encode spec: %w", err)
	}
	specPath := filepath.Join(p.dir, "spec.json")
	if err := os.WriteFile(specPath, specJSON, 0o600); err != nil {
		return fmt.Errorf("write spec: %w", err)
	}
	output, err := os.OpenFile(filepath.Join(p.dir, runnerOutputFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create runner output: %w", err)
	}
	defer output.Close() // the child has its own copy
	args := []string{"--spec", specPath, "--work", filepath.Join(p.dir, "work"), "--out", filepath.Join(p.dir, "out"),
		"--isolation", d.cfg.Isolation}
	if d.cfg.AgentsDir != "" {
		args = append(args, "--agents-dir", d.cfg.AgentsDir)
	}
	if d.bwrap != "" {
		args = append(args, "--bwrap", d.bwrap)
	}
	bundles := d.cfg.AgentBundles
	if bundles == "" {
		bundles = agentbundle.DefaultDir()
	}
	args = append(args, "--agent-bundles", bundles)
	if d.cfg.ModelGatewayConfig != "" {
		args = append(args, "--model-gateway-config", d.cfg.ModelGatewayConfig)
	}
	imageArgs, err := d.imageArgs(p)
	if err != nil {
		return err
	}
	args = append(args, imageArgs...)
	cmd := exec.Command(d.cfg.RunnerPath, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, sandbox.SecretEnv(p.spec)...)
	cmd.Env = append(cmd.Env, gatewayKeyEnv(os.Environ())...)
	cmd.Stdout, cmd.Stderr = output, output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if d.cfg.Isolation == sandbox.IsolationBwrap && os.Geteuid() == 0 {
		// The runner's overlay and loop mounts live in a mount namespace
		// of its own: they vanish with it, whatever kills it.
		cmd.SysProcAttr.Unshareflags = syscall.CLONE_NEWNS
	}
	if err := cmd.Start(); err != nil {
		p.releaseImage()
		return err
	}
	p.cmd = cmd
	return nil
}

// gatewayKeyEnv picks the model gateway's keys out of the server's
// environment (sandbox.GatewayKeyEnvPrefix variables, which a hosted.api_key_env
// names): the runner gets nothing else of it, and takes and scrubs these
// before any phase starts.
func gatewayKeyEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, sandbox.GatewayKeyEnvPrefix) {
			out = append(out, kv)
		}
	}
	return out
}

// wait reaps the runner and finishes the sandbox.
func (d *Driver) wait(p *proc) {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.exited = true
	stopped := p.stopped
	p.mu.Unlock()
	// Anything the runner left in its process group goes with it.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	code, msg := exitStatus(err)
	reason := sandbox.Exited
	if stopped {
		reason, msg = sandbox.UserStopped, "stopped"
	} else if code != sandbox.ExitOK {
		msg = joinMessage(msg, tail(filepath.Join(p.dir, runnerOutputFile), 600))
	}
	d.finish(p, reason, code, msg)
}

// finish collects outputs, sends the completion, removes the sandbox dir and
// forgets the process.
func (d *Driver) finish(p *proc, reason sandbox.StopReason, code int, msg string) {
	defer d.wg.Done()
	defer close(p.done)
	defer p.releaseImage()
	ctx := context.Background()
	log := d.log.With("sandbox_id", p.handle.ID, "launch_id", p.spec.LaunchID)
	if reason != sandbox.FailedToStart && reason != sandbox.OutOfSpace {
		if err := d.collect(ctx, p); err != nil {
			log.Error("sandbox outputs not stored", "err", err)
			msg = joinMessage(msg, "outputs not stored: "+err.Error())
			if _, full := diskspace.As(err); full {
				d.noteFull(err)
			}
		}
	}
	if reason == sandbox.Exited && d.fullSince(p.handle.StartedAt) {
		// The attempt's writes — the runner's, the agent's, the verifier's
		// or its outputs' — may have failed for want of the platform's
		// space, so what it produced is not its true outcome.
		log.Warn("the data dir's filesystem was full while the sandbox ran; its attempt runs again once space returns", "exit_code", code)
		reason, msg = sandbox.OutOfSpace, joinMessage("the data dir's filesystem was full while the sandbox ran", msg)
	}
	c := sandbox.Completion{
		SandboxID: p.handle.ID, LaunchID: p.spec.LaunchID, Workspace: p.spec.Workspace, RunID: p.spec.RunID,
		SlotID: p.spec.SlotID, Generation: p.spec.Generation, Reason: reason, ExitCode: code, Message: msg,
		StartedAt: p.handle.StartedAt, StoppedAt: time.Now().UTC(),
	}
	if err := leftovers.RemoveAll(p.dir); err != nil {
		log.Warn("sandbox dir not removed", "err", err)
	}
	// Forget the process before announcing its end, so whoever handles the
	// completion no longer sees it in List.
	// It stays listed (as held) until its completion is sent: a send
	// that a full data dir slows or refuses must not look like a lost
	// sandbox to the watchdog meanwhile.
	d.mu.Lock()
	delete(d.live, p.handle.ID)
	d.held[p.handle.ID] = p.handle
	d.ended.add(p.handle, time.Now())
	d.mu.Unlock()
	if err := d.sendCompletion(ctx, p.handle, c); err != nil {
		log.Error("completion not sent; the watchdog will find the slot", "err", err)
	}
	log.Info("sandbox ended", "reason", reason, "exit_code", code)
}

// Bounds of the wait between tries of a completion the full data dir
// refused.
const (
	heldRetryMin = 100 * time.Millisecond
	heldRetryMax = 2 * time.Second
)

// sendCompletion sends the completion, trying a failed send four more
// times. A send the full data dir refuses is tried until space returns
// (the sandbox meanwhile stays listed as held), unless the driver closes:
// the completion is not lost to a full disk, only to the platform's end,
// whose restart settles the slot.
func (d *Driver) sendCompletion(ctx context.Context, h sandbox.Handle, c sandbox.Completion) error {
	body, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode completion: %w", err)
	}
	defer d.release(h.ID)
	wait := heldRetryMin
	warned := false
	for attempt := 0; ; attempt++ {
		err = d.cfg.Completions.Send(ctx, queue.Outgoing{Body: body})
		if err == nil {
			return nil
		}
		if _, full := diskspace.As(err); full && !d.isClosed() {
			if !warned {
				warned = true
				d.log.Warn("the data dir is full: holding the sandbox's completion until space returns", "sandbox_id", h.ID, "launch_id", h.LaunchID)
			}
			d.noteFull(err)
			time.Sleep(wait)
			wait = min(2*wait, heldRetryMax)
			continue
		}
		if attempt >= 4 {
			return err
		}
		time.Sleep(time.Duration(100<<attempt) * time.Millisecond)
	}
}

func (d *Driver) release(id string) {
	d.mu.Lock()
	delete(d.held, id)
	d.mu.Unlock()
}

func (d *Driver) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

func (d *Driver) fullSince(t time.Time) bool { return d.cfg.Space != nil && d.cfg.Space.FullSince(t) }

func (d *Driver) noteFull(err error) {
	if d.cfg.Space != nil {
		d.cfg.Space.Note(err)
	}
}

// Stop ends the sandbox: SIGTERM to the runner's process group, SIGKILL after
// the grace period. It returns once the sandbox has ended (its completion,
// reason UserStopped, sent). Stopping an ended sandbox does nothing.
func (d *Driver) Stop(ctx context.Context, id string) error {
	d.mu.Lock()
	p, live := d.live[id]
	_, ended := d.ended.get(id, time.Now())
	d.mu.Unlock()
	if !live {
		if ended {
			return nil
		}
		return fmt.Errorf("stop %s: %w", id, sandbox.ErrNotFound)
	}
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(d.cfg.StopGrace):
	case <-ctx.Done():
	}
	p.signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", id, ctx.Err())
	}
}

// signal marks the sandbox stopped and signals its process group, unless the
// process has been reaped (its pid could then belong to someone else).
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.cmd != nil && !p.exited {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// Ended implements sandbox.Driver. The driver itself sends each sandbox's
// completion, durably, as its process exits, and no sandbox outlives the
// driver's process (the restart reconcile settles those of a crashed one),
// so it keeps no record of ended sandboxes.
func (d *Driver) Ended(context.Context, string) ([]sandbox.Completion, error) { return nil, nil }

// List returns the run's live sandboxes, oldest first.
func (d *Driver) List(ctx context.Context, runID string) ([]sandbox.Handle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []sandbox.Handle
	for _, p := range d.live {
		if p.handle.RunID == runID {
			out = append(out, p.handle)
		}
	}
	for _, h := range d.held {
		if h.RunID == runID {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b sandbox.Handle) int { return a.StartedAt.Compare(b.StartedAt) })
	return out, nil
}

// Close stops every live sandbox, waits until all have ended and lets go of
// the owner lock Recover took. Launch fails afterwards.
func (d *Driver) Close() error {
	d.mu.Lock()
	d.closed = true
	ids := make([]string, 0, len(d.live))
	for id := range d.live {
		ids = append(ids, id)
	}
	d.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Go(func() { errs[i] = d.Stop(context.Background(), id) })
	}
	wg.Wait()
	d.wg.Wait()
	d.mu.Lock()
	if d.owner != nil {
		errs = append(errs, d.owner.Close())
		d.owner = nil
	}
	d.mu.Unlock()
	return errors.Join(errs...)
}

func (d *Driver) sandboxesDir() string { return filepath.Join(d.cfg.DataDir, "sandboxes") }

package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The image's ENTRYPOINT, started as Harbor starts its main container.
// Harbor's compose base gives the main service the command
// `sh -c "sleep infinity"`, so the container's first process is the
// image's entrypoint with those arguments: an entrypoint that starts a
// server, or writes a file from [environment].env, before it execs its
// arguments has done so before the agent starts, and what it started keeps
// running for the whole trial. An image without an entrypoint only sleeps,
// which the pod's own init stands in for. It starts after the sidecar
// services main depends on, as compose starts main after them.

// EntrypointLogFile is the entrypoint's output, kept with the attempt's
// artifacts beside runner.log.
const EntrypointLogFile = "entrypoint.log"

// entrypointReapTimeout bounds the wait for the entrypoint's process once
// the pod is gone (its kill ended it).
const entrypointReapTimeout = 10 * time.Second

// maxEntrypointOutput bounds the entrypoint's kept output.
const maxEntrypointOutput = 1 << 20

// harborKeepAlive is the command of Harbor's main service
// (src/harbor/environments/docker/docker-compose-base.yaml).
var harborKeepAlive = []string{"sh", "-c", "sleep infinity"}

// entrypointProc is the image's entrypoint running in the trial's pod.
type entrypointProc struct {
	argv []string
	cmd  *exec.Cmd
	// done is closed once the process has exited; err is its Wait's.
	done    chan struct{}
	err     error
	release func()
	out     *cappedFile
}

// startEntrypoint starts the image's entrypoint in the pod just started,
// as the environment's own process: the image's user, its environment and
// [environment].env, never the agent's secrets. It returns at once; the
// entrypoint runs until the pod ends.
func (sv services) startEntrypoint() error {
	t := sv.t
	if t.image == nil || t.image.pod == nil || len(t.image.img.Entrypoint) == 0 || t.entry != nil {
		return nil
	}
	base, err := sv.environmentBase()
	if err != nil {
		return fmt.Errorf("image entrypoint: %w", err)
	}
	pc, err := sv.environmentCommand(base)
	if err != nil {
		return fmt.Errorf("image entrypoint: %w", err)
	}
	pc.argv = append(slices.Clone(t.image.img.Entrypoint), harborKeepAlive...)
	pc.script = ""
	out, err := newCappedFile(filepath.Join(t.out, ArtifactsDir, EntrypointLogFile), maxEntrypointOutput)
	if err != nil {
		return fmt.Errorf("image entrypoint: %w", err)
	}
	l, err := t.image.launch(pc, nil, out, out)
	if err != nil {
		_ = out.Close()
		return fmt.Errorf("image entrypoint %q: %w", strings.Join(pc.argv, " "), err)
	}
	e := &entrypointProc{argv: pc.argv, cmd: l.cmd, done: make(chan struct{}), release: l.release, out: out}
	go func() {
		e.err = e.cmd.Wait()
		close(e.done)
	}()
	t.entry = e
	t.log.Info("image entrypoint started, as Harbor starts its container", "argv", strings.Join(e.argv, " "),
		"user", userOrRoot(t.image.img.User), "log", ArtifactsDir+"/"+EntrypointLogFile)
	return nil
}

// startEnvironment brings the trial's environment up, once, as Harbor's
// environment start (`docker compose up`, then its healthcheck) does
// before any step or agent: the pod, the sidecar services in depends_on
// order (services.go), main's entrypoint once what main depends on is met,
// then [environment.healthcheck] (healthcheck.go).
func (sv services) startEnvironment(ctx context.Context, rig *agentRig) error {
	t := sv.t
	if t.envStarted {
		return nil
	}
	t.envStarted = true
	if t.image != nil && t.image.pod == nil {
		if err := t.imageSandbox().startPod(rig); err != nil {
			return err
		}
	}
	if err := sv.startServices(ctx); err != nil {
		return err
	}
	if err := sv.startEntrypoint(); err != nil {
		return err
	}
	base, err := sv.environmentBase()
	if err != nil {
		return err
	}
	return sv.runHealthcheck(ctx, base)
}

// environmentBase is the sandbox settings of the environment's own
// processes (the entrypoint, the healthcheck): the agent phase's network
// and mounts, before environmentCommand makes them the environment's.
func (sv services) environmentBase() (phaseCommand, error) {
	t := sv.t
	base := phaseCommand{mounts: t.agentMounts(), tmpDir: t.host.Tmp, workDir: t.host.App,
		network: networkAllowed(t.phaseNetwork(t.task.Config.Agent.NetworkMode))}
	err := t.imageSandbox().imagePhase(&base, roleAgent)
	return base, err
}

// environmentCommand is base (a phase's sandbox settings) run as the
// environment's own process — the healthcheck, the entrypoint: the image's
// user and environment plus [environment].env, none of the agent's.
func (sv services) environmentCommand(base phaseCommand) (phaseCommand, error) {
	t := sv.t
	pc := base
	env := baseEnv(t.seen.Tmp, t.seen.Tmp, t.seen.App)
	maps.Copy(env, t.task.Config.Environment.Env)
	pc.env = envList(env)
	pc.role = t.services().healthcheckRole(pc.role)
	if t.image == nil {
		return pc, nil
	}
	u, err := resolveUser(t.image.root(), t.image.img.User)
	if err != nil {
		return pc, err
	}
	pc.user = u
	pc.env = imageEnv(t.image.img, u, pc.env)
	return pc, nil
}

// entrypointGone reports, as an error naming the task, an entrypoint that
// has exited: under Docker its container would have stopped with it, and
// every later `docker exec` of Harbor's trial fails.
func (sv services) entrypointGone() error {
	t := sv.t
	if t.entry == nil {
		return nil
	}
	select {
	case <-t.entry.done:
	default:
		return nil
	}
	code := -1
	var exit *exec.ExitError
	if errors.As(t.entry.err, &exit) {
		code = exit.ExitCode()
	} else if t.entry.err == nil {
		code = 0
	}
	return fmt.Errorf("task %s: the image's entrypoint %q exited with code %d, which under Docker stops the container Harbor runs the trial in; its output: %s",
		t.spec.Task.Name, strings.Join(t.entry.argv, " "), code, lastOutput(t.entry.out.f.Name()))
}

// stopEntrypoint waits for the entrypoint once the pod (which killed it)
// is gone, and closes its log.
func (sv services) stopEntrypoint(ctx context.Context) {
	t := sv.t
	e := t.entry
	if e == nil {
		return
	}
	t.entry = nil
	select {
	case <-e.done:
	case <-ctx.Done():
		_ = e.cmd.Process.Kill()
		<-e.done
	}
	if e.release != nil {
		e.release()
	}
	_ = e.out.Close()
	if err := t.redact.file(e.out.f.Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.log.Warn("entrypoint log not redacted", "err", err)
	}
}

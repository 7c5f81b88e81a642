package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/compose"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/slirp"
)

// Sidecar services (a task's environment/docker-compose.yaml), run as the
// services of an ECS awsvpc task or a Kubernetes pod are: each service is a
// pod of its own (pod.go) over its own image and overlay, with its own PID,
// mount, IPC, UTS and cgroup namespaces, its own cgroup and the same
// confinement as the main pod (masked /proc, seccomp, Docker's default
// capabilities, pod-init as pid 1), but it joins the main pod's network
// namespace instead of having one: every service reaches every other on
// the shared loopback, by name through /etc/hosts (each name is 127.0.0.1),
// as compose's network lets them reach each other by name. Services start
// in depends_on order once the main pod runs (its network namespace is
// theirs), a service_healthy dependency waiting for the service's compose
// healthcheck; the agent starts once main's own dependencies are met. They
// run until the trial's environment ends, then go with the main pod:
// nothing of them survives the attempt.

// ServiceImage is a sidecar service's unpacked image (the sandbox
// protocol's, sandbox.ServiceImage).
type ServiceImage = sandbox.ServiceImage

// LoadServiceImages reads the services' images written by
// WriteServiceImages and checks each.
func LoadServiceImages(file string) (map[string]ServiceImage, error) {
	return sandbox.LoadServiceImages(file)
}

// serviceStopTimeout bounds the wait for a service's process to be reaped
// once its pod is gone.
const serviceStopTimeout = 10 * time.Second

// sidecar is one running service.
type sidecar struct {
	svc   compose.Service
	dir   string // its work dir: layer, logs
	iso   *imageIsolation
	user  imageUser
	env   []string
	stdio []*cappedFile // its pod's bwrap messages, its stdout and stderr
	// exited is closed once the service's process has ended; exit is
	// then its exit code.
	exited chan struct{}
	exit   int
	// running: its process was started (exited will close).
	running bool
	// healthy: its healthcheck passed once (Docker keeps a healthy
	// container healthy until `retries` later failures; a dependency
	// waits only for the first).
	healthy bool
}

// startServices starts the task's sidecar services, in depends_on order,
// into the running main pod's network namespace, and waits for what main
// depends on. Nothing when the task has none.
func (sv services) startServices(ctx context.Context) error {
	t := sv.t
	p := t.task.Compose
	if p == nil || len(p.Sidecars) == 0 {
		return nil
	}
	task := sv.healthcheckTaskName()
	if t.iso.name() == IsolationContainer {
		return t.services().nameContainerServices(t.task.Sidecars())
	}
	if t.image == nil || t.image.pod == nil {
		return fmt.Errorf("task %s: sidecar services run only in the image sandbox (--isolation=bwrap), which this trial does not use", task)
	}
	names := make([]string, 0, len(p.Sidecars))
	for _, s := range p.Sidecars {
		names = append(names, s.Name)
	}
	if err := writeInRoot(t.layer.root, "/etc/hosts", serviceHosts(names)); err != nil {
		return err
	}
	netns := fmt.Sprintf("/proc/%d/ns/net", t.image.pod.pid)
	for _, svc := range p.Sidecars {
		if err := sv.waitDependencies(ctx, svc.Name, svc.DependsOn); err != nil {
			return err
		}
		if err := sv.startSidecar(svc, netns, names); err != nil {
			return fmt.Errorf("task %s: service %s: %w", task, svc.Name, err)
		}
	}
	if err := sv.waitDependencies(ctx, compose.MainService, p.Main.DependsOn); err != nil {
		return err
	}
	t.log.Info("services started", "services", strings.Join(names, ","))
	return nil
}

// serviceHosts is an /etc/hosts naming every service on the shared
// loopback.
func serviceHosts(names []string) string {
	return "127.0.0.1\tlocalhost " + strings.Join(names, " ") + "\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + sandboxHostname + "\n"
}

// startSidecar starts one service's pod over its own overlay and image and
// its process in it.
func (sv services) startSidecar(svc compose.Service, netns string, names []string) error {
	t := sv.t
	img, ok := t.opts.Services[svc.Name]
	if !ok {
		return errors.New("no image was given for it (sidecar images are pinned at sync and handed to the runner with --services)")
	}
	if svc.WorkingDir != "" {
		img.WorkingDir = svc.WorkingDir
	}
	if svc.User != "" {
		img.User = svc.User
	}
	argv := img.Entrypoint
	cmd := img.Cmd
	if svc.Entrypoint != nil {
		// compose: a service's entrypoint drops its image's CMD too.
		argv, cmd = svc.Entrypoint, nil
	}
	if svc.Command != nil {
		cmd = svc.Command
	}
	argv = append(append([]string(nil), argv...), cmd...)
	if len(argv) == 0 {
		return errors.New("it has no command: neither its compose entry nor its image names one")
	}
	sum := sha256.Sum256([]byte(svc.Name))
	sc := &sidecar{svc: svc, dir: filepath.Join(t.work, "svc-"+hex.EncodeToString(sum[:4])), exited: make(chan struct{})}
	t.sidecars = append(t.sidecars, sc) // stopped with the others whatever happens next
	if err := os.MkdirAll(sc.dir, 0o700); err != nil {
		return err
	}
	// No filesystem of its own: its writes go to the runner's disk, under
	// the attempt's work dir (removed with it).
	l, err := newLayer(filepath.Join(sc.dir, "layer"), img.Lowers(), 0, t.opts.Overlay)
	if err != nil {
		return err
	}
	l.detach = true
	sc.iso = &imageIsolation{bwrap: t.image.bwrap, img: img.Image, self: t.image.self, layer: l,
		policy: t.image.policy, rootless: t.image.rootless, joinNet: netns}
	if sc.user, err = resolveUser(l.root, img.User); err != nil {
		return err
	}
	if !sc.user.root() {
		return fmt.Errorf("its user %q is not root: a sidecar runs as root only (it joins the main pod's network namespace, which a user namespace of its own could not)", sc.user.spec)
	}
	if err := sc.iso.prepareRoot(sc.user); err != nil {
		return err
	}
	if err := writeInRoot(l.root, "/etc/hosts", serviceHosts(names)); err != nil {
		return err
	}
	if err := writeInRoot(l.root, "/etc/resolv.conf", "nameserver "+slirp.DNS+"\n"); err != nil {
		return err
	}
	if _, err := os.Stat(t.imageSandbox().maskFile()); err != nil {
		return fmt.Errorf("confinement mask file: %w", err)
	}
	var cg *cgroup
	if !t.rootless {
		var notes []string
		cg, notes = newCgroup(cgroupRoot, t.cgroupName("svc-"+hex.EncodeToString(sum[:4])), t.limits())
		for _, n := range notes {
			t.log.Info("service limits", "service", svc.Name, "note", n)
		}
	}
	for _, name := range []string{"bwrap.log", "stdout.txt", "stderr.txt"} {
		f, err := newCappedFile(filepath.Join(sc.dir, name), 1<<20)
		if err != nil {
			_ = cg.remove()
			return err
		}
		sc.stdio = append(sc.stdio, f)
	}
	vols, err := sv.volumeMounts(svc, sc.iso.root())
	if err != nil {
		_ = cg.remove()
		return err
	}
	retries, err := sc.iso.startPod(vols, t.imageSandbox().maskFile(), cg, false, sc.stdio[0])
	for _, failure := range retries {
		t.log.Warn("a service's sandbox failed to set up; started it again", "service", svc.Name, "failure", failure)
	}
	if err != nil {
		_ = cg.remove()
		return fmt.Errorf("%w: %s", err, lastLine(filepath.Join(sc.dir, "bwrap.log")))
	}
	sc.env = imageEnv(img.Image, sc.user, envList(svc.Environment))
	pc := phaseCommand{argv: argv, env: sc.env, user: sc.user}
	proc, err := sc.iso.launch(pc, nil, sc.stdio[1], sc.stdio[2])
	if err != nil {
		return err
	}
	sc.running = true
	go func() {
		err := proc.cmd.Wait()
		proc.release()
		sc.exit = exitCode(err)
		close(sc.exited)
	}()
	t.log.Info("service started", "service", svc.Name, "image", img.Ref, "command", strings.Join(argv, " "))
	return nil
}

// waitDependencies waits until every dependency of the service who is met:
// a started service is (services start in order); a service_healthy one
// once its healthcheck passes.
func (sv services) waitDependencies(ctx context.Context, who string, deps []compose.Dependency) error {
	for _, d := range deps {
		if d.Condition != compose.ConditionHealthy {
			continue
		}
		sc := sv.sidecar(d.Service)
		if sc == nil {
			return fmt.Errorf("task %s: service %s depends on %s, which is not running", sv.healthcheckTaskName(), who, d.Service)
		}
		if err := sv.waitHealthy(ctx, sc); err != nil {
			return fmt.Errorf("task %s: service %s depends on %s being healthy: %w", sv.healthcheckTaskName(), who, d.Service, err)
		}
	}
	return nil
}

func (sv services) sidecar(name string) *sidecar {
	t := sv.t
	for _, sc := range t.sidecars {
		if sc.svc.Name == name {
			return sc
		}
	}
	return nil
}

// waitHealthy runs the service's compose healthcheck until it passes, as
// Docker does: failures in the start period do not count (checks every
// start_interval), then `retries` consecutive failures (checks every
// interval) make it unhealthy. Unlike Docker, the first check runs at
// once. A service whose process ends first is an error with its output.
func (sv services) waitHealthy(ctx context.Context, sc *sidecar) error {
	t := sv.t
	hc := sc.svc.Healthcheck
	if sc.healthy || hc == nil {
		return nil
	}
	started := time.Now()
	failures := 0
	for attempt := 1; ; attempt++ {
		select {
		case <-sc.exited:
			return fmt.Errorf("its process exited with code %d before it was healthy; its output: %s", sc.exit, sc.output())
		default:
		}
		inStart := time.Since(started) < hc.StartPeriod
		pc := phaseCommand{argv: hc.Test, env: sc.env, user: sc.user}
		out, err := runPhase(ctx, sc.iso, phase{name: "service " + sc.svc.Name + " healthcheck", cmd: pc, timeout: hc.Timeout,
			stdout: filepath.Join(sc.dir, "health-stdout.txt"), stderr: filepath.Join(sc.dir, "health-stderr.txt")})
		if err != nil {
			return err
		}
		if out.Canceled {
			return fmt.Errorf("runner stopped: %w", context.Cause(ctx))
		}
		if out.ExitCode == 0 && !out.TimedOut {
			sc.healthy = true
			t.log.Info("service healthy", "service", sc.svc.Name, "attempts", attempt, "after", time.Since(started).Round(time.Millisecond).String())
			return nil
		}
		result := fmt.Sprintf("exit code %d", out.ExitCode)
		if out.TimedOut {
			result = fmt.Sprintf("timed out after %s", hc.Timeout)
		}
		wait := hc.StartInterval
		if !inStart {
			failures++
			wait = hc.Interval
			if failures >= max(hc.Retries, 1) {
				return fmt.Errorf("unhealthy: its healthcheck %q failed %d times in a row after its start period of %s; the last %s, output: %s",
					strings.Join(hc.Test, " "), failures, hc.StartPeriod, result,
					lastOutput(filepath.Join(sc.dir, "health-stdout.txt"), filepath.Join(sc.dir, "health-stderr.txt")))
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("runner stopped: %w", context.Cause(ctx))
		case <-sc.exited:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// output is the tail of the service's own stdout and stderr.
func (sc *sidecar) output() string {
	return lastOutput(filepath.Join(sc.dir, "stdout.txt"), filepath.Join(sc.dir, "stderr.txt"))
}

// stopServices ends every service (its pod, process tree, cgroup and
// overlay). It is safe to call more than once.
func (sv services) stopServices() {
	t := sv.t
	var wg sync.WaitGroup
	for _, sc := range t.sidecars {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sc.iso == nil {
				return
			}
			if err := sc.iso.stopPod(); err != nil {
				t.log.Warn("a service's pod did not stop cleanly", "service", sc.svc.Name, "err", err)
			}
			if sc.running {
				select {
				case <-sc.exited:
				case <-time.After(serviceStopTimeout):
					t.log.Warn("a service's process was not reaped in time", "service", sc.svc.Name)
				}
			}
			for _, f := range sc.stdio {
				_ = f.Close()
			}
			if err := sc.iso.layer.close(); err != nil {
				t.log.Warn("a service's writable layer was not fully removed", "service", sc.svc.Name, "err", err)
			}
		}()
	}
	wg.Wait()
	if len(t.sidecars) > 0 {
		t.log.Info("services stopped: no process of them is left", "services", len(t.sidecars))
	}
	t.sidecars = nil
}

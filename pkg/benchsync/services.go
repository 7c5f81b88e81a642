package benchsync

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/compose"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// Sidecar services (a task's environment/docker-compose.yaml): each
// service's image is pinned at sync as the task's own is — an `image` is
// resolved to its digest and warmed, a `build` is built from its context
// in environment/ — and kept in the task's environment record by service
// name. A service whose image cannot be had makes the task unavailable,
// naming the task, the file, the service's field and the cause.

// sidecarReason says why a task with sidecar services cannot run on this
// platform ("" when it has none, or the platform runs them).
func (s *fetcher) sidecarReason(name string, task harbor.Task) string {
	if v := volumeUsers(task); len(v) > 0 && (s.envs == nil || !s.envs.Volumes) {
		return fmt.Sprintf("task %s: %s: volumes of services %s: this platform's sandboxes mount no compose volumes", name, harbor.ComposeFile, strings.Join(v, ", "))
	}
	names := task.Sidecars()
	if len(names) == 0 || (s.envs != nil && s.envs.Services) {
		return ""
	}
	why := "this platform prepares no task images"
	if s.envs != nil {
		why = "this platform's sandboxes run no sidecar services"
	}
	return fmt.Sprintf("task %s: %s: services beside the main container (%s): %s", name, harbor.ComposeFile, strings.Join(names, ", "), why)
}

// volumeUsers names the task's services (main included) that mount a
// compose volume.
func volumeUsers(task harbor.Task) []string {
	if task.Compose == nil {
		return nil
	}
	var out []string
	for _, svc := range append([]compose.Service{task.Compose.Main}, task.Compose.Sidecars...) {
		if len(svc.Volumes) > 0 {
			out = append(out, svc.Name)
		}
	}
	return out
}

// services pins the images of the task's sidecar services into env.
func (p *imagePrep) services(ctx context.Context, name, dir string, task harbor.Task, env benchmark.Environment) (benchmark.Environment, error) {
	if len(task.Compose.Sidecars) == 0 {
		return env, nil
	}
	env.Services = map[string]benchmark.Environment{}
	envDir := filepath.Join(dir, harbor.EnvironmentDir)
	for _, svc := range task.Compose.Sidecars {
		var se benchmark.Environment
		switch {
		case svc.Build != nil:
			label := fmt.Sprintf("%s: services.%s.build", harbor.ComposeFile, svc.Name)
			ctxDir := filepath.Join(envDir, filepath.FromSlash(svc.Build.Context))
			var err error
			se, err = p.buildAt(ctx, name, label, ctxDir, filepath.Join(ctxDir, filepath.FromSlash(svc.Build.Dockerfile)), task.Config.Environment.BuildTimeoutSec, benchmark.Environment{Source: benchmark.ImageBuild})
			if err != nil {
				return env, err
			}
		default:
			se = benchmark.Environment{Source: benchmark.ImagePull, Image: svc.Image}
			pinned, err := p.resolve(ctx, svc.Image)
			if err != nil {
				if ctx.Err() != nil {
					return env, ctx.Err()
				}
				se.Unavailable = fmt.Sprintf("task %s: %s: services.%s.image: %s: %v", name, harbor.ComposeFile, svc.Name, svc.Image, err)
			} else {
				se.Pinned, se.Digest = pinned, digestOf(pinned)
			}
		}
		if se.Unavailable == "" {
			if err := p.warm(ctx, name, &se); err != nil {
				return env, err
			}
			if se.Unavailable != "" {
				se.Unavailable = fmt.Sprintf("%s (service %s of %s)", se.Unavailable, svc.Name, harbor.ComposeFile)
			}
		}
		if se.Unavailable != "" {
			env.Unavailable = se.Unavailable
			return env, nil
		}
		se.Run = serviceRun(svc)
		env.Services[svc.Name] = se
		env.ServiceOrder = append(env.ServiceOrder, svc.Name)
	}
	env.DependsOn = dependencies(task.Compose.Main.DependsOn)
	return env, nil
}

// serviceRun is the manifest's record of how svc runs.
func serviceRun(svc compose.Service) *benchmark.ServiceRun {
	r := &benchmark.ServiceRun{Entrypoint: svc.Entrypoint, Command: svc.Command, Environment: svc.Environment,
		WorkingDir: svc.WorkingDir, User: svc.User, DependsOn: dependencies(svc.DependsOn)}
	if hc := svc.Healthcheck; hc != nil {
		r.Healthcheck = &benchmark.ServiceHealthcheck{Test: hc.Test, IntervalMS: hc.Interval.Milliseconds(), TimeoutMS: hc.Timeout.Milliseconds(),
			StartPeriodMS: hc.StartPeriod.Milliseconds(), StartIntervalMS: hc.StartInterval.Milliseconds(), Retries: hc.Retries}
	}
	return r
}

func dependencies(deps []compose.Dependency) []benchmark.ServiceDependency {
	var out []benchmark.ServiceDependency
	for _, d := range deps {
		out = append(out, benchmark.ServiceDependency{Service: d.Service, Condition: d.Condition})
	}
	return out
}

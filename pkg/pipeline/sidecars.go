package pipeline

import (
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Sidecars are the task's sidecar services as a sandbox spec carries them
// (in start order) and what the task's own container depends on, from the
// manifest's record of its compose file; none for a task without services
// or a manifest synced before services were recorded with their run keys.
func Sidecars(env *benchmark.Environment) ([]sandbox.Sidecar, []sandbox.Dependency) {
	if env == nil || len(env.Services) == 0 {
		return nil, nil
	}
	var out []sandbox.Sidecar
	for _, name := range env.ServiceOrder {
		svc, ok := env.Services[name]
		if !ok || svc.Run == nil {
			continue
		}
		r := svc.Run
		sc := sandbox.Sidecar{Name: name, Image: svc.Pinned, Entrypoint: r.Entrypoint, Command: r.Command,
			Environment: r.Environment, WorkingDir: r.WorkingDir, User: r.User, DependsOn: deps(r.DependsOn)}
		if hc := r.Healthcheck; hc != nil {
			sc.Healthcheck = &sandbox.Healthcheck{Test: hc.Test, Interval: ms(hc.IntervalMS), Timeout: ms(hc.TimeoutMS),
				StartPeriod: ms(hc.StartPeriodMS), StartInterval: ms(hc.StartIntervalMS), Retries: hc.Retries}
		}
		out = append(out, sc)
	}
	return out, deps(env.DependsOn)
}

func deps(in []benchmark.ServiceDependency) []sandbox.Dependency {
	var out []sandbox.Dependency
	for _, d := range in {
		out = append(out, sandbox.Dependency{Service: d.Service, Condition: d.Condition})
	}
	return out
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

package ecssandbox

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Sidecar services (a task's environment/docker-compose.yaml) are
// containers of the attempt's one task definition, the shape compose's
// services have locally (one network, separate filesystems and processes):
//
//   - Each service is a container "service-<name>" over its pinned image
//     (through the pull-through mirrors, as the task's own), with compose's
//     entrypoint, command, environment, working_dir and user. It is not
//     essential: as under compose, a service that exits does not end the
//     attempt by itself; the task container's end stops every container.
//   - depends_on becomes dependsOn: service_started → START,
//     service_healthy → HEALTHY (on the service's healthCheck, compose's
//     healthcheck). The task container depends on what compose's main
//     depends on, so ECS starts the runner only once they are met.
//   - Fargate's awsvpc network gives every container of the task the same
//     network namespace: they reach each other on localhost. ECS's
//     extraHosts and hostname are not supported in awsvpc mode, so the
//     runner in the task container names the services itself (each
//     127.0.0.1 in the container's /etc/hosts, written in place).
//   - Limits: every container gets the task's own cpus and memory_mb (as
//     each local service does), and the task's size holds them all.

// serviceContainerPrefix starts a sidecar's container name; it keeps a
// service from taking the name of the platform's own containers.
const serviceContainerPrefix = "service-"

// ServiceContainer is the container name of the sidecar service name.
func ServiceContainer(name string) string { return serviceContainerPrefix + name }

// ecsContainerName is what ECS allows in a container name.
var ecsContainerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)

// ECS's bounds on a container health check, in seconds (retries a count).
const (
	minHealthInterval, maxHealthInterval = 5, 300
	minHealthTimeout, maxHealthTimeout   = 2, 60
	minHealthRetries, maxHealthRetries   = 1, 10
	maxHealthStartPeriod                 = 300
)

// CheckSidecars reports why the sidecars cannot be containers of a
// Fargate task definition, naming the compose key ("" when they can):
// a service name ECS does not allow in a container name, a healthcheck
// outside ECS's bounds, a depends_on condition with no ECS equivalent.
// Sync makes such a task unavailable with it; Launch refuses it too.
func CheckSidecars(sidecars []sandbox.Sidecar, mainDeps []sandbox.Dependency) string {
	for _, sc := range sidecars {
		if !ecsContainerName.MatchString(ServiceContainer(sc.Name)) {
			return fmt.Sprintf("services.%s: the service name must be letters, digits, '-' and '_' on Fargate (an ECS container name)", sc.Name)
		}
		if _, err := dependencies(sc.DependsOn); err != nil {
			return fmt.Sprintf("services.%s.depends_on: %v", sc.Name, err)
		}
		if _, why := healthCheck(sc.Healthcheck); why != "" {
			return fmt.Sprintf("services.%s.healthcheck.%s", sc.Name, why)
		}
	}
	if _, err := dependencies(mainDeps); err != nil {
		return fmt.Sprintf("services.main.depends_on: %v", err)
	}
	return ""
}

// dependencies maps compose's depends_on onto ECS's dependsOn.
func dependencies(deps []sandbox.Dependency) ([]types.ContainerDependency, error) {
	var out []types.ContainerDependency
	for _, d := range deps {
		var cond types.ContainerCondition
		switch d.Condition {
		case sandbox.ConditionStarted:
			cond = types.ContainerConditionStart
		case sandbox.ConditionHealthy:
			cond = types.ContainerConditionHealthy
		default:
			return nil, fmt.Errorf("%s: condition %q has no ECS dependsOn equivalent here (want %s or %s)", d.Service, d.Condition, sandbox.ConditionStarted, sandbox.ConditionHealthy)
		}
		out = append(out, types.ContainerDependency{ContainerName: aws.String(ServiceContainer(d.Service)), Condition: cond})
	}
	return out, nil
}

// healthCheck maps a compose healthcheck onto ECS's: CMD-SHELL for
// compose's shell form, CMD otherwise, durations rounded up to whole
// seconds. why names the key and ECS's bound when it does not fit.
// An interval under 5 s or a timeout under 2 s (ECS's minimums) is raised
// to them; retries over ECS's 10 lengthen the start period instead. compose's start_interval has no ECS counterpart: during the
// start period ECS checks every interval.
func healthCheck(hc *sandbox.Healthcheck) (*types.HealthCheck, string) {
	if hc == nil {
		return nil, ""
	}
	secs := func(d time.Duration) int { return int(math.Ceil(d.Seconds())) }
	interval, timeout, start := secs(hc.Interval), secs(hc.Timeout), secs(hc.StartPeriod)
	switch {
	case len(hc.Test) == 0:
		return nil, "test: empty"
	case interval > maxHealthInterval:
		return nil, fmt.Sprintf("interval: %s is over what ECS allows (%d s)", hc.Interval, maxHealthInterval)
	case timeout > maxHealthTimeout:
		return nil, fmt.Sprintf("timeout: %s is over what ECS allows (%d s)", hc.Timeout, maxHealthTimeout)
	case hc.Retries < minHealthRetries:
		return nil, fmt.Sprintf("retries: %d is under what ECS allows (%d)", hc.Retries, minHealthRetries)
	}
	// Below ECS's minimum, the check runs at ECS's minimum: a check that
	// compose would run more often is only slower to pass or fail, and
	// a longer timeout fails no check compose passes.
	interval, timeout = max(interval, minHealthInterval), max(timeout, minHealthTimeout)
	// Over ECS's 10 retries, the failures beyond them move into the start
	// period (where failures do not count), so the service gets as long
	// to become healthy as compose gives it: what a dependency waits for.
	retries := hc.Retries
	if retries > maxHealthRetries {
		start += (retries - maxHealthRetries) * interval
		retries = maxHealthRetries
	}
	if start > maxHealthStartPeriod {
		return nil, fmt.Sprintf("start_period: %s, with the retries beyond ECS's %d moved into it (%d s), is over what ECS allows (%d s)", hc.StartPeriod, maxHealthRetries, start, maxHealthStartPeriod)
	}
	cmd := append([]string{"CMD"}, hc.Test...)
	if len(hc.Test) == 3 && hc.Test[0] == "sh" && hc.Test[1] == "-c" {
		cmd = []string{"CMD-SHELL", hc.Test[2]}
	}
	out := &types.HealthCheck{Command: cmd, Interval: aws.Int32(int32(interval)), Timeout: aws.Int32(int32(timeout)), Retries: aws.Int32(int32(retries))}
	if start > 0 {
		out.StartPeriod = aws.Int32(int32(start))
	}
	return out, ""
}

// sidecarContainers are the container definitions of the spec's sidecars
// (each limited to cpu units and mem MiB) and the task container's
// dependencies on them.
func (d *Driver) sidecarContainers(spec sandbox.Spec, logs func(string) *types.LogConfiguration, cpu, mem int) ([]types.ContainerDefinition, []types.ContainerDependency, error) {
	if why := CheckSidecars(spec.Sidecars, spec.MainDependsOn); why != "" {
		return nil, nil, fmt.Errorf("task %s: environment/docker-compose.yaml: %s", spec.Task.Name, why)
	}
	var defs []types.ContainerDefinition
	for _, sc := range spec.Sidecars {
		if !isDigestRef(sc.Image) {
			return nil, nil, fmt.Errorf("task %s: service %s: image %q is not pinned to a digest (a sync pins every sidecar image)", spec.Task.Name, sc.Name, sc.Image)
		}
		deps, _ := dependencies(sc.DependsOn)
		hc, _ := healthCheck(sc.Healthcheck)
		name := ServiceContainer(sc.Name)
		c := types.ContainerDefinition{
			Name: aws.String(name), Image: aws.String(PullRef(sc.Image, d.cfg.Mirrors)), Essential: aws.Bool(false),
			EntryPoint: sc.Entrypoint, Command: sc.Command, DependsOn: deps, HealthCheck: hc,
			Cpu: int32(cpu), Memory: aws.Int32(int32(mem)), LogConfiguration: logs(name),
		}
		if sc.WorkingDir != "" {
			c.WorkingDirectory = aws.String(sc.WorkingDir)
		}
		if sc.User != "" {
			c.User = aws.String(sc.User)
		}
		// Sorted, so equal services hash to one family.
		for _, k := range slices.Sorted(maps.Keys(sc.Environment)) {
			c.Environment = append(c.Environment, types.KeyValuePair{Name: aws.String(k), Value: aws.String(sc.Environment[k])})
		}
		defs = append(defs, c)
	}
	mainDeps, _ := dependencies(spec.MainDependsOn)
	return defs, mainDeps, nil
}

// NoSidecarCommands is why a task that needs the runner to act inside a
// sidecar service (a collect hook there, an artifact copied out of it)
// does not run on Fargate: each service is a container of its own, which
// the runner in the task container cannot enter.
const NoSidecarCommands = "on the Fargate sandboxes a sidecar service is a container of its own that the runner cannot run commands in or copy files out of; run the benchmark on the local platform (gauntlet local)"

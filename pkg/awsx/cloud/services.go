package cloud

import (
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
)

// fargateServices says why a task's sidecar services cannot run on the
// Fargate sandboxes ("" when they can): what ECS cannot express of the
// compose file (ecssandbox.CheckSidecars), and what needs the runner to
// act inside a sidecar — a [[verifier.collect]] hook in a sidecar, an
// artifact copied out of one — which on Fargate is a container of its own
// that the task container's runner cannot enter.
func fargateServices(task harbor.Task, env benchmark.Environment) string {
	sidecars, mainDeps := pipeline.Sidecars(&env)
	if why := ecssandbox.CheckSidecars(sidecars, mainDeps); why != "" {
		return fmt.Sprintf("%s: %s (Fargate sandboxes)", harbor.ComposeFile, why)
	}
	for i, h := range task.Config.Verifier.Collect {
		if h.Service != "" && h.Service != harbor.MainService {
			return fmt.Sprintf("task.toml: verifier.collect[%d].service = %q: %s", i, h.Service, ecssandbox.NoSidecarCommands)
		}
	}
	for i, a := range task.Config.Artifacts {
		if a.Sidecar() {
			return fmt.Sprintf("task.toml: artifacts[%d].service = %q: %s", i, a.Service, ecssandbox.NoSidecarCommands)
		}
	}
	return ""
}

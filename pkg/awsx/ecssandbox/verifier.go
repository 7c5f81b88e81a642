package ecssandbox

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// A separate verifier ([verifier] environment_mode = "separate") is a
// container of the attempt's own task definition, "verifier", over the
// verifier's pinned image (through the mirrors), rather than a second ECS
// task: one launch, one completion and one result upload per attempt, and
// no second cold start on the way to the reward. It starts with the task
// container (dependsOn START: `COMPLETE` is not usable, the task container
// being the essential one whose exit stops the task) and waits; the two
// share only the task volume "handoff", which the task container mounts
// at HandoffMount (root's; the agent's uid cannot reach it). Its entry
// point is the runner, from the runner volume (read-only), in its
// hand-over mode (pkg/runner/verifierhandoff.go): after the agent phase the
// task container's runner hands it /logs/artifacts and the declared
// artifacts, it runs its image's own /tests/test.sh as root, and hands
// /logs/verifier back. It sees its image's filesystem and the hand-over
// only, never the agent's /app or logs. It gets the task's size, as every
// container does.

// Names of the separate verifier's container and volume.
const (
	VerifierContainer = "verifier"
	handoffVolume     = "handoff"
	// HandoffMount is where both containers mount the hand-over volume.
	HandoffMount = "/gauntlet-handoff"
	// verifierContainerCommand is the runner's hand-over mode
	// (runner.VerifierContainerCommand).
	verifierContainerCommand = "verifier-container"
)

// verifierContainer is the separate verifier's container definition (each
// container limited to cpu units and mem MiB).
func (d *Driver) verifierContainer(spec sandbox.Spec, cpu, mem int) (types.ContainerDefinition, error) {
	if !isDigestRef(spec.VerifierImage) {
		return types.ContainerDefinition{}, fmt.Errorf("task %s: separate verifier image %q is not pinned to a digest (a sync pins it)", spec.Task.Name, spec.VerifierImage)
	}
	return types.ContainerDefinition{
		Name: aws.String(VerifierContainer), Image: aws.String(PullRef(spec.VerifierImage, d.cfg.Mirrors)), Essential: aws.Bool(false),
		// Root, whatever the image's USER: the runner places the
		// artifacts at their original paths.
		User:       aws.String("0"),
		EntryPoint: []string{runnerMount + "/sandbox-runner"},
		Command:    []string{verifierContainerCommand, "--handoff", HandoffMount},
		DependsOn: []types.ContainerDependency{
			{ContainerName: aws.String(RunnerContainer), Condition: types.ContainerConditionSuccess},
			{ContainerName: aws.String(TaskContainer), Condition: types.ContainerConditionStart},
		},
		MountPoints: []types.MountPoint{
			{SourceVolume: aws.String("gauntlet"), ContainerPath: aws.String(runnerMount), ReadOnly: aws.Bool(true)},
			{SourceVolume: aws.String(handoffVolume), ContainerPath: aws.String(HandoffMount)},
		},
		Cpu: int32(cpu), Memory: aws.Int32(int32(mem)), LogConfiguration: d.logs(VerifierContainer),
	}, nil
}

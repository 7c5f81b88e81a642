package ecssandbox

import "fmt"

// NoSeparateVerifier is why the Fargate sandboxes do not run a separate
// verifier yet: the attempt is one ECS task whose container is the
// environment, and the runner has no second container to hand the
// artifacts to. Sync makes such tasks unavailable with it
// (benchsync.Environments.NoSeparateVerifier); docs/ENVIRONMENTS.md says
// what a second container definition would take.
const NoSeparateVerifier = "the Fargate sandboxes run one container per attempt and cannot run a verifier in an environment of its own yet; run the benchmark on the local platform (gauntlet local)"

// checkVerifierImage refuses a spec whose task has a separate verifier,
// in case a manifest synced elsewhere reaches the ECS driver.
func checkVerifierImage(launchID, task, verifierImage string) error {
	if verifierImage == "" {
		return nil
	}
	return fmt.Errorf("ecs launch %s: task %s: %s", launchID, task, NoSeparateVerifier)
}

package sandbox

import (
	"maps"
	"slices"
)

// The driver↔runner protocol: how a sandbox driver starts the runner of a
// slot (its isolation, the environment that carries the slot's secrets)
// and where the runner leaves what the driver collects. Drivers import
// these from here, not from the runner.

// Isolation modes of the runner.
const (
	// IsolationBwrap runs every phase in bubblewrap whose root is the
	// attempt's overlay over the task's image.
	IsolationBwrap = "bwrap"
	// IsolationHostBwrap runs every phase in bubblewrap over the HOST's
	// system directories (and only the parts of /etc a process needs):
	// an explicit, logged development opt-in; the task's image is ignored.
	IsolationHostBwrap = "bwrap-host"
	// IsolationProcess runs every phase as a plain child process on the
	// host: no isolation at all, an explicit opt-in for machines without
	// bubblewrap.
	IsolationProcess = "process"
	// IsolationContainer is for a runner that is root inside a container
	// that is the sandbox (ECS Fargate, where bubblewrap cannot run).
	IsolationContainer = "container"
)

// Prefixes of the runner's own environment that carry secrets from the
// driver: GAUNTLET_SECRET_<NAME> reaches the agent as <NAME>,
// GAUNTLET_VERIFIER_SECRET_<NAME> the verifier.
const (
	SecretEnvPrefix         = "GAUNTLET_SECRET_"
	VerifierSecretEnvPrefix = "GAUNTLET_VERIFIER_SECRET_"
)

// JudgeKeyEnv carries the judge model's key from the driver to the runner,
// which hands it to the verifier phase's model gateway only.
const JudgeKeyEnv = "GAUNTLET_JUDGE_KEY"

// ArtifactsDir is the directory of the runner's output dir (and of a
// slot's stored outputs) that holds the attempt's collected files.
const ArtifactsDir = "artifacts"

// SecretEnv is the runner's environment (KEY=VALUE, sorted) that carries
// spec's secrets; the runner takes the variables out of its environment
// and scrubs them before any phase starts.
func SecretEnv(spec Spec) []string {
	env := map[string]string{}
	for name, v := range spec.Secrets {
		env[SecretEnvPrefix+name] = v.Reveal()
	}
	for name, v := range spec.VerifierSecrets {
		env[VerifierSecretEnvPrefix+name] = v.Reveal()
	}
	if spec.JudgeKey != "" {
		env[JudgeKeyEnv] = spec.JudgeKey.Reveal()
	}
	list := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	return list
}

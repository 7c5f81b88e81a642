package pipeline

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/runner"
)

// harnessKeyEnv returns the variable through which the harness takes its
// model API key ("" when it takes none or is unknown).
func harnessKeyEnv(harness string) string {
	h, ok := runner.LookupHarness(harness)
	if !ok {
		return ""
	}
	return h.KeyEnv
}

// envCollisions reports literal environment variables a sandbox would never
// see because a secret of the same name replaces them: in an agent's
// environment ([env] and [agents.env]) the secret records the agent receives
// and the harness's model key variable (which carries the agent's
// api_key_secret); in the verifier's ([verifier].env) the verifier's secret
// records. harnesses holds each agent's effective harness.
func envCollisions(cfg runconfig.Config, harnesses, verifierSecretNames []string, keyEnv func(string) string) []Problem {
	var problems []Problem
	reported := map[string]bool{} // run-wide [env] names already reported
	for i, a := range cfg.Agents {
		carriers := map[string]string{} // variable → what sets it
		for _, name := range cfg.AgentSecretNames(i) {
			carriers[name] = fmt.Sprintf("secret record %q, which this agent receives", name)
		}
		if i < len(harnesses) && a.Model != nil && a.Model.APIKeySecret != "" {
			if k := keyEnv(harnesses[i]); k != "" {
				carriers[k] = fmt.Sprintf("harness %q, which passes the model key (secret record %q) in it", harnesses[i], a.Model.APIKeySecret)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(a.Env)) {
			if by, ok := carriers[name]; ok {
				problems = append(problems, collision(fmt.Sprintf("agents[%d].env.%s", i, name), name, by))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(cfg.Env)) {
			if _, own := a.Env[name]; own || reported[name] {
				continue
			}
			if by, ok := carriers[name]; ok {
				reported[name] = true
				problems = append(problems, collision("env."+name, name, fmt.Sprintf("%s (agents[%d])", by, i)))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Verifier.Env)) {
		if slices.Contains(verifierSecretNames, name) {
			problems = append(problems, collision("verifier.env."+name, name, fmt.Sprintf("secret record %q, which the verifier receives", name)))
		}
	}
	return problems
}

func collision(field, name, by string) Problem {
	return Problem{Code: CodeInvalidConfig, Field: field,
		Message: fmt.Sprintf("%s is also set by %s, which would silently replace this value in the sandbox; rename or remove one of them", name, by)}
}

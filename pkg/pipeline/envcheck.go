package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/fielderr"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

// harnessKeyEnv returns the variable through which the harness takes its
// model API key ("" when it takes none or is unknown).
func harnessKeyEnv(name string) string {
	h, ok := harness.Lookup(name)
	if !ok {
		return ""
	}
	return h.KeyEnv
}

// envCollisions reports literal environment variables a sandbox would never
// see because a secret of the same name replaces them, in the cases only
// resolution can see (runconfig reports the others while parsing): in an
// agent's environment ([env], [agents.env]) the variable through which its
// effective harness takes the model key (it carries the agent's
// api_key_secret); in the verifier's ([verifier].env) the secret records
// the benchmark itself requires. harnesses holds each agent's effective
// harness.
func envCollisions(cfg runconfig.Config, harnesses, benchmarkSecrets []string, keyEnv func(string) string) []Problem {
	var problems []Problem
	reported := map[string]bool{} // [env] names already reported
	for i, a := range cfg.Agents {
		if i >= len(harnesses) || a.Model == nil || a.Model.APIKeySecret == "" {
			continue
		}
		name := keyEnv(harnesses[i])
		if name == "" {
			continue
		}
		by := fmt.Sprintf("harness %q, which passes agents[%d].model.api_key_secret (secret record %q) in it", harnesses[i], i, a.Model.APIKeySecret)
		if _, ok := a.Env[name]; ok {
			problems = append(problems, collision(fmt.Sprintf("agents[%d].env.%s", i, name), name, by))
		} else if _, ok := cfg.Env[name]; ok && !reported[name] {
			reported[name] = true
			problems = append(problems, collision("env."+name, name, by))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Verifier.Env)) {
		if slices.Contains(benchmarkSecrets, name) && !slices.Contains(cfg.Verifier.Required, name) {
			problems = append(problems, collision("verifier.env."+name, name,
				fmt.Sprintf("secret record %q, which the benchmark gives its verifier", name)))
		}
	}
	return problems
}

func collision(field, name, by string) Problem {
	return Problem{Code: CodeInvalidConfig, Field: field,
		Message: fmt.Sprintf("%s is also set by %s; that secret would silently replace this value in the sandbox: rename or remove the variable", name, by)}
}

// harnessProblems rejects, at submit time, an agent whose effective harness
// does not exist or cannot run on this platform (one that installs from the
// network per attempt, where sandboxes may not), naming the field and the
// harnesses that can run. Without it such a config is accepted and every
// attempt ends as an infra error.
func harnessProblems(harnesses []string, p harness.Platform) []Problem {
	var problems []Problem
	table := harness.All()
	avail := strings.Join(harness.Runnable(table, p), ", ")
	for i, name := range harnesses {
		field := fmt.Sprintf("agents[%d].harness", i)
		h, ok := harness.LookupIn(table, name)
		switch {
		case !ok:
			problems = append(problems, Problem{Code: CodeInvalidConfig, Field: field,
				Message: fmt.Sprintf("unknown harness %q; available: %s", name, avail)})
		case h.Available(p) != nil:
			problems = append(problems, Problem{Code: CodeInvalidConfig, Field: field,
				Message: fmt.Sprintf("%v; available: %s", h.Available(p), avail)})
		}
	}
	return problems
}

// modelProblems rejects an agent whose harness speaks a wire API its
// model's upstream does not serve (the gateway forwards, it does not
// translate): e.g. claude-code with an OpenAI model.
func modelProblems(agents []runconfig.Agent, harnesses []string, check func(modelref.Model, string) error) []Problem {
	if check == nil {
		return nil
	}
	var problems []Problem
	for i, a := range agents {
		if i >= len(harnesses) || a.Model == nil {
			continue
		}
		h, ok := harness.Lookup(harnesses[i])
		if !ok || h.WireAPI == "" {
			continue
		}
		if err := check(*a.Model, h.WireAPI); err != nil {
			// A fielderr.Error names the model's key at fault
			// ("model.type": this platform hosts no models).
			field, msg := fmt.Sprintf("agents[%d].model", i), err.Error()
			if fe := (fielderr.Error{}); errors.As(err, &fe) && strings.HasPrefix(fe.Field, "model.") {
				field, msg = fmt.Sprintf("agents[%d].%s", i, fe.Field), fe.Message
			}
			problems = append(problems, Problem{Code: CodeInvalidConfig, Field: field,
				Message: fmt.Sprintf("harness %s: %s", h.Name, msg)})
		}
	}
	return problems
}

// budgetProblems rejects a cost budget (max_cost_usd_per_attempt) that an
// agent's model gateway could not enforce: the agent's model has no price,
// so its calls have tokens and no cost (an endpoint or hosted model, a
// model the price table lacks). An agent whose model CheckModel already
// refuses is left to modelProblems. Agents that reach no model through the
// gateway are not metered by it: budgetWarnings says so.
func budgetProblems(cfg runconfig.Config, harnesses []string, checkModel func(modelref.Model, string) error, checkPriced func(modelref.Model) error) []Problem {
	if cfg.Execution.MaxCostUSDPerAttempt <= 0 || checkPriced == nil {
		return nil
	}
	var problems []Problem
	for i, a := range cfg.Agents {
		h, ok := gatewayHarness(a, harnesses, i)
		if !ok || checkModel != nil && checkModel(*a.Model, h.WireAPI) != nil {
			continue
		}
		if err := checkPriced(*a.Model); err != nil {
			problems = append(problems, Problem{Code: CodeInvalidConfig, Field: "execution.max_cost_usd_per_attempt",
				Message: fmt.Sprintf("agents[%d] (harness %s): %v, so the model gateway cannot meter a cost budget; remove max_cost_usd_per_attempt (bound the attempt with max_tokens_per_attempt instead) or use a priced provider model", i, h.Name, err)})
		}
	}
	return problems
}

// budgetWarnings notes the agents a per-attempt budget does not bound: a
// harness that calls its model itself rather than through the platform's
// model gateway, whose use the platform does not meter. Model-free agents
// (oracle, nop, command) use no metered model and get no note.
func budgetWarnings(cfg runconfig.Config, harnesses []string) []string {
	e := cfg.Execution
	if e.MaxTokensPerAttempt <= 0 && e.MaxCostUSDPerAttempt <= 0 {
		return nil
	}
	var out []string
	for i, a := range cfg.Agents {
		if a.Model == nil || i >= len(harnesses) {
			continue
		}
		if h, ok := harness.Lookup(harnesses[i]); ok && h.WireAPI == "" {
			out = append(out, fmt.Sprintf("agents[%d]: harness %s calls its model itself, not through the platform's model gateway, so max_tokens_per_attempt and max_cost_usd_per_attempt do not bound it", i, h.Name))
		}
	}
	return out
}

// gatewayHarness returns agent i's harness when the agent has a model and
// its harness reaches it through the model gateway.
func gatewayHarness(a runconfig.Agent, harnesses []string, i int) (harness.Harness, bool) {
	if i >= len(harnesses) || a.Model == nil {
		return harness.Harness{}, false
	}
	h, ok := harness.Lookup(harnesses[i])
	return h, ok && h.WireAPI != ""
}

// memoryWarnings notes each agent whose harness needs more memory
// (harness.Harness.MemoryMB, measured) than some selected task gives it:
// the task's memory limit binds the agent phase as it is, so the program may
// be killed for memory, which is scored as the agent's error. A task
// without a limit is never below.
func memoryWarnings(harnesses []string, tasks []string, m benchmark.Manifest) []string {
	var out []string
	for i, name := range harnesses {
		h, ok := harness.Lookup(name)
		if !ok || h.MemoryMB == 0 {
			continue
		}
		var below []string
		lowest := 0
		for _, tn := range tasks {
			t, ok := m.Task(tn)
			if !ok || t.MemoryMB == 0 || t.MemoryMB >= h.MemoryMB {
				continue
			}
			below = append(below, tn)
			if lowest == 0 || t.MemoryMB < lowest {
				lowest = t.MemoryMB
			}
		}
		if len(below) == 0 {
			continue
		}
		names := strings.Join(below[:min(len(below), 3)], ", ")
		if len(below) > 3 {
			names += fmt.Sprintf(", … (%d more)", len(below)-3)
		}
		out = append(out, fmt.Sprintf("agents[%d]: harness %s needs about %d MB of memory, but %d of the %d tasks give the agent less (as little as %d MB: %s); there its program may be killed for memory, which counts as the agent's error",
			i, h.Name, h.MemoryMB, len(below), len(tasks), lowest, names))
	}
	return out
}

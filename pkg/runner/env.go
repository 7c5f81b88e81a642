package runner

import (
	"maps"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// Environment variables the runner gives the agent.
const (
	EnvInstruction     = "GAUNTLET_INSTRUCTION"
	EnvInstructionFile = "GAUNTLET_INSTRUCTION_FILE"
	EnvModel           = "GAUNTLET_MODEL"
	EnvTask            = "GAUNTLET_TASK"
	EnvAppDir          = "GAUNTLET_APP_DIR"
	EnvAgentLogsDir    = "GAUNTLET_AGENT_LOGS_DIR"
	EnvVerifierLogsDir = "GAUNTLET_VERIFIER_LOGS_DIR"
	EnvTestsDir        = "GAUNTLET_TESTS_DIR"
	EnvAgentsDir       = "GAUNTLET_AGENTS_DIR"
)

// maxInstructionEnv is the largest instruction passed in $GAUNTLET_INSTRUCTION;
// Linux refuses a single environment string over 128 KiB. Longer instructions
// are only in the instruction file.
const maxInstructionEnv = 100 << 10

// agentEnv builds the agent's environment from scratch. It never starts from
// the runner's own environment, which may hold platform credentials: only the
// task's and the agent config's literal variables, the agent's secrets and the
// GAUNTLET_* variables reach the agent.
func agentEnv(spec sandbox.Spec, task harbor.Task, h harness.Harness, paths layout) []string {
	env := baseEnv(paths.Tmp, paths.Tmp, paths.App)
	maps.Copy(env, task.Config.Environment.Env)
	if h.MountsSolution {
		maps.Copy(env, task.Config.Solution.Env)
	}
	maps.Copy(env, spec.Env)
	addSecrets(env, spec.Secrets)
	env[EnvInstructionFile] = paths.AgentLogs + "/instruction.md"
	if len(task.Instruction) <= maxInstructionEnv {
		env[EnvInstruction] = task.Instruction
	}
	env[EnvModel] = spec.Model
	env[EnvTask] = task.Name
	env[EnvAgentLogsDir] = paths.AgentLogs
	if paths.Agents != "" {
		env[EnvAgentsDir] = paths.Agents
	}
	return envList(env)
}

// verifierEnv builds the verifier's environment from scratch: the task's and
// the run's verifier variables and the verifier's secrets, never the agent's.
// With an LLM judge (judge non-nil) the names the task's [verifier.env]
// declares for the judge's provider get the judge gateway's URL, token and
// model instead (judgeValue), and GAUNTLET_JUDGE_* name them all; the judge
// key itself never reaches the verifier.
func verifierEnv(spec sandbox.Spec, task harbor.Task, paths layout, judge *judgeAccess) []string {
	env := baseEnv(paths.VerifierHome, paths.VerifierTmp, paths.App)
	maps.Copy(env, task.Config.Environment.Env)
	maps.Copy(env, task.Config.Verifier.Env)
	maps.Copy(env, spec.VerifierEnv)
	addSecrets(env, spec.VerifierSecrets)
	if judge != nil {
		for name := range task.Config.Verifier.Env {
			if v, ok := judgeValue(name, *judge); ok {
				env[name] = v
			}
		}
		env[EnvJudgeModel], env[EnvJudgeBaseURL], env[EnvJudgeAPIKey] = judge.model, judge.url, judge.token
	}
	env[EnvTask] = task.Name
	env[EnvVerifierLogsDir] = paths.VerifierLogs
	env[EnvTestsDir] = paths.Tests
	return envList(env)
}

func baseEnv(home, tmp, app string) map[string]string {
	return map[string]string{
		"PATH":    sandboxPath,
		"HOME":    home,
		"TMPDIR":  tmp,
		"LANG":    sandboxLocale,
		"TERM":    sandboxTerminal,
		EnvAppDir: app,
	}
}

func addSecrets(env map[string]string, secrets map[string]secret.Value) {
	for name, v := range secrets {
		env[name] = v.Reveal()
	}
}

func envList(env map[string]string) []string {
	keys := slices.Sorted(maps.Keys(env))
	list := make([]string, 0, len(keys))
	for _, k := range keys {
		list = append(list, k+"="+env[k])
	}
	return list
}

// takeSecrets extracts the secrets the driver passed in the runner's
// environment (KEY=VALUE strings) and returns the names of the variables
// that carried them, so the caller can unset them.
func takeSecrets(environ []string) (agent, verifier map[string]secret.Value, judge secret.Value, carriers []string) {
	agent, verifier = map[string]secret.Value{}, map[string]secret.Value{}
	for _, kv := range environ {
		key, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch {
		case key == sandbox.JudgeKeyEnv:
			judge = secret.Value(value)
		case strings.HasPrefix(key, sandbox.VerifierSecretEnvPrefix) && len(key) > len(sandbox.VerifierSecretEnvPrefix):
			verifier[strings.TrimPrefix(key, sandbox.VerifierSecretEnvPrefix)] = secret.Value(value)
		case strings.HasPrefix(key, sandbox.SecretEnvPrefix) && len(key) > len(sandbox.SecretEnvPrefix):
			agent[strings.TrimPrefix(key, sandbox.SecretEnvPrefix)] = secret.Value(value)
		default:
			continue
		}
		carriers = append(carriers, key)
	}
	return agent, verifier, judge, carriers
}

// takeGatewayKeys extracts the model gateway's keys the task passed in the
// runner's environment (variables named sandbox.GatewayKeyEnvPrefix…, which a
// hosted.api_key_env names; ECS injects them from Secrets Manager) and
// returns the names of their carriers, so the caller can unset them.
func takeGatewayKeys(environ []string) (keys map[string]string, carriers []string) {
	keys = map[string]string{}
	for _, kv := range environ {
		key, value, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(key, sandbox.GatewayKeyEnvPrefix) && len(key) > len(sandbox.GatewayKeyEnvPrefix) {
			keys[key] = value
			carriers = append(carriers, key)
		}
	}
	return keys, carriers
}

// sensitiveRunnerVar reports whether a variable of the runner's own
// environment carries something no phase may see: the slot spec (presigned
// upload URLs), secrets and their carriers, the model gateway's keys and
// config (whose provider headers may hold an operator gateway's token), and
// the task role's credentials.
func sensitiveRunnerVar(key string) bool {
	switch key {
	case SpecEnv, sealed.URLEnv, sealed.DataKeyEnv, sandbox.JudgeKeyEnv, sandbox.GatewayConfigEnv,
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"ECS_CONTAINER_METADATA_URI", "ECS_CONTAINER_METADATA_URI_V4":
		return true
	}
	return strings.HasPrefix(key, sandbox.SecretEnvPrefix) || strings.HasPrefix(key, sandbox.VerifierSecretEnvPrefix) ||
		strings.HasPrefix(key, sandbox.GatewayKeyEnvPrefix)
}

// networkAllowed reports whether a Harbor network_mode grants network access.
// Only "public" does; "no-network", "none", "" and "allowlist" (which a
// bubblewrap sandbox cannot enforce host by host) deny it, failing closed.
func networkAllowed(mode string) bool {
	return mode == harbor.NetworkPublic
}

package runconfig

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
)

var agentNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// headerNameRE matches an HTTP header field name (RFC 9110 token).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func (d *decoder) config(doc map[string]any) Config {
	d.table("", doc, "the top level", "experiment", "tasks", "execution", "env", "secrets", "verifier", "agents", "artifacts")
	cfg := Config{Execution: Execution{
		AttemptsPerTask:       DefaultAttemptsPerTask,
		MaxConcurrentAttempts: DefaultMaxConcurrentAttempts,
		TimeoutMultiplier:     DefaultTimeoutMultiplier,
		MaxRetries:            DefaultMaxRetries,
	}}
	if v, ok := lookup(doc, "experiment"); ok {
		cfg.Experiment = d.experiment(v)
	} else {
		d.add("experiment", "is required: [experiment] with benchmark = \"<key, name or id>\"")
	}
	if v, ok := lookup(doc, "tasks"); ok {
		cfg.Tasks = d.tasks(v)
	}
	if v, ok := lookup(doc, "execution"); ok {
		d.execution(v, &cfg.Execution)
	}
	if v, ok := lookup(doc, "env"); ok {
		cfg.Env = d.stringMap("env", v, d.envKey, d.text)
	}
	if v, ok := lookup(doc, "secrets"); ok {
		cfg.Secrets = d.secrets(v)
	}
	if v, ok := lookup(doc, "verifier"); ok {
		cfg.Verifier = d.verifier(v)
	}
	if v, ok := lookup(doc, "artifacts"); ok {
		cfg.Artifacts = d.list("artifacts", v, MaxArtifacts, d.artifactPath)
	}
	if v, ok := lookup(doc, "agents"); ok {
		cfg.Agents = d.agents(v)
	} else {
		d.add("agents", "is required: 1 to %d [[agents]] tables", MaxAgents)
	}
	d.crossChecks(cfg)
	return cfg
}

func (d *decoder) experiment(v any) Experiment {
	var e Experiment
	m, ok := d.table("experiment", v, "[experiment]", "benchmark", "manifest_version", "manifest_digest")
	if !ok {
		return e
	}
	if v, ok := lookup(m, "benchmark"); ok {
		e.Benchmark, _ = d.nonEmpty("experiment.benchmark", v)
	} else {
		d.add("experiment.benchmark", "is required: the benchmark's key, exact name or id")
	}
	if v, ok := lookup(m, "manifest_version"); ok {
		e.ManifestVersion, _ = d.nonEmpty("experiment.manifest_version", v)
	}
	if v, ok := lookup(m, "manifest_digest"); ok {
		if s, ok := d.str("experiment.manifest_digest", v); ok {
			if benchmark.ValidDigest(s) {
				e.ManifestDigest = s
			} else {
				d.add("experiment.manifest_digest", "must be \"sha256:\" followed by 64 lowercase hex digits")
			}
		}
	}
	return e
}

func (d *decoder) tasks(v any) Tasks {
	var t Tasks
	m, ok := d.table("tasks", v, "[tasks]", "task_set", "task_names", "categories")
	if !ok {
		return t
	}
	if v, ok := lookup(m, "task_set"); ok {
		if s, ok := d.str("tasks.task_set", v); ok {
			if benchmark.ValidTaskSetName(s) {
				t.TaskSet = s
			} else {
				d.add("tasks.task_set", "%q is not a task set name: lowercase letters, digits, '.', '_' and '-', at most 63 bytes", s)
			}
		}
	}
	if v, ok := lookup(m, "task_names"); ok {
		t.TaskNames = d.list("tasks.task_names", v, 0, d.taskName)
	}
	if v, ok := lookup(m, "categories"); ok {
		t.Categories = d.list("tasks.categories", v, 0, d.category)
	}
	return t
}

// taskName converts a task name: benchmark.ValidTaskName, the rule
// registries and manifests are held to as well ("git-multibranch" or
// Harbor's package form "terminal-bench/git-multibranch").
func (d *decoder) taskName(path string, v any) (string, bool) {
	s, ok := d.nonEmpty(path, v)
	if ok && !benchmark.ValidTaskName(s) {
		d.add(path, "%q is not a task name: %s", s, benchmark.NameRule)
		return "", false
	}
	return s, ok
}

// category converts a category: one name segment (benchmark.ValidCategory).
func (d *decoder) category(path string, v any) (string, bool) {
	s, ok := d.nonEmpty(path, v)
	if ok && !benchmark.ValidCategory(s) {
		d.add(path, "%q is not a category: %s", s, benchmark.SegmentRule)
		return "", false
	}
	return s, ok
}

func (d *decoder) execution(v any, e *Execution) {
	m, ok := d.table("execution", v, "[execution]", "attempts_per_task", "max_concurrent_attempts",
		"timeout_multiplier", "max_retries", "max_tokens_per_attempt", "max_cost_usd_per_attempt",
		"pass_threshold", "judge_model", "judge_api_key_secret")
	if !ok {
		return
	}
	if v, ok := lookup(m, "attempts_per_task"); ok {
		e.AttemptsPerTask, _ = d.integer("execution.attempts_per_task", v, 1, MaxAttemptsPerTask)
	}
	if v, ok := lookup(m, "max_concurrent_attempts"); ok {
		e.MaxConcurrentAttempts, _ = d.integer("execution.max_concurrent_attempts", v, 1, MaxConcurrentAttempts)
	}
	if v, ok := lookup(m, "timeout_multiplier"); ok {
		if f, ok := d.number("execution.timeout_multiplier", v); ok {
			if f > 0 && f <= MaxTimeoutMultiplier {
				e.TimeoutMultiplier = f
			} else {
				d.add("execution.timeout_multiplier", "must be greater than 0 and at most %g, got %g", MaxTimeoutMultiplier, f)
			}
		}
	}
	if v, ok := lookup(m, "max_retries"); ok {
		e.MaxRetries, _ = d.integer("execution.max_retries", v, 0, MaxRetries)
	}
	if v, ok := lookup(m, "max_tokens_per_attempt"); ok {
		n, _ := d.integer("execution.max_tokens_per_attempt", v, 1, MaxTokensPerAttempt)
		e.MaxTokensPerAttempt = int64(n)
	}
	if v, ok := lookup(m, "max_cost_usd_per_attempt"); ok {
		if f, ok := d.number("execution.max_cost_usd_per_attempt", v); ok {
			if f > 0 && f <= MaxCostUSDPerAttempt {
				e.MaxCostUSDPerAttempt = f
			} else {
				d.add("execution.max_cost_usd_per_attempt", "must be a number of US dollars greater than 0 and at most %g, got %g", MaxCostUSDPerAttempt, f)
			}
		}
	}
	if v, ok := lookup(m, "pass_threshold"); ok {
		if f, ok := d.number("execution.pass_threshold", v); ok {
			if f > 0 && f <= 1 {
				e.PassThreshold = &f
			} else {
				d.add("execution.pass_threshold", "must be greater than 0 and at most 1, got %g", f)
			}
		}
	}
	if v, ok := lookup(m, "judge_model"); ok {
		e.JudgeModel, _ = d.nonEmpty("execution.judge_model", v)
	}
	if v, ok := lookup(m, "judge_api_key_secret"); ok {
		e.JudgeAPIKeySecret, _ = d.secretName("execution.judge_api_key_secret", v)
	}
}

func (d *decoder) secrets(v any) Secrets {
	var s Secrets
	m, ok := d.table("secrets", v, "[secrets]", "required")
	if !ok {
		return s
	}
	if v, ok := lookup(m, "required"); ok {
		s.Required = d.list("secrets.required", v, MaxSecretNames, d.secretName)
	}
	return s
}

func (d *decoder) verifier(v any) Verifier {
	var s Verifier
	m, ok := d.table("verifier", v, "[verifier]", "required", "env")
	if !ok {
		return s
	}
	if v, ok := lookup(m, "required"); ok {
		s.Required = d.list("verifier.required", v, MaxSecretNames, d.secretName)
	}
	if v, ok := lookup(m, "env"); ok {
		s.Env = d.stringMap("verifier.env", v, d.envKey, d.text)
	}
	return s
}

func (d *decoder) agents(v any) []Agent {
	var tables []any
	switch x := v.(type) {
	case []map[string]any: // TOML [[agents]]
		for _, t := range x {
			tables = append(tables, t)
		}
	case []any: // JSON, or TOML agents = [{…}]
		tables = x
	default:
		d.add("agents", "must be an array of tables ([[agents]]), got %s", typeName(v))
		return nil
	}
	if len(tables) == 0 || len(tables) > MaxAgents {
		d.add("agents", "must have 1 to %d agents, got %d", MaxAgents, len(tables))
		if len(tables) == 0 {
			return nil
		}
	}
	agents := make([]Agent, len(tables))
	for i, t := range tables {
		before := len(d.errs)
		agents[i] = d.agent(index("agents", i), t)
		if len(d.errs) > before {
			d.badAgents = append(d.badAgents, i)
		}
	}
	return agents
}

func (d *decoder) agent(path string, v any) Agent {
	var a Agent
	m, ok := d.table(path, v, "[[agents]]", "name", "harness", "harness_api_key_secret", "command", "model", "env", "secrets")
	if !ok {
		return a
	}
	if v, ok := lookup(m, "name"); ok {
		if s, ok := d.str(join(path, "name"), v); ok {
			if agentNameRE.MatchString(s) {
				a.Name = s
			} else {
				d.add(join(path, "name"), "%q must be letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 bytes", s)
			}
		}
	}
	if v, ok := lookup(m, "harness"); ok {
		if s, ok := d.str(join(path, "harness"), v); ok {
			if benchmark.ValidHarnessName(s) {
				a.Harness = s
			} else {
				d.add(join(path, "harness"), "%q is not a harness name: lowercase letters, digits, '.', '_' and '-', at most 63 bytes", s)
			}
		}
	}
	if v, ok := lookup(m, "harness_api_key_secret"); ok {
		a.HarnessAPIKeySecret, _ = d.secretName(join(path, "harness_api_key_secret"), v)
	}
	if v, ok := lookup(m, "command"); ok {
		a.Command, _ = d.nonEmptyText(join(path, "command"), v)
	}
	if v, ok := lookup(m, "model"); ok {
		a.Model = d.model(join(path, "model"), v)
	}
	if v, ok := lookup(m, "env"); ok {
		a.Env = d.stringMap(join(path, "env"), v, d.envKey, d.text)
	}
	if v, ok := lookup(m, "secrets"); ok {
		a.Secrets = d.list(join(path, "secrets"), v, MaxSecretNames, d.secretName)
	}
	return a
}

func (d *decoder) model(path string, v any) *modelref.Model {
	m, ok := d.table(path, v, "[agents.model]", "type", "model", "api_key_secret", "base_url", "extra_headers", "base_model", "lora_model_name")
	if !ok {
		return nil
	}
	var mod modelref.Model
	if v, ok := lookup(m, "type"); ok {
		if s, ok := d.str(join(path, "type"), v); ok {
			mod.Type = modelref.Type(s)
			if !contains(modelTypeNames(), s) {
				d.add(join(path, "type"), "%q must be one of provider, endpoint, hosted", s)
			}
		}
	} else {
		d.add(join(path, "type"), "is required: provider, endpoint or hosted")
	}
	str := func(key string, conv func(string, any) (string, bool)) string {
		if v, ok := lookup(m, key); ok {
			s, _ := conv(join(path, key), v)
			return s
		}
		return ""
	}
	mod.Model = str("model", d.nonEmpty)
	mod.APIKeySecret = str("api_key_secret", d.secretName)
	mod.BaseURL = str("base_url", d.baseURL)
	mod.BaseModel = str("base_model", d.nonEmpty)
	mod.LoraModelName = str("lora_model_name", d.nonEmpty)
	if v, ok := lookup(m, "extra_headers"); ok {
		mod.ExtraHeaders = d.stringMap(join(path, "extra_headers"), v, d.headerKey, d.str)
	}
	d.modelShape(path, m, mod)
	return &mod
}

func modelTypeNames() []string {
	names := make([]string, len(modelref.Types))
	for i, t := range modelref.Types {
		names[i] = string(t)
	}
	return names
}

// modelKeys are the keys each model type takes besides type, in the order
// messages list them.
var modelKeys = map[modelref.Type][]string{
	modelref.Provider: {"model", "api_key_secret"},
	modelref.Endpoint: {"model", "api_key_secret", "base_url", "extra_headers"},
	// Osmosis's hosted model: a LoRA adapter on a base model, served at
	// the operator's endpoint with the operator's key; the user names no
	// model id, URL or secret.
	modelref.Hosted: {"base_model", "lora_model_name"},
}

// modelShape checks which keys the model's type needs and allows.
func (d *decoder) modelShape(path string, raw map[string]any, m modelref.Model) {
	allowed, ok := modelKeys[m.Type]
	if !ok {
		return // the type is already reported
	}
	has := func(key string) bool { _, ok := lookup(raw, key); return ok }
	require := func(key, why string) {
		if !has(key) {
			d.add(join(path, key), "is required for type = %q: %s", m.Type, why)
		}
	}
	for _, k := range []string{"model", "api_key_secret", "base_url", "extra_headers", "base_model", "lora_model_name"} {
		if has(k) && !slices.Contains(allowed, k) {
			d.add(join(path, k), "is not allowed for type = %q (it takes type, %s)", m.Type, strings.Join(allowed, ", "))
		}
	}
	switch m.Type {
	case modelref.Provider:
		require("model", "the provider's model id, e.g. \"openai/gpt-5.2\"")
		require("api_key_secret", "the NAME of the secret record holding the API key")
	case modelref.Endpoint:
		require("model", "the model id the endpoint serves")
		require("api_key_secret", "the NAME of the secret record holding the endpoint's key")
		require("base_url", "the endpoint's http(s) URL")
	case modelref.Hosted:
		require("base_model", "the base model the adapter was trained from, e.g. \"Qwen/Qwen3-8B\"")
		require("lora_model_name", "the name of the LoRA adapter the platform serves on base_model")
	}
}

// baseURL converts an endpoint URL: http or https, with a host, without
// credentials. The value is not echoed (URLs can carry keys).
func (d *decoder) baseURL(path string, v any) (string, bool) {
	s, ok := d.str(path, v)
	if !ok {
		return "", false
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		d.add(path, "must be an absolute http or https URL, e.g. \"https://llm.example.com/v1\"")
		return "", false
	case u.User != nil:
		d.add(path, "must not contain credentials; put the key in a secret record named by api_key_secret")
		return "", false
	}
	return s, true
}

// headerKey checks an extra_headers name.
func (d *decoder) headerKey(path, k string) bool {
	switch {
	case !headerNameRE.MatchString(k):
		d.add(path, "is not a valid HTTP header name")
		return false
	case strings.EqualFold(k, "Authorization"):
		d.add(path, "Authorization is not allowed in extra_headers: the platform sends the key named by api_key_secret")
		return false
	}
	return true
}

// crossChecks checks rules that span keys: the command harness, duplicate
// agents, and secret names that collide with literal env vars.
func (d *decoder) crossChecks(cfg Config) {
	seen := map[string]int{}
	for i, a := range cfg.Agents {
		if slices.Contains(d.badAgents, i) {
			continue // already reported; its zero fields would only add noise
		}
		path := index("agents", i)
		switch {
		case a.Harness == CommandHarness && a.Command == "":
			d.add(join(path, "command"), "is required for harness = %q: the command line to run", CommandHarness)
		case a.Harness != CommandHarness && a.Command != "":
			d.add(join(path, "command"), "is only allowed with harness = %q", CommandHarness)
		}
		if a.Harness != "" {
			// A defaulted harness is checked by Resolve, which knows it.
			if key, msg := harnessModelProblem(a.Harness, a.Model); key != "" {
				d.add(path+"."+key, "%s", msg)
			}
		}
		id := agentIdentity(a.Harness, a)
		if j, dup := seen[id]; dup {
			d.add(path, "has the same harness, model and name as agents[%d]; give one of them a distinct name", j)
		} else {
			seen[id] = i
		}
	}
	d.envCollisions(cfg)
}

// harnessModelProblem checks an agent's model against the named harness's
// row: only the table's model-free harnesses run without a model, and a
// hosted model is reached only through the model gateway, so a harness that
// calls none cannot use it. It returns the agent key at fault ("model" or
// "model.type") and why, or "" when the model fits; an unknown harness is
// reported elsewhere.
func harnessModelProblem(name string, m *modelref.Model) (key, msg string) {
	h, ok := harness.Lookup(name)
	switch {
	case !ok:
		return "", ""
	case m == nil && !h.ModelFree:
		var free []string
		for _, h := range harness.All() {
			if h.ModelFree {
				free = append(free, h.Name)
			}
		}
		return "model", fmt.Sprintf("is required for harness %q: an [agents.model] table with type = provider, endpoint or hosted (only %s run without a model)",
			name, strings.Join(free, ", "))
	case m != nil && m.Type == modelref.Hosted && h.WireAPI == "":
		return "model.type", fmt.Sprintf("%q is not allowed for harness %q: a hosted model is served only through the platform's model gateway, which this harness does not call; use provider or endpoint, or omit [agents.model]",
			modelref.Hosted, name)
	}
	return "", ""
}

// agentIdentity is what tells agents apart within a run.
func agentIdentity(harness string, a Agent) string {
	return harness + "\x00" + a.ModelLabel() + "\x00" + a.Name
}

// envCollisions reports literal env vars whose names are secret names
// injected into the same sandbox: the secret would silently replace them.
func (d *decoder) envCollisions(cfg Config) {
	reported := map[string]bool{}
	for i := range cfg.Agents {
		injected := injectedSecrets(cfg, i)
		for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
			if src, ok := injected[k]; ok && !reported[k] {
				reported[k] = true
				d.add(join("env", k), "%s is also a secret name given to agents[%d] (%s); the secret would replace the literal value: remove the env var or rename the secret record", k, i, src)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(cfg.Agents[i].Env)) {
			if src, ok := injected[k]; ok {
				d.add(join(join(index("agents", i), "env"), k), "%s is also a secret name given to this agent (%s); the secret would replace the literal value: remove the env var or rename the secret record", k, src)
			}
		}
	}
	for j, name := range cfg.Verifier.Required {
		if _, ok := cfg.Verifier.Env[name]; ok {
			d.add(join("verifier.env", name), "%s is also listed in %s; remove the env var or rename the secret record", name, index("verifier.required", j))
		}
	}
}

// injectedSecrets maps every secret name that reaches agent i's sandbox to
// the key that names it.
func injectedSecrets(cfg Config, i int) map[string]string {
	out := map[string]string{}
	put := func(name, src string) {
		if _, ok := out[name]; name != "" && !ok {
			out[name] = src
		}
	}
	a := cfg.Agents[i]
	at := index("agents", i)
	if a.Model != nil {
		put(a.Model.APIKeySecret, at+".model.api_key_secret")
	}
	put(a.HarnessAPIKeySecret, join(at, "harness_api_key_secret"))
	for j, s := range a.Secrets {
		put(s, index(join(at, "secrets"), j))
	}
	for j, s := range cfg.Secrets.Required {
		put(s, index("secrets.required", j))
	}
	for j, s := range cfg.Verifier.Required {
		put(s, index("verifier.required", j))
	}
	put(cfg.Execution.JudgeAPIKeySecret, "execution.judge_api_key_secret")
	return out
}

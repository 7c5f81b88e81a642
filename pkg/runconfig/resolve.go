package runconfig

import (
	"fmt"
	"slices"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
)

// listLimit is how many names an error message lists before truncating.
const listLimit = 10

// Resolved is a config resolved against a benchmark manifest: what a run pins.
type Resolved struct {
	// Config is the submitted config with experiment.benchmark set to the
	// manifest key and the manifest version and digest pinned; it renders
	// (RenderResolved) to a config that re-submits the same run.
	Config Config
	// Tasks are the selected task names, in manifest order.
	Tasks []string
	// TaskSet is the task set the selection came from, "" for none.
	TaskSet         string
	ManifestVersion string
	ManifestDigest  string
	// PassThreshold is the run's override, else the benchmark's.
	PassThreshold float64
	// Harnesses holds each agent's effective harness (its own, else the
	// benchmark's default), index-aligned with Config.Agents.
	Harnesses []string
	// JudgeModel is the judge model grading uses; "" when the benchmark
	// needs no judge.
	JudgeModel string
	// SecretNames are every secret record name the run needs: the config's
	// (Config.SecretNames) and the benchmark's own, deduplicated and sorted.
	SecretNames []string
	// Warnings note parts of the config that resolution ignored.
	Warnings []string
}

// Resolve resolves cfg against the benchmark manifest m: selects the tasks,
// checks the pinned manifest, the harness and judge requirements, and picks
// the pass threshold. Every problem is reported at once in a
// *ValidationError whose fields are config key paths.
func Resolve(cfg Config, m benchmark.Manifest) (Resolved, error) {
	var p problems
	r := Resolved{
		Config:          cloneConfig(cfg),
		ManifestVersion: m.Version,
		ManifestDigest:  m.Digest,
		PassThreshold:   m.EffectivePassThreshold(),
		SecretNames:     sortedUnique(append(cfg.SecretNames(), m.RequiredSecrets...)),
	}
	checkPins(&p, cfg.Experiment, m)
	checkVerifier(&p, cfg.Verifier, m)
	r.Tasks, r.TaskSet, r.Warnings = selectTasks(&p, cfg.Tasks, m)
	if cfg.Execution.PassThreshold != nil {
		r.PassThreshold = *cfg.Execution.PassThreshold
	}
	r.Harnesses = resolveHarnesses(&p, cfg.Agents, m)
	checkHarnessCredentials(&p, cfg, r.Harnesses)
	var judgeWarning string
	r.JudgeModel, judgeWarning = resolveJudge(&p, cfg.Execution, m)
	if judgeWarning != "" {
		r.Warnings = append(r.Warnings, judgeWarning)
	}
	if err := p.err(); err != nil {
		return Resolved{}, err
	}
	r.Config.Experiment = Experiment{Benchmark: m.Key, ManifestVersion: m.Version, ManifestDigest: m.Digest}
	return r, nil
}

// checkHarnessCredentials applies each harness row's credential data: a
// harness with a CredentialSecret requires harness_api_key_secret under
// exactly that name, one without refuses it, and a provider-model agent may
// not set the harness's PlatformEnv.
func checkHarnessCredentials(p *problems, cfg Config, harnesses []string) {
	for i, a := range cfg.Agents {
		if i >= len(harnesses) {
			break
		}
		at := index("agents", i)
		h, _ := harness.Lookup(harnesses[i])
		switch {
		case h.CredentialSecret != "" && a.HarnessAPIKeySecret == "":
			p.add(join(at, "harness_api_key_secret"), "is required for harness %q: name the secret record %s", harnesses[i], h.CredentialSecret)
		case h.CredentialSecret != "" && a.HarnessAPIKeySecret != h.CredentialSecret:
			p.add(join(at, "harness_api_key_secret"), "must be %s for harness %q (its pinned credential name)", h.CredentialSecret, harnesses[i])
		case h.CredentialSecret == "" && a.HarnessAPIKeySecret != "":
			p.add(join(at, "harness_api_key_secret"), "is not allowed for harness %q: it takes no separate credential", harnesses[i])
		}
		if a.Model == nil || a.Model.Type != modelref.Provider {
			continue
		}
		for _, k := range h.PlatformEnv {
			if _, ok := cfg.Env[k]; ok {
				p.add(join("env", k), "is set by the platform for agents[%d] (harness %q with a provider model); remove it", i, harnesses[i])
			}
			if _, ok := a.Env[k]; ok {
				p.add(join(join(at, "env"), k), "is set by the platform for harness %q with a provider model; remove it", harnesses[i])
			}
		}
	}
}

// checkVerifier refuses [verifier] on a managed benchmark: the platform
// owns its verifier's environment (Osmosis allows [verifier] on registry
// datasets only, and so does gauntlet, so a config valid here is valid there).
func checkVerifier(p *problems, v Verifier, m benchmark.Manifest) {
	if m.Source.Type == benchmark.Managed && (len(v.Required) > 0 || len(v.Env) > 0) {
		p.add("verifier", "is not allowed on managed benchmark %q: [verifier] applies to registry datasets only; remove the [verifier] table", m.Key)
	}
}

// checkPins rejects a config pinned to another manifest than m.
func checkPins(p *problems, e Experiment, m benchmark.Manifest) {
	const fix = "remove manifest_version and manifest_digest to run the current manifest"
	if e.ManifestVersion != "" && e.ManifestVersion != m.Version {
		p.add("experiment.manifest_version", "this config is pinned to version %q but the benchmark is at version %q; %s", e.ManifestVersion, m.Version, fix)
	}
	if e.ManifestDigest != "" && e.ManifestDigest != m.Digest {
		p.add("experiment.manifest_digest", "this config is pinned to manifest %s but the benchmark's manifest is %s (version %q); %s", e.ManifestDigest, m.Digest, m.Version, fix)
	}
}

// selectTasks applies [tasks] to the manifest.
func selectTasks(p *problems, sel Tasks, m benchmark.Manifest) (tasks []string, set string, warnings []string) {
	if sel.TaskSet != "" {
		if len(sel.TaskNames) > 0 || len(sel.Categories) > 0 {
			warnings = append(warnings, "tasks.task_names and tasks.categories are ignored because tasks.task_set is set")
		}
		ts, ok := m.TaskSets[sel.TaskSet]
		if !ok {
			p.add("tasks.task_set", "unknown task set %q; %s", sel.TaskSet, describeTaskSets(m))
			return nil, "", warnings
		}
		members := toSet(ts.Tasks)
		tasks = filterTasks(m, func(t benchmark.Task) bool { return members[t.Name] })
		if len(tasks) == 0 {
			p.add("tasks.task_set", "task set %q selects no tasks of this manifest", sel.TaskSet)
		}
		return tasks, sel.TaskSet, warnings
	}
	if len(sel.TaskNames) == 0 && len(sel.Categories) == 0 {
		tasks = m.TaskNames()
		if len(tasks) == 0 {
			p.add("tasks", "the benchmark has no tasks")
		}
		return tasks, "", nil
	}
	names, cats := toSet(sel.TaskNames), toSet(sel.Categories)
	checkKnown(p, "tasks.task_names", "tasks", sel.TaskNames, m.TaskNames())
	checkKnown(p, "tasks.categories", "categories", sel.Categories, categoryNames(m))
	tasks = filterTasks(m, func(t benchmark.Task) bool { return names[t.Name] || (t.Category != "" && cats[t.Category]) })
	if len(tasks) == 0 {
		p.add("tasks", "the selection matches no tasks")
	}
	return tasks, "", nil
}

func describeTaskSets(m benchmark.Manifest) string {
	if len(m.TaskSets) == 0 {
		return "this benchmark has no task sets; omit task_set to run every task"
	}
	var names []string
	for _, s := range m.TaskSetCounts() {
		names = append(names, s.Name)
	}
	return "this benchmark's task sets are " + benchmark.QuoteList(names, listLimit)
}

// checkKnown reports the requested names that are not among known.
func checkKnown(p *problems, field, what string, requested, known []string) {
	knownSet := toSet(known)
	var unknown []string
	for _, n := range requested {
		if !knownSet[n] {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) == 0 {
		return
	}
	if len(known) == 0 {
		p.add(field, "unknown %s %s; this benchmark has no %s", what, benchmark.QuoteList(unknown, listLimit), what)
		return
	}
	p.add(field, "unknown %s %s; this benchmark's %s are %s", what, benchmark.QuoteList(unknown, listLimit), what, benchmark.QuoteList(known, listLimit))
}

func categoryNames(m benchmark.Manifest) []string {
	var names []string
	for _, c := range m.Categories() {
		names = append(names, c.Name)
	}
	return names
}

func filterTasks(m benchmark.Manifest, keep func(benchmark.Task) bool) []string {
	var out []string
	for _, t := range m.Tasks {
		if keep(t) {
			out = append(out, t.Name)
		}
	}
	return out
}

func toSet(names []string) map[string]bool {
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

// resolveHarnesses applies the benchmark's harness requirement to each agent
// and checks that agents stay distinct once default harnesses are filled in.
func resolveHarnesses(p *problems, agents []Agent, m benchmark.Manifest) []string {
	harnesses := make([]string, len(agents))
	for i, a := range agents {
		field := index("agents", i) + ".harness"
		h := a.Harness
		switch m.HarnessRequirement {
		case benchmark.HarnessRequired:
			if h == "" {
				p.add(field, "is required: this benchmark needs every agent to name its harness%s", defaultHint(m))
			}
		case benchmark.HarnessOfficialOnly:
			if h != "" && h != m.DefaultHarness {
				p.add(field, "this benchmark runs only its official harness %q; remove harness or set it to %q", m.DefaultHarness, m.DefaultHarness)
			}
			h = m.DefaultHarness
		default:
			if h == "" {
				h = m.DefaultHarness
			}
			if h == "" {
				p.add(field, "is required: this benchmark has no default harness")
			}
		}
		harnesses[i] = h
		if a.Harness == "" {
			// Parse checked the agents that name their harness.
			if key, msg := harnessModelProblem(h, a.Model); key != "" {
				p.add(index("agents", i)+"."+key, "%s (the benchmark's default harness)", msg)
			}
		}
	}
	checkDefaultedDuplicates(p, agents, harnesses)
	return harnesses
}

// checkDefaultedDuplicates reports agents that only became identical because
// one of them got the benchmark's default harness.
func checkDefaultedDuplicates(p *problems, agents []Agent, harnesses []string) {
	for i := range agents {
		for j := range i {
			if agents[i].Harness == agents[j].Harness || harnesses[i] == "" {
				continue // identical as written: already reported by Parse
			}
			if agentIdentity(harnesses[i], agents[i]) == agentIdentity(harnesses[j], agents[j]) {
				p.add(index("agents", i), "runs the same harness (%q), model and name as agents[%d] once the default harness is applied; give one of them a distinct name", harnesses[i], j)
				break
			}
		}
	}
}

func defaultHint(m benchmark.Manifest) string {
	if m.DefaultHarness == "" {
		return ""
	}
	return fmt.Sprintf(" (its default harness is %q)", m.DefaultHarness)
}

// resolveJudge returns the judge model grading uses, checking the judge
// keys against the spec's three cases: model and key (model optional when
// the benchmark has a default), key only (a grader that pins its model), or
// neither (both refused). The second result is kept for callers' warnings.
func resolveJudge(p *problems, e Execution, m benchmark.Manifest) (string, string) {
	switch {
	case !m.Judge.Required:
		if e.JudgeModel != "" {
			p.add("execution.judge_model", "is not allowed: this benchmark grades without an LLM judge")
		}
		if e.JudgeAPIKeySecret != "" {
			p.add("execution.judge_api_key_secret", "is not allowed: this benchmark grades without an LLM judge")
		}
		return "", ""
	case m.Judge.ModelPinned:
		if e.JudgeModel != "" {
			p.add("execution.judge_model", "is not allowed: this benchmark's grader pins its judge model (%s); give only execution.judge_api_key_secret", describeModel(m.Judge.DefaultModel))
		}
		if e.JudgeAPIKeySecret == "" {
			p.add("execution.judge_api_key_secret", "is required: this benchmark grades with a pinned LLM judge (%s); name the secret record holding its API key", describeModel(m.Judge.DefaultModel))
		}
		return m.Judge.DefaultModel, ""
	}
	model := e.JudgeModel
	if model == "" {
		model = m.Judge.DefaultModel
	}
	if model == "" {
		p.add("execution.judge_model", "is required: this benchmark grades with an LLM judge and has no default judge model")
	}
	if e.JudgeAPIKeySecret == "" {
		p.add("execution.judge_api_key_secret", "is required: this benchmark grades with an LLM judge (%s); name the secret record holding its API key", describeModel(model))
	}
	return model, ""
}

func describeModel(model string) string {
	if model == "" {
		return "no model set"
	}
	return fmt.Sprintf("model %q", model)
}

// cloneConfig deep-copies cfg so that a Resolved never aliases the caller's slices and maps.
func cloneConfig(c Config) Config {
	out := c
	out.Tasks.TaskNames = slices.Clone(c.Tasks.TaskNames)
	out.Tasks.Categories = slices.Clone(c.Tasks.Categories)
	if c.Execution.PassThreshold != nil {
		v := *c.Execution.PassThreshold
		out.Execution.PassThreshold = &v
	}
	out.Env = cloneMap(c.Env)
	out.Secrets.Required = slices.Clone(c.Secrets.Required)
	out.Verifier.Required = slices.Clone(c.Verifier.Required)
	out.Verifier.Env = cloneMap(c.Verifier.Env)
	out.Agents = make([]Agent, len(c.Agents))
	for i, a := range c.Agents {
		a.Env = cloneMap(a.Env)
		a.Secrets = slices.Clone(a.Secrets)
		if a.Model != nil {
			mod := *a.Model
			mod.ExtraHeaders = cloneMap(mod.ExtraHeaders)
			a.Model = &mod
		}
		out.Agents[i] = a
	}
	if c.Agents == nil {
		out.Agents = nil
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

package runconfig

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
)

func testManifest(t *testing.T) benchmark.Manifest {
	t.Helper()
	tasks := []benchmark.Task{
		{Name: "fix-git", Category: "software-engineering", Digest: "sha256:1"},
		{Name: "sum-csv", Category: "data", Digest: "sha256:2"},
		{Name: "reverse", Category: "software-engineering", Digest: "sha256:3"},
		{Name: "plot", Category: "data", Digest: "sha256:4"},
		{Name: "loose", Digest: "sha256:5"},
	}
	m, err := benchmark.HarborManifest("example", "1.0", "", tasks)
	if err != nil {
		t.Fatal(err)
	}
	m.TaskSets = map[string]benchmark.TaskSet{
		"parity": {Name: "parity", Recommended: true, Tasks: []string{"plot", "fix-git"}},
		"smoke":  {Name: "smoke", Tasks: []string{"loose"}},
	}
	m.DefaultHarness = "oracle"
	m.PassThreshold = 0.75
	return m
}

func parse(t *testing.T, doc string) Config {
	t.Helper()
	cfg, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

func TestResolveSelection(t *testing.T) {
	tests := []struct {
		name         string
		tasks        string
		wantTasks    []string
		wantSet      string
		wantWarnings []string
	}{
		{"everything", "", []string{"fix-git", "sum-csv", "reverse", "plot", "loose"}, "", nil},
		{"task set in manifest order", "[tasks]\ntask_set = \"parity\"\n", []string{"fix-git", "plot"}, "parity", nil},
		{"task set wins", "[tasks]\ntask_set = \"smoke\"\ntask_names = [\"plot\"]\ncategories = [\"data\"]\n", []string{"loose"}, "smoke",
			[]string{"tasks.task_names and tasks.categories are ignored because tasks.task_set is set"}},
		{"names", "[tasks]\ntask_names = [\"plot\", \"fix-git\"]\n", []string{"fix-git", "plot"}, "", nil},
		{"categories", "[tasks]\ncategories = [\"data\"]\n", []string{"sum-csv", "plot"}, "", nil},
		{"names and categories select their union", "[tasks]\ntask_names = [\"loose\"]\ncategories = [\"data\"]\n", []string{"sum-csv", "plot", "loose"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Resolve(parse(t, head+agent+tt.tasks), testManifest(t))
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if diff := cmp.Diff(tt.wantTasks, r.Tasks); diff != "" {
				t.Errorf("Tasks mismatch (-want +got):\n%s", diff)
			}
			if r.TaskSet != tt.wantSet {
				t.Errorf("TaskSet = %q, want %q", r.TaskSet, tt.wantSet)
			}
			if diff := cmp.Diff(tt.wantWarnings, r.Warnings); diff != "" {
				t.Errorf("Warnings mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// providerModel is an [agents.model] for agents whose harness needs one.
const providerModel = "[agents.model]\ntype = \"provider\"\nmodel = \"openai/gpt-5.2\"\napi_key_secret = \"OPENAI_API_KEY\"\n"

func TestResolvePinsAndDefaults(t *testing.T) {
	m := testManifest(t)
	cfg := parse(t, head+agent+"[agents.model]\ntype = \"provider\"\nmodel = \"m\"\napi_key_secret = \"KEY\"\n[[agents]]\nname = \"second\"\n")
	m.RequiredSecrets = []string{"HF_TOKEN"}
	r, err := Resolve(cfg, m)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if r.ManifestVersion != "1.0" || r.ManifestDigest != m.Digest {
		t.Errorf("pinned %q %q, want 1.0 %q", r.ManifestVersion, r.ManifestDigest, m.Digest)
	}
	wantExp := Experiment{Benchmark: "example-1-0", ManifestVersion: "1.0", ManifestDigest: m.Digest}
	if diff := cmp.Diff(wantExp, r.Config.Experiment); diff != "" {
		t.Errorf("Config.Experiment mismatch (-want +got):\n%s", diff)
	}
	if cfg.Experiment.Benchmark != "b" {
		t.Errorf("Resolve changed the caller's config: %+v", cfg.Experiment)
	}
	if r.PassThreshold != 0.75 {
		t.Errorf("PassThreshold = %v, want the benchmark's 0.75", r.PassThreshold)
	}
	if diff := cmp.Diff([]string{"oracle", "oracle"}, r.Harnesses); diff != "" {
		t.Errorf("Harnesses mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"HF_TOKEN", "KEY"}, r.SecretNames); diff != "" {
		t.Errorf("SecretNames mismatch (-want +got):\n%s", diff)
	}

	override := parse(t, head+agent+"[execution]\npass_threshold = 0.25\n")
	r, err = Resolve(override, m)
	if err != nil || r.PassThreshold != 0.25 {
		t.Errorf("Resolve with override: threshold %v, err %v; want 0.25", r.PassThreshold, err)
	}
	m.PassThreshold = 0
	r, err = Resolve(parse(t, head+agent), m)
	if err != nil || r.PassThreshold != 1.0 {
		t.Errorf("Resolve against a manifest without threshold: %v, %v; want 1.0", r.PassThreshold, err)
	}
}

func TestResolveHarnessAndJudge(t *testing.T) {
	judged := func(m *benchmark.Manifest) { m.Judge = benchmark.Judge{Required: true, DefaultModel: "openai/gpt-5.2"} }
	pinned := func(m *benchmark.Manifest) {
		m.Judge = benchmark.Judge{Required: true, DefaultModel: "grader/v1", ModelPinned: true}
	}
	tests := []struct {
		name          string
		requirement   benchmark.HarnessRequirement
		mutate        func(*benchmark.Manifest)
		agents        string
		wantHarnesses []string
		wantJudge     string
	}{
		{"optional uses the agent's harness", benchmark.HarnessOptional, nil, "[[agents]]\nharness = \"codex\"\n" + providerModel, []string{"codex"}, ""},
		{"optional falls back to the default", benchmark.HarnessOptional, nil, "[[agents]]\nname = \"x\"\n", []string{"oracle"}, ""},
		{"required with harness", benchmark.HarnessRequired, nil, "[[agents]]\nharness = \"nop\"\n", []string{"nop"}, ""},
		{"official-only applies the default", benchmark.HarnessOfficialOnly, nil, "[[agents]]\nname = \"x\"\n[[agents]]\nharness = \"oracle\"\nname = \"y\"\n", []string{"oracle", "oracle"}, ""},
		{"judge default model", benchmark.HarnessOptional, judged, agent + "[execution]\njudge_api_key_secret = \"JK\"\n", []string{"oracle"}, "openai/gpt-5.2"},
		{"judge run model wins", benchmark.HarnessOptional, judged, agent + "[execution]\njudge_model = \"anthropic/x\"\njudge_api_key_secret = \"JK\"\n", []string{"oracle"}, "anthropic/x"},
		{"cursor-cli with its pinned credential", benchmark.HarnessOptional, nil, "[[agents]]\nharness = \"cursor-cli\"\nharness_api_key_secret = \"CURSOR_API_KEY\"\n" + providerModel, []string{"cursor-cli"}, ""},
		{"pinned judge takes only the key", benchmark.HarnessOptional, pinned, agent + "[execution]\njudge_api_key_secret = \"JK\"\n", []string{"oracle"}, "grader/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testManifest(t)
			m.HarnessRequirement = tt.requirement
			if tt.mutate != nil {
				tt.mutate(&m)
			}
			r, err := Resolve(parse(t, head+tt.agents), m)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if diff := cmp.Diff(tt.wantHarnesses, r.Harnesses); diff != "" {
				t.Errorf("Harnesses mismatch (-want +got):\n%s", diff)
			}
			if r.JudgeModel != tt.wantJudge {
				t.Errorf("JudgeModel = %q, want %q", r.JudgeModel, tt.wantJudge)
			}
		})
	}
}

// TestResolveVerifierOnRegistryDataset checks that [verifier] stays allowed
// on a registry dataset (Osmosis's rule refuses it on managed ones only).
func TestResolveVerifierOnRegistryDataset(t *testing.T) {
	m := testManifest(t)
	m.Source = benchmark.Source{Type: benchmark.Harbor, Ref: "acme/custom@1.0"}
	if _, err := Resolve(parse(t, head+agent+"[verifier]\nrequired = [\"VERIFIER_TOKEN\"]\nenv = { LEVEL = \"x\" }\n"), m); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
}

func TestResolveErrors(t *testing.T) {
	many := make([]string, 15)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("ghost-%02d", i))
	}
	tests := []struct {
		name   string
		doc    string
		mutate func(*benchmark.Manifest)
		want   []wantErr
	}{
		{"unknown task set", head + agent + "[tasks]\ntask_set = \"full\"\n", nil,
			[]wantErr{{"tasks.task_set", `unknown task set "full"; this benchmark's task sets are "parity", "smoke"`}}},
		{"no task sets", head + agent + "[tasks]\ntask_set = \"parity\"\n", func(m *benchmark.Manifest) { m.TaskSets = nil },
			[]wantErr{{"tasks.task_set", "this benchmark has no task sets; omit task_set to run every task"}}},
		{"unknown task names", head + agent + "[tasks]\ntask_names = [\"plot\", \"nope\", \"nada\"]\n", nil,
			[]wantErr{{"tasks.task_names", `unknown tasks "nope", "nada"; this benchmark's tasks are "fix-git", "sum-csv", "reverse", "plot", "loose"`}}},
		{"long lists are truncated", head + agent + "[tasks]\ntask_names = [" + strings.Join(many, ", ") + "]\n", nil,
			[]wantErr{{"tasks.task_names", `"ghost-09", … (5 more, 15 in all); this benchmark's tasks`}, {"tasks", "the selection matches no tasks"}}},
		{"unknown categories", head + agent + "[tasks]\ncategories = [\"data\", \"math\"]\n", nil,
			[]wantErr{{"tasks.categories", `unknown categories "math"; this benchmark's categories are "data", "software-engineering"`}}},
		{"empty selection", head + agent + "[tasks]\ncategories = [\"math\"]\n", nil, []wantErr{
			{"tasks.categories", `unknown categories "math"`},
			{"tasks", "the selection matches no tasks"},
		}},
		{"pinned to another manifest", head + "manifest_version = \"0.9\"\nmanifest_digest = \"sha256:" + strings.Repeat("0", 64) + "\"\n" + agent, nil, []wantErr{
			{"experiment.manifest_version", `this config is pinned to version "0.9" but the benchmark is at version "1.0"`},
			{"experiment.manifest_digest", "this config is pinned to manifest sha256:000"},
		}},
		{"required harness missing", head + "[[agents]]\nname = \"x\"\n", func(m *benchmark.Manifest) { m.HarnessRequirement = benchmark.HarnessRequired },
			[]wantErr{{"agents[0].harness", `is required: this benchmark needs every agent to name its harness (its default harness is "oracle")`}}},
		{"official-only with another harness", head + "[[agents]]\nharness = \"codex\"\n" + providerModel, func(m *benchmark.Manifest) { m.HarnessRequirement = benchmark.HarnessOfficialOnly },
			[]wantErr{{"agents[0].harness", `this benchmark runs only its official harness "oracle"`}}},
		{"optional without any harness", head + "[[agents]]\nname = \"x\"\n", func(m *benchmark.Manifest) { m.DefaultHarness = "" },
			[]wantErr{{"agents[0].harness", "is required: this benchmark has no default harness"}}},
		{"duplicate once defaulted", head + "[[agents]]\nname = \"x\"\n[[agents]]\nharness = \"oracle\"\nname = \"x\"\n", nil,
			[]wantErr{{"agents[1]", `runs the same harness ("oracle"), model and name as agents[0] once the default harness is applied`}}},
		{"judge needs a model and a key", head + agent, func(m *benchmark.Manifest) { m.Judge = benchmark.Judge{Required: true} }, []wantErr{
			{"execution.judge_model", "is required: this benchmark grades with an LLM judge and has no default judge model"},
			{"execution.judge_api_key_secret", "is required: this benchmark grades with an LLM judge (no model set)"},
		}},
		{"judge key without a default model still needs the key", head + "[execution]\njudge_model = \"m\"\n" + agent, func(m *benchmark.Manifest) { m.Judge = benchmark.Judge{Required: true} }, []wantErr{
			{"execution.judge_api_key_secret", `is required: this benchmark grades with an LLM judge (model "m")`},
		}},
		{"pinned judge refuses a model and needs the key", head + "[execution]\njudge_model = \"mine\"\n" + agent, func(m *benchmark.Manifest) {
			m.Judge = benchmark.Judge{Required: true, DefaultModel: "grader/v1", ModelPinned: true}
		}, []wantErr{
			{"execution.judge_model", `is not allowed: this benchmark's grader pins its judge model (model "grader/v1")`},
			{"execution.judge_api_key_secret", "is required: this benchmark grades with a pinned LLM judge"},
		}},
		{"verifier on a managed benchmark", head + agent + "[verifier]\nrequired = [\"VERIFIER_TOKEN\"]\n", func(m *benchmark.Manifest) { m.Source.Type = benchmark.Managed }, []wantErr{
			{"verifier", "is not allowed on managed benchmark"},
		}},
		{"verifier env on a managed benchmark", head + agent + "[verifier]\nenv = { LEVEL = \"x\" }\n", func(m *benchmark.Manifest) { m.Source.Type = benchmark.Managed }, []wantErr{
			{"verifier", "[verifier] applies to registry datasets only"},
		}},
		{"cursor-cli needs its credential", head + "[[agents]]\nharness = \"cursor-cli\"\n" + providerModel, nil, []wantErr{
			{"agents[0].harness_api_key_secret", `is required for harness "cursor-cli": name the secret record CURSOR_API_KEY`},
		}},
		{"cursor-cli credential under another name", head + "[[agents]]\nharness = \"cursor-cli\"\nharness_api_key_secret = \"MY_CURSOR\"\n" + providerModel, nil, []wantErr{
			{"agents[0].harness_api_key_secret", `must be CURSOR_API_KEY for harness "cursor-cli"`},
		}},
		{"codex takes no harness credential", head + "[[agents]]\nharness = \"codex\"\nharness_api_key_secret = \"CURSOR_API_KEY\"\n" + providerModel, nil, []wantErr{
			{"agents[0].harness_api_key_secret", `is not allowed for harness "codex": it takes no separate credential`},
		}},
		{"mini-swe-agent's platform key in env", head + "[env]\nMSWEA_API_KEY = \"x\"\n[[agents]]\nharness = \"mini-swe-agent\"\n[agents.model]\ntype = \"provider\"\nmodel = \"openai/m\"\napi_key_secret = \"OPENAI_API_KEY\"\n[agents.env]\nMSWEA_API_KEY = \"y\"\n", nil, []wantErr{
			{"env.MSWEA_API_KEY", `is set by the platform for agents[0] (harness "mini-swe-agent" with a provider model)`},
			{"agents[0].env.MSWEA_API_KEY", "is set by the platform"},
		}},
		{"default harness that needs a model", head + "[[agents]]\nname = \"x\"\n", func(m *benchmark.Manifest) { m.DefaultHarness = "codex" }, []wantErr{
			{"agents[0].model", `is required for harness "codex": an [agents.model] table with type = provider, endpoint or hosted (only command, nop, oracle run without a model) (the benchmark's default harness)`},
		}},
		{"hosted model on a default harness that calls no model", head + "[[agents]]\n[agents.model]\ntype = \"hosted\"\nbase_model = \"b\"\nlora_model_name = \"l\"\n", nil, []wantErr{
			{"agents[0].model.type", `"hosted" is not allowed for harness "oracle"`},
		}},
		{"no judge refuses both judge keys", head + "[execution]\njudge_model = \"x\"\njudge_api_key_secret = \"JK\"\n" + agent, nil, []wantErr{
			{"execution.judge_model", "is not allowed: this benchmark grades without an LLM judge"},
			{"execution.judge_api_key_secret", "is not allowed: this benchmark grades without an LLM judge"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testManifest(t)
			if tt.mutate != nil {
				tt.mutate(&m)
			}
			_, err := Resolve(parse(t, tt.doc), m)
			checkErrors(t, err, tt.want)
		})
	}
}

// TestRenderResolvedRoundTrip checks that the resolved config renders to TOML
// that parses to the resolved config and resolves to the same run again.
func TestRenderResolvedRoundTrip(t *testing.T) {
	m := testManifest(t)
	cfg := fullConfig()
	cfg.Experiment = Experiment{Benchmark: "example"}
	cfg.Tasks = Tasks{TaskSet: "parity", TaskNames: []string{"plot"}}
	cfg.Execution.JudgeModel, cfg.Execution.JudgeAPIKeySecret = "", ""
	r, err := Resolve(cfg, m)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	out, err := RenderResolved(r)
	if err != nil {
		t.Fatalf("RenderResolved: %v", err)
	}
	for _, want := range []string{
		"# Resolved run config for benchmark example-1-0.\n",
		"# Manifest version 1.0, digest " + m.Digest + ".\n",
		"# 2 tasks (task set parity), pass threshold 0.5.\n",
		"# Note: tasks.task_names and tasks.categories are ignored because tasks.task_set is set\n",
		"manifest_version = \"1.0\"\nmanifest_digest = \"" + m.Digest + "\"\n",
		// The pinned program version of each harness that has one.
		"# agents[0]: harness codex 0.169.0.\n",
		"# agents[1]: harness cursor-cli ",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rendered config lacks %q:\n%s", want, out)
		}
	}
	parsed, err := Parse(out)
	if err != nil {
		t.Fatalf("Parse(RenderResolved): %v", err)
	}
	if diff := cmp.Diff(r.Config, parsed); diff != "" {
		t.Errorf("rendered resolved config mismatch (-want +got):\n%s", diff)
	}
	again, err := Resolve(parsed, m)
	if err != nil {
		t.Fatalf("Resolve(parsed): %v", err)
	}
	if diff := cmp.Diff(r, again); diff != "" {
		t.Errorf("resolving the rendered config differs (-first +second):\n%s", diff)
	}
}

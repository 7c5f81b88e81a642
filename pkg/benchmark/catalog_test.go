package benchmark

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const fullCatalog = `
[[benchmarks]]
key = "tb"
name = "Terminal-Bench 2.0"
description = "Hard terminal tasks."
source_url = "https://www.tbench.ai"
source = "terminal-bench@2.0"
registry = "registry.json"
harness_requirement = "official-only"
default_harness = "terminus-2"
judge_required = true
judge_model = "openai/gpt-5.2"
pass_threshold = 1
required_secrets = ["HF_TOKEN"]

[[benchmarks.task_sets]]
name = "parity"
description = "published sample"
recommended = true
tasks = ["fix-git", "sum-csv"]

[[benchmarks]]
name = "Example"
dir = "/srv/examples/example"
pass_threshold = 0.5
`

func TestParseCatalog(t *testing.T) {
	got, err := ParseCatalog([]byte(fullCatalog), "conf/catalog.toml")
	if err != nil {
		t.Fatalf("ParseCatalog: %v", err)
	}
	want := Catalog{Benchmarks: []CatalogEntry{
		{
			Key: "tb", Name: "Terminal-Bench 2.0", Description: "Hard terminal tasks.",
			SourceURL: "https://www.tbench.ai", Source: "terminal-bench@2.0",
			Registry:           filepath.Join("conf", "registry.json"),
			HarnessRequirement: HarnessOfficialOnly, DefaultHarness: "terminus-2",
			Judge:         Judge{Required: true, DefaultModel: "openai/gpt-5.2"},
			PassThreshold: 1, RequiredSecrets: []string{"HF_TOKEN"},
			TaskSets: map[string]TaskSet{"parity": {
				Name: "parity", Description: "published sample", Recommended: true,
				Tasks: []string{"fix-git", "sum-csv"},
			}},
		},
		{
			Key: "example", Name: "Example", Dir: "/srv/examples/example",
			HarnessRequirement: HarnessOptional, PassThreshold: 0.5,
		},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseCatalog mismatch (-want +got):\n%s", diff)
	}
	e, ok := got.Lookup("example")
	if !ok || e.Ref() != "/srv/examples/example" {
		t.Errorf("Lookup(example) = %+v, %v", e, ok)
	}
	if _, ok := got.Lookup("nope"); ok {
		t.Error("Lookup(nope) found an entry")
	}
}

func TestParseCatalogDefaultKey(t *testing.T) {
	got, err := ParseCatalog([]byte("[[benchmarks]]\nname = \"TB\"\nsource = \"terminal-bench@2.0\"\n"), "c.toml")
	if err != nil {
		t.Fatalf("ParseCatalog: %v", err)
	}
	if k := got.Benchmarks[0].Key; k != "terminal-bench-2-0" {
		t.Errorf("default key = %q, want terminal-bench-2-0", k)
	}
}

func TestParseCatalogErrors(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want []CatalogProblem
	}{
		{"empty", ``, []CatalogProblem{{"benchmarks", "the catalog lists no benchmarks ([[benchmarks]])"}}},
		{"syntax", "[[benchmarks]\n", []CatalogProblem{{"", "line 2: expected end of table array name delimiter ']', but got '\\n' instead"}}},
		{"unknown keys", "[[benchmarks]]\nname = \"A\"\nsource = \"a@1\"\ncolour = \"red\"\n[[benchmarks.task_sets]]\nname = \"p\"\ntasks = [\"x\"]\nsize = 3\n",
			[]CatalogProblem{{"benchmarks.colour", "unknown key"}, {"benchmarks.task_sets.size", "unknown key"}}},
		{"every field wrong", `
[[benchmarks]]
key = "Bad Key"
source = "no-version"
harness_requirement = "sometimes"
default_harness = "Bad Harness"
pass_threshold = 0
judge_model_pinned = true
required_secrets = ["lower", "GAUNTLET_X"]
[[benchmarks.task_sets]]
name = "P!"
tasks = []
[[benchmarks.task_sets]]
name = "P!"
tasks = ["a"]
`, []CatalogProblem{
			{"benchmarks[0].name", "is required"},
			{"benchmarks[0].source", `"no-version" must be a registry spec name@version`},
			{"benchmarks[0].key", `"Bad Key" must match ^[a-z0-9][a-z0-9-]{0,62}$`},
			{"benchmarks[0].harness_requirement", `"sometimes" must be one of required, optional, official-only`},
			{"benchmarks[0].default_harness", `"Bad Harness" must match ^[a-z0-9][a-z0-9._-]{0,62}$`},
			{"benchmarks[0].pass_threshold", "0 must be in (0, 1]"},
			{"benchmarks[0].judge_model_pinned", "is only allowed with judge_required = true"},
			{"benchmarks[0].required_secrets[0]", "must be a secret record name matching ^[A-Z][A-Z0-9_]*$"},
			{"benchmarks[0].required_secrets[1]", "names a reserved secret: names starting with GAUNTLET_ are set by the platform's runner"},
			{"benchmarks[0].task_sets[0].name", `"P!" must match ^[a-z0-9][a-z0-9._-]{0,62}$`},
			{"benchmarks[0].task_sets[0].tasks", "must list at least one task"},
			{"benchmarks[0].task_sets[1].name", `"P!" must match ^[a-z0-9][a-z0-9._-]{0,62}$`},
			{"benchmarks[0].task_sets[1].name", `task set "P!" is defined twice`},
		}},
		{"source rules", `
[[benchmarks]]
name = "A"
[[benchmarks]]
name = "B"
source = "b@1"
dir = "x"
[[benchmarks]]
name = "C"
dir = "x"
registry = "r.json"
harness_requirement = "official-only"
`, []CatalogProblem{
			{"benchmarks[0].source", "set source (a registry spec name@version) or dir (a local dataset directory)"},
			{"benchmarks[1].dir", "set either source or dir, not both"},
			{"benchmarks[2].registry", "is only used with source, not with dir"},
			{"benchmarks[2].default_harness", "is required when harness_requirement is official-only"},
		}},
		{"duplicate keys", "[[benchmarks]]\nname = \"A\"\nsource = \"a@1\"\n[[benchmarks]]\nname = \"A2\"\nkey = \"a-1\"\nsource = \"a@2\"\n",
			[]CatalogProblem{{"benchmarks[1].key", `key "a-1" is already used by benchmarks[0]`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCatalog([]byte(tt.toml), "catalog.toml")
			var ce *CatalogError
			if !errors.As(err, &ce) {
				t.Fatalf("ParseCatalog error = %v, want *CatalogError", err)
			}
			if ce.File != "catalog.toml" {
				t.Errorf("File = %q", ce.File)
			}
			if diff := cmp.Diff(tt.want, ce.Problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseCatalogWrongType(t *testing.T) {
	_, err := ParseCatalog([]byte("[[benchmarks]]\nname = 3\n"), "catalog.toml")
	if err == nil {
		t.Fatal("ParseCatalog accepted name = 3")
	}
	if got := err.Error(); !strings.Contains(got, "catalog catalog.toml") || !strings.Contains(got, "name") {
		t.Errorf("error %q does not name the file and the key", got)
	}
}

func TestCatalogEntryManifest(t *testing.T) {
	cat, err := ParseCatalog([]byte(fullCatalog), "catalog.toml")
	if err != nil {
		t.Fatal(err)
	}
	e := cat.Benchmarks[0]
	m, err := e.Manifest("2.0", sampleTasks())
	if err != nil {
		t.Fatalf("Manifest: %v", err)
	}
	if m.Source != (Source{Type: Managed, Ref: "terminal-bench@2.0", URL: "https://www.tbench.ai"}) ||
		m.Digest != ComputeDigest(sampleTasks()) || m.DefaultHarness != "terminus-2" || m.Version != "2.0" {
		t.Errorf("Manifest = %+v", m)
	}
	_, err = e.Manifest("2.0", sampleTasks()[2:])
	if err == nil || !strings.Contains(err.Error(), `task set "parity": unknown tasks "fix-git", "sum-csv"`) {
		t.Errorf("Manifest with missing set tasks: err = %v", err)
	}
}

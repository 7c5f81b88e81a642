package benchmark

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sampleTasks() []Task {
	return []Task{
		{Name: "fix-git", Category: "software-engineering", Difficulty: "easy", Digest: "sha256:aa"},
		{Name: "sum-csv", Category: "data", Difficulty: "medium", Digest: "sha256:bb"},
		{Name: "reverse", Category: "software-engineering", Digest: "sha256:cc"},
		{Name: "no-category", Digest: "sha256:dd"},
	}
}

func sampleManifest(t *testing.T) Manifest {
	t.Helper()
	m, err := HarborManifest("example-bench", "1.0", "an example", sampleTasks())
	if err != nil {
		t.Fatalf("HarborManifest: %v", err)
	}
	m.TaskSets = map[string]TaskSet{
		"parity": {Name: "parity", Recommended: true, Tasks: []string{"sum-csv", "fix-git"}},
		"all":    {Name: "all", Tasks: []string{"fix-git", "sum-csv", "reverse", "no-category"}},
	}
	return m
}

func TestKeyFor(t *testing.T) {
	tests := []struct {
		name, version, want string
	}{
		{"terminal-bench", "2.0", "terminal-bench-2-0"},
		{"terminal-bench", "", "terminal-bench"},
		{"SWE-bench Verified", "head", "swe-bench-verified-head"},
		{"  --Weird__Name!! ", "v1.2.3-rc1", "weird-name-v1-2-3-rc1"},
		{"é-bench", "1", "bench-1"},
		{"!!!", "", ""},
		{strings.Repeat("a", 70), "1.0", strings.Repeat("a", 63)},
		{strings.Repeat("a", 62), "1.0", strings.Repeat("a", 62)}, // cut at the dash, trailing dash dropped
	}
	for _, tt := range tests {
		got := KeyFor(tt.name, tt.version)
		if got != tt.want {
			t.Errorf("KeyFor(%q, %q) = %q, want %q", tt.name, tt.version, got, tt.want)
		}
		if got != "" && !ValidKey(got) {
			t.Errorf("KeyFor(%q, %q) = %q is not a valid key", tt.name, tt.version, got)
		}
	}
}

func TestValidKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"terminal-bench-2-0", true},
		{"a", true},
		{"0day", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"", false},
		{"-leading", false},
		{"Upper", false},
		{"under_score", false},
		{"dot.ted", false},
	}
	for _, tt := range tests {
		if got := ValidKey(tt.key); got != tt.want {
			t.Errorf("ValidKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestSplitRef(t *testing.T) {
	tests := []struct{ ref, name, version string }{
		{"terminal-bench@2.0", "terminal-bench", "2.0"},
		{"hle", "hle", ""},
		{"a@b@c", "a@b", "c"},
	}
	for _, tt := range tests {
		n, v := SplitRef(tt.ref)
		if n != tt.name || v != tt.version {
			t.Errorf("SplitRef(%q) = %q, %q, want %q, %q", tt.ref, n, v, tt.name, tt.version)
		}
	}
}

func TestComputeDigest(t *testing.T) {
	tasks := []Task{{Name: "b", Digest: "sha256:2"}, {Name: "a", Digest: "sha256:1"}}
	// Independent computation of the documented encoding.
	sum := sha256.Sum256([]byte("1:a8:sha256:1\n1:b8:sha256:2\n"))
	want := "sha256:" + hex.EncodeToString(sum[:])
	if got := ComputeDigest(tasks); got != want {
		t.Errorf("ComputeDigest = %q, want %q", got, want)
	}
	reversed := []Task{tasks[1], tasks[0]}
	if ComputeDigest(reversed) != want {
		t.Error("ComputeDigest depends on task order")
	}
	changed := []Task{{Name: "a", Digest: "sha256:1"}, {Name: "b", Digest: "sha256:3"}}
	if ComputeDigest(changed) == want {
		t.Error("ComputeDigest ignores task digests")
	}
	// Length prefixes keep name/digest boundaries unambiguous.
	if ComputeDigest([]Task{{Name: "ab", Digest: "c"}}) == ComputeDigest([]Task{{Name: "a", Digest: "bc"}}) {
		t.Error("ComputeDigest confuses name and digest boundaries")
	}
	if !ValidDigest(want) {
		t.Errorf("ValidDigest(%q) = false", want)
	}
	if tasks[0].Name != "b" {
		t.Error("ComputeDigest reordered its argument")
	}
}

func TestManifestQueries(t *testing.T) {
	m := sampleManifest(t)
	wantCats := []CategoryCount{{Name: "data", Tasks: 1}, {Name: "software-engineering", Tasks: 2}}
	if diff := cmp.Diff(wantCats, m.Categories()); diff != "" {
		t.Errorf("Categories() mismatch (-want +got):\n%s", diff)
	}
	wantSets := []TaskSetCount{{Name: "all", Tasks: 4}, {Name: "parity", Recommended: true, Tasks: 2}}
	if diff := cmp.Diff(wantSets, m.TaskSetCounts()); diff != "" {
		t.Errorf("TaskSetCounts() mismatch (-want +got):\n%s", diff)
	}
	if task, ok := m.Task("sum-csv"); !ok || task.Difficulty != "medium" {
		t.Errorf("Task(sum-csv) = %+v, %v", task, ok)
	}
	if _, ok := m.Task("missing"); ok {
		t.Error("Task(missing) found")
	}
	if diff := cmp.Diff([]string{"fix-git", "sum-csv", "reverse", "no-category"}, m.TaskNames()); diff != "" {
		t.Errorf("TaskNames() mismatch (-want +got):\n%s", diff)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

func TestHarborManifestDefaults(t *testing.T) {
	m := sampleManifest(t)
	if m.Key != "example-bench-1-0" || m.Source != (Source{Type: Harbor, Ref: "example-bench@1.0"}) ||
		m.HarnessRequirement != HarnessOptional || m.PassThreshold != 1.0 || m.Judge.Required {
		t.Errorf("HarborManifest defaults wrong: %+v", m)
	}
	if m.Digest != ComputeDigest(sampleTasks()) {
		t.Errorf("digest %q not computed", m.Digest)
	}
}

func TestManifestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Manifest)
		want   string
	}{
		{"bad key", func(m *Manifest) { m.Key = "Bad Key" }, "key"},
		{"no name", func(m *Manifest) { m.Name = "" }, "name is empty"},
		{"bad source", func(m *Manifest) { m.Source.Type = "ftp" }, "source type"},
		{"no version", func(m *Manifest) { m.Version = "" }, "version is empty"},
		{"stale digest", func(m *Manifest) { m.Tasks = m.Tasks[:2] }, "does not match the task list"},
		{"duplicate task", func(m *Manifest) {
			m.Tasks = append(m.Tasks, m.Tasks[0])
			m.Digest = ComputeDigest(m.Tasks)
		}, "listed twice"},
		{"task without digest", func(m *Manifest) {
			m.Tasks[0].Digest = ""
			m.Digest = ComputeDigest(m.Tasks)
		}, "digest is empty"},
		{"unknown task in set", func(m *Manifest) {
			m.TaskSets["parity"] = TaskSet{Name: "parity", Tasks: []string{"ghost"}}
		}, `unknown tasks "ghost"`},
		{"set name mismatch", func(m *Manifest) { m.TaskSets["x"] = TaskSet{Name: "y", Tasks: []string{"sum-csv"}} }, "name field"},
		{"official-only without default", func(m *Manifest) { m.HarnessRequirement = HarnessOfficialOnly }, "needs a default harness"},
		{"bad requirement", func(m *Manifest) { m.HarnessRequirement = "sometimes" }, "must be one of required, optional, official-only"},
		{"zero threshold", func(m *Manifest) { m.PassThreshold = 0 }, "pass threshold"},
		{"threshold above one", func(m *Manifest) { m.PassThreshold = 1.5 }, "pass threshold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sampleManifest(t)
			tt.mutate(&m)
			err := m.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestQuoteList(t *testing.T) {
	if got, want := QuoteList([]string{"a", "b"}, 5), `"a", "b"`; got != want {
		t.Errorf("QuoteList = %q, want %q", got, want)
	}
	if got, want := QuoteList([]string{"a", "b", "c", "d"}, 2), `"a", "b", … (2 more, 4 in all)`; got != want {
		t.Errorf("QuoteList = %q, want %q", got, want)
	}
}

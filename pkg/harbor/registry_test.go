package harbor

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/internal/fixtures"
)

const registrySnapshot = "harbor-registry-2026-01-29.json"

// fixturePath returns the path of a shared fixture (see internal/fixtures);
// a missing fixture fails the test.
func fixturePath(t testing.TB, name string) string {
	t.Helper()
	p, err := fixtures.Path(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func loadSnapshot(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(fixturePath(t, registrySnapshot))
	if err != nil {
		t.Fatalf("read registry snapshot: %v", err)
	}
	return data
}

// Expected values were read from the snapshot independently with Python's
// json module.
func TestParseRegistrySnapshot(t *testing.T) {
	reg, err := ParseRegistry(bytes.NewReader(loadSnapshot(t)))
	if err != nil {
		t.Fatalf("ParseRegistry(snapshot) error: %v", err)
	}
	tasks := 0
	for _, d := range reg {
		tasks += len(d.Tasks)
	}
	if got := []int{len(reg), len(reg.Names()), tasks}; !cmp.Equal(got, []int{40, 38, 11385}) {
		t.Errorf("entries, names, tasks = %v, want [40 38 11385]", got)
	}
	names := reg.Names()
	if names[0] != "aider-polyglot" || names[len(names)-1] != "vmax-tasks" {
		t.Errorf("Names() runs %q … %q, want aider-polyglot … vmax-tasks", names[0], names[len(names)-1])
	}

	tests := []struct {
		name, version   string
		wantVersion     string
		wantTasks       int
		wantDescription string // prefix
		wantTask        TaskRef
		taskIndex       int
	}{
		{
			name: "terminal-bench", wantVersion: "2.0", wantTasks: 89,
			wantDescription: "Version 2.0 of Terminal-Bench",
			wantTask: TaskRef{Name: "adaptive-rejection-sampler", GitURL: "https://github.com/laude-institute/terminal-bench-2.git",
				GitCommitID: "69671fbaac6d67a7ef0dfec016cc38a64ef7a77c", Path: "adaptive-rejection-sampler"},
		},
		{
			name: "terminal-bench", version: "2.0", wantVersion: "2.0", wantTasks: 89, taskIndex: 88,
			wantTask: TaskRef{Name: "write-compressor", GitURL: "https://github.com/laude-institute/terminal-bench-2.git",
				GitCommitID: "69671fbaac6d67a7ef0dfec016cc38a64ef7a77c", Path: "write-compressor"},
		},
		{
			// Three versions, none PEP 440: the lexically last wins.
			name: "swe-lancer-diamond", wantVersion: "manager", wantTasks: 265,
			wantTask: TaskRef{Name: "12155-manager-0", GitURL: "https://github.com/laude-institute/harbor-datasets.git",
				GitCommitID: "HEAD", Path: "datasets/swe-lancer"},
		},
		{
			name: "swe-lancer-diamond", version: "ic", wantVersion: "ic", wantTasks: 198, taskIndex: 197,
			wantTask: TaskRef{Name: "6883", GitURL: "https://github.com/laude-institute/harbor-datasets.git",
				GitCommitID: "HEAD", Path: "datasets/swe-lancer"},
		},
		{
			name: "ds-1000", wantVersion: "head", wantTasks: 1000, taskIndex: 999,
			wantDescription: "DS-1000 is a code generation benchmark",
			wantTask: TaskRef{Name: "999", GitURL: "https://github.com/laude-institute/harbor-datasets.git",
				GitCommitID: "c3fe2cf6fc9df5a891bff985c138a7a26e19d3da", Path: "datasets/ds1000/999"},
		},
		{
			name: "aider-polyglot", wantVersion: "1.0", wantTasks: 225,
			wantTask: TaskRef{Name: "polyglot_java_zipper", GitURL: "https://github.com/laude-institute/harbor-datasets.git",
				GitCommitID: "f30b14415dd733c83627204bad0af69a89ceb46f", Path: "datasets/aider_polyglot/polyglot_java_zipper"},
		},
		{
			name: "hello-world", wantVersion: "1.0", wantTasks: 1,
			wantDescription: "A simple example task to create a hello.txt file",
			wantTask: TaskRef{Name: "hello-world", GitURL: "https://github.com/laude-institute/harbor.git",
				GitCommitID: "HEAD", Path: "examples/tasks/hello-world"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+"@"+tt.version, func(t *testing.T) {
			d, err := reg.Resolve(tt.name, tt.version)
			if err != nil {
				t.Fatalf("Resolve(%q, %q) error: %v", tt.name, tt.version, err)
			}
			if d.Version != tt.wantVersion || len(d.Tasks) != tt.wantTasks {
				t.Errorf("Resolve(%q, %q) = %s with %d tasks, want version %s with %d", tt.name, tt.version, d.Spec(), len(d.Tasks), tt.wantVersion, tt.wantTasks)
			}
			if !strings.HasPrefix(d.Description, tt.wantDescription) {
				t.Errorf("description %q, want prefix %q", d.Description, tt.wantDescription)
			}
			if diff := cmp.Diff(tt.wantTask, d.Tasks[tt.taskIndex]); diff != "" {
				t.Errorf("task %d mismatch (-want +got):\n%s", tt.taskIndex, diff)
			}
		})
	}

	if diff := cmp.Diff([]string{"all", "ic", "manager"}, reg.Versions("swe-lancer-diamond")); diff != "" {
		t.Errorf("Versions(swe-lancer-diamond) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"2.0"}, reg.Versions("terminal-bench")); diff != "" {
		t.Errorf("Versions(terminal-bench) mismatch (-want +got):\n%s", diff)
	}
}

// Writing the parsed registry back gives the same JSON value.
func TestRegistryRoundTrip(t *testing.T) {
	data := loadSnapshot(t)
	reg, err := ParseRegistry(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(reg)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registry round trip changed the document (-want +got):\n%.2000s", diff)
	}
}

func TestRegistryMetricsRoundTrip(t *testing.T) {
	doc := `[{"name":"d","version":"1.0","description":"","tasks":[{"name":"t","path":"tasks/t"}],"metrics":[{"type":"mean","kwargs":{}}]}]`
	reg, err := ParseRegistry(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(reg)
	if string(out) != doc {
		t.Errorf("round trip = %s, want %s", out, doc)
	}
	if reg[0].Tasks[0].GitURL != "" {
		t.Errorf("local task GitURL = %q, want empty", reg[0].Tasks[0].GitURL)
	}
}

func TestParseRegistryErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"not an array", `{"name":"x"}`, "decode registry"},
		{"null", `null`, "got null"},
		{"truncated", `[{"name":"x"`, "decode registry"},
		{"trailing content", `[] []`, "unexpected content after the JSON document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRegistry(strings.NewReader(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseRegistry(%s) error = %v, want one containing %q", tt.doc, err, tt.want)
			}
		})
	}
}

// TestParseRegistryRefusesEntries: a bad entry is refused with every one of
// its problems, naming the entry and field; the document still parses.
func TestParseRegistryRefusesEntries(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // substrings, one per expected problem
	}{
		{"wrong type", `[{"name":1}]`, []string{`entry 0 ("@"): line 1, column 11: name: want a string, got a JSON number`}},
		{"not an object", `[7]`, []string{`entry 0 ("@"): line 1, column 3: want a JSON object, got a JSON number`}},
		{"missing fields", `[{"description":""}]`, []string{`entry 0 ("@"): name: is required`, "version: is required", "tasks: is required"}},
		{"bad task", `[{"name":"a","version":"1","description":"","tasks":[{"name":"t"},{"path":"p","git_commit_id":"abc"}]}]`,
			[]string{`entry 0 ("a@1"): tasks[0].path: is required`, "tasks[1].name: is required", "tasks[1].git_commit_id: needs git_url"}},
		{"task name with a path", `[{"name":"a","version":"1","description":"","tasks":[{"name":"../../../tmp/x","path":"p"}]}]`,
			[]string{`tasks[0].name: "../../../tmp/x" is not a task name`}},
		{"dataset name with a dot segment", `[{"name":"a/../b","version":"1","description":"","tasks":[]}]`, []string{`name: "a/../b" is not a dataset name`}},
		{"version with a slash", `[{"name":"a","version":"1/../x","description":"","tasks":[]}]`, []string{`version: "1/../x" is not a version`}},
		{"wrong type says where", "[\n{\"name\":\"a\",\"version\":\"1\",\"tasks\":[]},\n  {\"name\":\"a\",\"version\":\"2\",\"tasks\":[{\"name\":7}]}]",
			[]string{`entry 1 ("a@2"): line 3, column 47: tasks.name: want a string, got a JSON number`}},
		{"bad metric", `[{"name":"a","version":"1","description":"","tasks":[],"metrics":[{"kwargs":{}}]}]`, []string{`metrics[0]: must be an object with a "type"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := ParseRegistry(strings.NewReader(tt.doc))
			if err != nil {
				t.Fatalf("ParseRegistry(%s) = %v, want the document parsed with the entry refused", tt.doc, err)
			}
			refused := reg.Refused()
			if len(refused) != len(tt.want) {
				t.Fatalf("ParseRegistry(%s) refused %q, want %d problems like %q", tt.doc, refused, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(refused[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, refused[i], w)
				}
			}
		})
	}
}

// TestResolveRefusesOnlyTheBadEntry: one invalid entry of a registry makes
// only that dataset version fail, with its reason; every other dataset and
// version resolves.
func TestResolveRefusesOnlyTheBadEntry(t *testing.T) {
	doc := `[
{"name":"good","version":"1.0","description":"","tasks":[{"name":"t","path":"tasks/t"}]},
{"name":"mixed","version":"1.0","description":"","tasks":[{"name":"t","path":"tasks/t"}]},
{"name":"mixed","version":"2.0","description":"","tasks":[{"name":"t"}]},
{"name":"broken","version":"1.0","description":"","tasks":"not a list"},
{"name":"bad name/..","version":"1.0","tasks":[]}
]`
	reg, err := ParseRegistry(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range [][2]string{{"good", ""}, {"good", "1.0"}, {"mixed", "1.0"}} {
		if d, err := reg.Resolve(spec[0], spec[1]); err != nil || len(d.Tasks) != 1 {
			t.Errorf("Resolve(%q, %q) = %+v, %v; want the dataset", spec[0], spec[1], d, err)
		}
	}
	tests := []struct {
		name, version string
		want          []string
	}{
		{"mixed", "2.0", []string{`registry entry 2 ("mixed@2.0"): tasks[0].path: is required`, "usable versions of mixed: 1.0"}},
		// Harbor's pick for a bare name is 2.0: it is refused, not silently replaced by 1.0.
		{"mixed", "", []string{`registry entry 2 ("mixed@2.0")`, "usable versions of mixed: 1.0"}},
		{"broken", "1.0", []string{`registry entry 3 ("broken@1.0"): line 5, column`, "tasks: want an array, got a JSON string", "broken has no usable version"}},
	}
	for _, tt := range tests {
		_, err := reg.Resolve(tt.name, tt.version)
		if !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("Resolve(%q, %q) = %v, want ErrInvalidEntry", tt.name, tt.version, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Resolve(%q, %q) error %q, want it to contain %q", tt.name, tt.version, err, w)
			}
		}
	}
	if diff := cmp.Diff([]string{"broken", "good", "mixed"}, reg.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	if got := len(reg.Refused()); got != 3 {
		t.Errorf("Refused() = %q, want the problems of the three bad entries", reg.Refused())
	}
}

func TestResolve(t *testing.T) {
	reg := Registry{
		{Name: "bench", Version: "1.0", Tasks: []TaskRef{}},
		{Name: "bench", Version: "1.10", Tasks: []TaskRef{}},
		{Name: "bench", Version: "1.9", Tasks: []TaskRef{}},
		{Name: "bench", Version: "parity", Tasks: []TaskRef{}},
		{Name: "bench", Version: "2.0rc1", Description: "first", Tasks: []TaskRef{}},
		{Name: "bench", Version: "2.0rc1", Description: "duplicate", Tasks: []TaskRef{}},
		{Name: "live", Version: "1.0", Tasks: []TaskRef{}},
		{Name: "live", Version: "head", Tasks: []TaskRef{}},
	}
	tests := []struct {
		name, version   string
		wantSpec        string
		wantDescription string
		wantErr         error
		errMentions     []string
	}{
		{name: "bench", wantSpec: "bench@2.0rc1", wantDescription: "first"},
		{name: "bench", version: "parity", wantSpec: "bench@parity"},
		{name: "bench", version: "1.9", wantSpec: "bench@1.9"},
		{name: "live", wantSpec: "live@head"},
		{name: "live", version: "1.0", wantSpec: "live@1.0"},
		{name: "bench", version: "3.0", wantErr: ErrVersionNotFound, errMentions: []string{"bench@3.0", "1.0, 1.9, 1.10, 2.0rc1, parity"}},
		{name: "bench", version: "1.0.0", wantErr: ErrVersionNotFound}, // exact match, not PEP 440 equality
		{name: "nope", wantErr: ErrDatasetNotFound, errMentions: []string{`"nope"`, "bench, live"}},
	}
	for _, tt := range tests {
		t.Run(tt.name+"@"+tt.version, func(t *testing.T) {
			d, err := reg.Resolve(tt.name, tt.version)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Resolve(%q, %q) error = %v, want %v", tt.name, tt.version, err, tt.wantErr)
			}
			for _, m := range tt.errMentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("Resolve(%q, %q) error %q does not mention %q", tt.name, tt.version, err, m)
				}
			}
			if tt.wantErr != nil {
				return
			}
			if d.Spec() != tt.wantSpec || d.Description != tt.wantDescription {
				t.Errorf("Resolve(%q, %q) = %s (%q), want %s (%q)", tt.name, tt.version, d.Spec(), d.Description, tt.wantSpec, tt.wantDescription)
			}
		})
	}
	if got := reg.Versions("nope"); got != nil {
		t.Errorf("Versions(nope) = %v, want nil", got)
	}
}

func TestParseSpec(t *testing.T) {
	tests := []struct {
		spec, wantName, wantVersion string
		wantErr                     bool
	}{
		{spec: "terminal-bench@2.0", wantName: "terminal-bench", wantVersion: "2.0"},
		{spec: "terminal-bench", wantName: "terminal-bench"},
		{spec: "arc_agi_2@1.0", wantName: "arc_agi_2", wantVersion: "1.0"},
		{spec: "org/bench@1!2.0+local.1", wantName: "org/bench", wantVersion: "1!2.0+local.1"},
		{spec: "swe-lancer-diamond@manager", wantName: "swe-lancer-diamond", wantVersion: "manager"},
		{spec: "", wantErr: true},
		{spec: "@1.0", wantErr: true},
		{spec: "bench@", wantErr: true},
		{spec: "bench@1.0@2", wantErr: true},
		{spec: "bench @1.0", wantErr: true},
		{spec: "bench@1 0", wantErr: true},
		{spec: "-bench", wantErr: true},
	}
	for _, tt := range tests {
		name, version, err := ParseSpec(tt.spec)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseSpec(%q) error = %v, wantErr %v", tt.spec, err, tt.wantErr)
			continue
		}
		if name != tt.wantName || version != tt.wantVersion {
			t.Errorf("ParseSpec(%q) = %q, %q, want %q, %q", tt.spec, name, version, tt.wantName, tt.wantVersion)
		}
	}
}

func BenchmarkParseRegistry(b *testing.B) {
	data := loadSnapshot(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRegistry(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// Harbor's package task ids are "org/name"; a registry listing one is read,
// not refused with every other dataset of the registry.
func TestParseRegistryPackageTaskName(t *testing.T) {
	doc := `[{"name":"d","version":"1.0","description":"","tasks":[{"name":"terminal-bench/git-multibranch","path":"tasks/git-multibranch"}]}]`
	reg, err := ParseRegistry(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("ParseRegistry = %v, want no error", err)
	}
	if got := reg[0].Tasks[0].Name; got != "terminal-bench/git-multibranch" {
		t.Errorf("task name = %q", got)
	}
	// Two slashes break Harbor's org/name rule: that entry is refused
	// alone, naming the task.
	bad, err := ParseRegistry(strings.NewReader(strings.Replace(doc, "terminal-bench/git-multibranch", "a/b/c", 1)))
	if err != nil {
		t.Fatalf("ParseRegistry with task \"a/b/c\" = %v, want the entry refused alone", err)
	}
	if refused := strings.Join(bad.Refused(), "; "); !strings.Contains(refused, "a/b/c") {
		t.Errorf("refused = %q, want the task \"a/b/c\" named", refused)
	}
}

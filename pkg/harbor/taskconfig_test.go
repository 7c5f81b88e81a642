package harbor

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

func TestParseTaskConfigTestdata(t *testing.T) {
	tests := []struct {
		name string
		file string
		want TaskConfig
	}{
		{
			name: "schema 1.4",
			file: "testdata/tasks/schema14/task.toml",
			want: TaskConfig{
				Version: "1.4",
				Source:  "gauntlet-examples",
				Package: &PackageInfo{
					Name: "gauntlet/csv-summary", Version: "1.2.0", Description: "Summarise a CSV file",
					Authors:  []Author{{Name: "Ada Lovelace", Email: "ada@example.com"}, {Name: "Charles Babbage"}},
					Keywords: []string{"csv", "data"},
				},
				Metadata: Metadata{
					"difficulty": "medium", "category": "data-processing",
					"tags": []any{"csv", "python"}, "expert_time_estimate_min": int64(15),
				},
				Agent: AgentConfig{
					TimeoutSec: ptr(900.0), User: "1000",
					NetworkMode: NetworkAllowlist, AllowedHosts: []string{"pypi.org"},
				},
				Verifier: VerifierConfig{TimeoutSec: 120, Env: map[string]string{"STRICT": "1"}, User: "root"},
				Environment: EnvironmentConfig{
					BuildTimeoutSec: 300, DockerImage: "ghcr.io/example/csv-summary:1.2.0",
					CPUs: 2, MemoryMB: 4096, StorageMB: 10240, NetworkMode: NetworkNone,
					Env: map[string]string{"LANG": "C.UTF-8"}, Workdir: "/app",
				},
				Solution: SolutionConfig{Env: map[string]string{"SOLUTION_MODE": "reference"}},
			},
		},
		{
			name: "legacy 1.0 with deprecated memory, storage and allow_internet",
			file: "testdata/tasks/legacy/task.toml",
			want: TaskConfig{
				Version: "1.0",
				Metadata: Metadata{
					"author_name": "Alex Example", "author_email": "alex@example.com",
					"difficulty": "easy", "category": "programming", "tags": []any{"trivial"},
				},
				Verifier: VerifierConfig{TimeoutSec: 180, Env: map[string]string{}},
				Environment: EnvironmentConfig{
					BuildTimeoutSec: 600, CPUs: 1, MemoryMB: 2048, StorageMB: 10240,
					NetworkMode: NetworkNone, Env: map[string]string{},
				},
				Solution: SolutionConfig{Env: map[string]string{}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseTaskConfig(data, tt.file)
			if err != nil {
				t.Fatalf("ParseTaskConfig(%q) error: %v", tt.file, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseTaskConfig(%q) mismatch (-want +got):\n%s", tt.file, diff)
			}
		})
	}
}

func TestParseTaskConfigDefaults(t *testing.T) {
	got, err := ParseTaskConfig([]byte(""), "task.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := TaskConfig{
		Version:     DefaultSchemaVersion,
		Metadata:    Metadata{},
		Verifier:    VerifierConfig{TimeoutSec: 600, Env: map[string]string{}},
		Environment: EnvironmentConfig{BuildTimeoutSec: 600, NetworkMode: NetworkPublic, Env: map[string]string{}},
		Solution:    SolutionConfig{Env: map[string]string{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseTaskConfig(empty) mismatch (-want +got):\n%s", diff)
	}
	if got.AgentTimeout() != 0 {
		t.Errorf("AgentTimeout() = %v, want 0 (no timeout)", got.AgentTimeout())
	}
	if got.VerifierTimeout() != 10*time.Minute {
		t.Errorf("VerifierTimeout() = %v, want 10m", got.VerifierTimeout())
	}
	if tags := got.Metadata.Tags(); tags == nil || len(tags) != 0 {
		t.Errorf("Tags() = %#v, want empty non-nil", tags)
	}
}

func TestParseTaskConfigValues(t *testing.T) {
	tests := []struct {
		name  string
		toml  string
		check func(TaskConfig) any
		want  any
	}{
		{"agent timeout", "[agent]\ntimeout_sec = 1.5", func(c TaskConfig) any { return c.AgentTimeout() }, 1500 * time.Millisecond},
		{"verifier timeout int", "[verifier]\ntimeout_sec = 30", func(c TaskConfig) any { return c.VerifierTimeout() }, 30 * time.Second},
		{"memory 512M", "[environment]\nmemory = \"512M\"", func(c TaskConfig) any { return c.Environment.MemoryMB }, 512},
		{"memory 1.5g lower case", "[environment]\nmemory = \" 1.5g \"", func(c TaskConfig) any { return c.Environment.MemoryMB }, 1536},
		{"memory K rounds down", "[environment]\nmemory = \"1048577K\"", func(c TaskConfig) any { return c.Environment.MemoryMB }, 1024},
		{"memory agrees with memory_mb", "[environment]\nmemory = \"2G\"\nmemory_mb = 2048", func(c TaskConfig) any { return c.Environment.MemoryMB }, 2048},
		{"allow_internet true", "[environment]\nallow_internet = true", func(c TaskConfig) any { return c.Environment.NetworkMode }, NetworkPublic},
		{"network_mode wins over allow_internet", "[environment]\nallow_internet = false\nnetwork_mode = \"public\"", func(c TaskConfig) any { return c.Environment.NetworkMode }, NetworkPublic},
		{"hosts imply allowlist", "[environment]\nallowed_hosts = [\"example.com\"]", func(c TaskConfig) any { return c.Environment.NetworkMode }, NetworkAllowlist},
		{"agent inherits network", "", func(c TaskConfig) any { return c.Agent.NetworkMode }, ""},
		{"fractional cpus", "[environment]\ncpus = 0.5", func(c TaskConfig) any { return c.Environment.CPUs }, 0.5},
		{"difficulty", "[metadata]\ndifficulty = \"hard\"", func(c TaskConfig) any { return c.Metadata.Difficulty() }, "hard"},
		{"category absent", "[metadata]\nx = 1", func(c TaskConfig) any { return c.Metadata.Category() }, ""},
		{"tags", "[metadata]\ntags = [\"a\", \"b\"]", func(c TaskConfig) any { return c.Metadata.Tags() }, []string{"a", "b"}},
		{"unknown keys ignored", "future = 1\n[environment]\nfuture = 2", func(c TaskConfig) any { return c.Version }, "1.4"},
		{"tags may be one string", "[metadata]\ntags = \"solo\"", func(c TaskConfig) any { return c.Metadata.Tags() }, []string{"solo"}},
		{"tags skip non-strings", "[metadata]\ntags = [\"a\", 2]", func(c TaskConfig) any { return c.Metadata.Tags() }, []string{"a"}},
		{"category with spaces is free-form, not a selector", "[metadata]\ncategory = \"data science\"", func(c TaskConfig) any { return c.Metadata.Category() }, ""},
		{"difficulty number is free-form", "[metadata]\ndifficulty = 3", func(c TaskConfig) any { return c.Metadata.Difficulty() }, ""},
		{"plain task runs", "[environment]\nos = \"linux\"\ngpus = 0\n[verifier]\nenvironment_mode = \"shared\"", func(c TaskConfig) any { return c.Unsupported }, []string(nil)},
		{"workdir", "[environment]\nworkdir = \"/custom-workdir/\"", func(c TaskConfig) any { return c.Environment.Workdir }, "/custom-workdir"},
		{"schema_version beats version", "schema_version = \"1.3\"\nversion = \"1.0\"", func(c TaskConfig) any { return c.Version }, "1.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseTaskConfig([]byte(tt.toml), "task.toml")
			if err != nil {
				t.Fatalf("ParseTaskConfig(%q) error: %v", tt.toml, err)
			}
			if diff := cmp.Diff(tt.want, tt.check(cfg)); diff != "" {
				t.Errorf("ParseTaskConfig(%q) mismatch (-want +got):\n%s", tt.toml, diff)
			}
		})
	}
}

func TestParseTaskConfigErrors(t *testing.T) {
	tests := []struct {
		name       string
		toml       string
		wantFields []string // every FieldError, in order
	}{
		{"agent timeout string", "[agent]\ntimeout_sec = \"600\"", []string{"agent.timeout_sec"}},
		{"agent timeout zero", "[agent]\ntimeout_sec = 0", []string{"agent.timeout_sec"}},
		{"verifier timeout negative", "[verifier]\ntimeout_sec = -1.0", []string{"verifier.timeout_sec"}},
		{"memory_mb float", "[environment]\nmemory_mb = 2048.5", []string{"environment.memory_mb"}},
		{"memory_mb string", "[environment]\nmemory_mb = \"2G\"", []string{"environment.memory_mb"}},
		{"memory bad unit", "[environment]\nmemory = \"2GB\"", []string{"environment.memory"}},
		{"workdir relative", "[environment]\nworkdir = \"app\"", []string{"environment.workdir"}},
		{"verifier workdir relative", "[verifier]\nenvironment_mode = \"separate\"\n[verifier.environment]\nworkdir = \"./x\"", []string{"verifier.environment.workdir"}},
		{"memory conflicts", "[environment]\nmemory = \"2G\"\nmemory_mb = 4096", []string{"environment.memory"}},
		{"storage not a size", "[environment]\nstorage = \"lots\"", []string{"environment.storage"}},
		{"cpus boolean", "[environment]\ncpus = true", []string{"environment.cpus"}},
		{"network mode", "[environment]\nnetwork_mode = \"host\"", []string{"environment.network_mode"}},
		{"hosts without allowlist", "[verifier]\nnetwork_mode = \"public\"\nallowed_hosts = [\"a.com\"]", []string{"verifier.allowed_hosts"}},
		{"env value not string", "[verifier]\nenv = { N = 1 }", []string{"verifier.env.N"}},
		{"verifier environment_mode", "[verifier]\nenvironment_mode = \"both\"", []string{"verifier.environment_mode"}},
		{"shared verifier with an environment", "[verifier]\nenvironment_mode = \"shared\"\n[verifier.environment]\ndocker_image = \"x\"", []string{"verifier.environment_mode"}},
		{"environment os", "[environment]\nos = \"plan9\"", []string{"environment.os"}},
		// What no environment can carry: each attempt would fail in execve.
		{"NUL in an environment value", "[environment.env]\nN = \"a\\u0000b\"", []string{"environment.env.N"}},
		{"NUL in a verifier env value", "[verifier.env]\nN = \"\\u0000\"", []string{"verifier.env.N"}},
		{"NUL in a solution env value", "[solution.env]\nN = \"x\\u0000\"", []string{"solution.env.N"}},
		{"'=' in an env name", "[environment.env]\n\"A=B\" = \"x\"", []string{"environment.env"}},
		{"empty env name", "[verifier.env]\n\"\" = \"x\"", []string{"verifier.env"}},
		{"agent not table", "agent = 5", []string{"agent"}},
		{"schema 2", "schema_version = \"2.0\"", []string{"schema_version"}},
		{"legacy version number", "version = 1.0", []string{"version"}},
		{"task without name", "[task]\ndescription = \"x\"", []string{"task.name"}},
		{"task name not org/name", "[task]\nname = \"plain\"", []string{"task.name"}},
		{"author without name", "[task]\nname = \"a/b\"\nauthors = [{ email = \"x@y\" }]", []string{"task.authors[0].name"}},
		{"user float", "[agent]\nuser = 1.5", []string{"agent.user"}},
		{
			name:       "several errors at once",
			toml:       "[agent]\ntimeout_sec = \"x\"\n[verifier]\ntimeout_sec = \"y\"\n[environment]\nmemory = \"2X\"",
			wantFields: []string{"agent.timeout_sec", "verifier.timeout_sec", "environment.memory"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTaskConfig([]byte(tt.toml), "tasks/x/task.toml")
			if err == nil {
				t.Fatalf("ParseTaskConfig(%q) = nil error, want errors for %v", tt.toml, tt.wantFields)
			}
			if diff := cmp.Diff(tt.wantFields, fieldErrors(t, err)); diff != "" {
				t.Errorf("ParseTaskConfig(%q) error fields mismatch (-want +got):\n%s\nerror: %v", tt.toml, diff, err)
			}
			if !strings.Contains(err.Error(), "tasks/x/task.toml: "+tt.wantFields[0]+": ") {
				t.Errorf("ParseTaskConfig(%q) error %q does not name file and field", tt.toml, err)
			}
		})
	}
}

func TestParseTaskConfigSyntaxError(t *testing.T) {
	_, err := ParseTaskConfig([]byte("[agent\ntimeout_sec = 1"), "tasks/x/task.toml")
	if err == nil || !strings.HasPrefix(err.Error(), "tasks/x/task.toml: ") {
		t.Fatalf("ParseTaskConfig(bad syntax) error = %v, want one naming the file", err)
	}
}

// fieldErrors lists the Field of every *FieldError joined in err.
func fieldErrors(t *testing.T, err error) []string {
	t.Helper()
	var errs []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	} else {
		errs = []error{err}
	}
	var fields []string
	for _, e := range errs {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("error %v is not a *FieldError", e)
		}
		fields = append(fields, fe.Field)
	}
	return fields
}

func TestLoadTask(t *testing.T) {
	tests := []struct {
		name    string
		dir     string
		want    Task
		wantErr error
	}{
		{
			name: "schema 1.4 takes [task].name",
			dir:  "testdata/tasks/schema14",
			want: Task{Name: "gauntlet/csv-summary", Dir: "testdata/tasks/schema14", HasSolution: true, HasEnvironment: true,
				Instruction: "Read `/app/data.csv` and write the sum of the `amount` column to `/app/total.txt`.\n"},
		},
		{
			name: "legacy takes the directory name",
			dir:  "testdata/tasks/legacy/",
			want: Task{Name: "legacy", Dir: "testdata/tasks/legacy/", Instruction: "Create `/app/hello.txt` containing `Hello, world!`.\n"},
		},
		{name: "missing tests/test.sh", dir: "testdata/tasks/missing-tests", wantErr: ErrTaskIncomplete},
		{name: "missing directory", dir: "testdata/tasks/nope", wantErr: ErrTaskIncomplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadTask(tt.dir)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("LoadTask(%q) error = %v, want %v", tt.dir, err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			got.Config = TaskConfig{} // checked by the ParseTaskConfig tests
			if len(got.UnsupportedFiles) != 0 {
				t.Errorf("a plain task has unsupported files %q", got.UnsupportedFiles)
			}
			got.UnsupportedFiles = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LoadTask(%q) mismatch (-want +got):\n%s", tt.dir, diff)
			}
		})
	}
}

func TestLoadTaskMissingFilesNamed(t *testing.T) {
	_, err := LoadTask("testdata/tasks/missing-tests")
	want := filepath.Join("testdata/tasks/missing-tests", "tests", "test.sh")
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("LoadTask error = %v, want it to name %s", err, want)
	}
}

func TestLoadTaskBadConfigNamesFile(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"task.toml":      "[agent]\ntimeout_sec = \"long\"\n",
		"instruction.md": "x",
		"tests/test.sh":  "#!/bin/sh\n",
	})
	_, err := LoadTask(dir)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.File != filepath.Join(dir, "task.toml") || fe.Field != "agent.timeout_sec" {
		t.Errorf("LoadTask error = %v, want a FieldError for %s agent.timeout_sec", err, filepath.Join(dir, "task.toml"))
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A category becomes a key and a path only when it is a name: [metadata]
// is free-form, so anything else is kept in the table and never selected.
func TestParseTaskConfigCategoryIsAName(t *testing.T) {
	cfg, err := ParseTaskConfig([]byte("[metadata]\ncategory = \"../../etc\"\n"), "task.toml")
	if err != nil {
		t.Fatalf("ParseTaskConfig(category ../../etc): %v, want it read as free-form metadata", err)
	}
	if c := cfg.Metadata.Category(); c != "" {
		t.Errorf("Category() = %q, want \"\" (not a name: never a key or a path)", c)
	}
	if cfg.Metadata["category"] != "../../etc" {
		t.Errorf("metadata lost the raw category: %v", cfg.Metadata)
	}
}

// Every key of Harbor's current format that gauntlet does not run makes the
// task unsupported, named (issue 23, "nothing silently ignored").
func TestParseTaskConfigNamesWhatGauntletDoesNotRun(t *testing.T) {
	tests := []struct{ toml, want string }{
		{"[[steps]]\nname = \"one\"\n[steps.verifier]\nenvironment_mode = \"separate\"", `steps[0] (one).verifier.environment_mode = "separate" (a separate verifier environment for a step)`},
		{"[[steps]]\nname = \"one\"\n[steps.verifier.environment]\ndocker_image = \"x\"", "steps[0] (one).verifier.environment (a separate verifier environment for a step)"},
		{"[verifier.environment]\ngpus = 1", "[verifier.environment].gpus > 0 (this platform has no GPUs)"},
		{"[environment]\nos = \"Windows\"", `[environment].os = "windows" (this platform runs Linux containers only)`},
		{"[environment]\ngpus = 2", "[environment].gpus = 2 (this platform has no GPUs)"},
		{"[environment]\ntpu = { type = \"v6e\", topology = \"2x4\" }", "[environment.tpu] (this platform has no TPUs)"},
		{"[[environment.mcp_servers]]\nname = \"x\"\nurl = \"http://x\"", "[[environment.mcp_servers]] (MCP servers for the agent)"},
		{"[environment]\nskills_dir = \"/skills\"", "[environment].skills_dir (agent skills)"},
	}
	for _, tt := range tests {
		cfg, err := ParseTaskConfig([]byte(tt.toml), "task.toml")
		if err != nil {
			t.Errorf("ParseTaskConfig(%q): %v", tt.toml, err)
			continue
		}
		if !slices.Equal(cfg.Unsupported, []string{tt.want}) {
			t.Errorf("ParseTaskConfig(%q).Unsupported = %q, want [%q]", tt.toml, cfg.Unsupported, tt.want)
		}
	}
	// Empty arrays use nothing, as Harbor reads them.
	cfg, err := ParseTaskConfig([]byte("artifacts = []\nsteps = []"), "task.toml")
	if err != nil || len(cfg.Unsupported) != 0 {
		t.Errorf("empty arrays: %q, %v", cfg.Unsupported, err)
	}
}

func TestLoadTaskNamesUnsupportedLayouts(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A multi-step task has no instruction or tests at its root.
	write("task.toml", "[[steps]]\nname = \"one\"\n")
	write("steps/one/instruction.md", "do one")
	write("steps/one/tests/test.sh", "exit 0")
	write("environment/docker-compose.yaml", "services: {main: {build: .}}")
	task, err := LoadTask(dir)
	if err != nil {
		t.Fatalf("LoadTask: %v", err)
	}
	want := []string{"environment/docker-compose.yaml: services.main.build (a build for main other than the task's)"}
	if diff := cmp.Diff(want, task.Unsupported()); diff != "" {
		t.Errorf("Unsupported (-want +got):\n%s", diff)
	}
}

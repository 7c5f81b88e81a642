package benchsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// A task that uses what gauntlet does not run yet (issue 23) syncs, and is
// unavailable with a reason naming each key and file; the plain tasks of
// the same dataset stay available.
func TestSyncMakesTasksUsingUnsupportedFeaturesUnavailable(t *testing.T) {
	dir := t.TempDir()
	copyExample(t, "fix-median", filepath.Join(dir, "tasks", "plain"))
	copyExample(t, "fix-median", filepath.Join(dir, "tasks", "separate"))
	appendFile(t, filepath.Join(dir, "tasks", "separate", "task.toml"), "\n[verifier.environment]\ndocker_image = \"python:3.13-slim\"\n")
	copyExample(t, "fix-median", filepath.Join(dir, "tasks", "sidecar"))
	appendFile(t, filepath.Join(dir, "tasks", "sidecar", "environment", "docker-compose.yaml"), "services:\n  main:\n    depends_on: [db]\n  db:\n    image: postgres\n    privileged: true\n")
	copyExample(t, "fix-median", filepath.Join(dir, "tasks", "sidecar-ok"))
	appendFile(t, filepath.Join(dir, "tasks", "sidecar-ok", "environment", "docker-compose.yaml"), "services:\n  main:\n    depends_on: [db]\n  db:\n    image: postgres\n")
	copyExample(t, "fix-median", filepath.Join(dir, "tasks", "healthy"))
	appendFile(t, filepath.Join(dir, "tasks", "healthy", "task.toml"), "\n[environment.healthcheck]\ncommand = \"true\"\n")
	// A multi-step task has its instructions and tests in steps/.
	multi := filepath.Join(dir, "tasks", "multi")
	for rel, body := range map[string]string{
		"task.toml":                   "[[steps]]\nname = \"one\"\n[[steps]]\nname = \"two\"\n",
		"steps/one/instruction.md":    "first",
		"steps/one/tests/test.sh":     "exit 0",
		"steps/two/instruction.md":    "second",
		"steps/two/tests/test.sh":     "exit 0",
		"environment/Dockerfile":      "FROM debian:bookworm-slim\n",
		"solution/solve.sh":           "true",
		"steps/one/solution/solve.sh": "true",
	} {
		appendFile(t, filepath.Join(multi, rel), body)
		// The same task with a step verifying in a separate environment,
		// which gauntlet does not run yet.
		appendFile(t, filepath.Join(dir, "tasks", "multi-separate", rel), body)
	}
	appendFile(t, filepath.Join(dir, "tasks", "multi-separate", "task.toml"), "[steps.verifier]\nenvironment_mode = \"separate\"\n")
	reg := filepath.Join(dir, "registry.json")
	writeRegistry(t, reg, `[{"name":"mixed","version":"1","description":"","tasks":[`+
		`{"name":"plain","path":"tasks/plain"},{"name":"separate","path":"tasks/separate"},`+
		`{"name":"sidecar","path":"tasks/sidecar"},{"name":"multi","path":"tasks/multi"},{"name":"multi-separate","path":"tasks/multi-separate"},{"name":"healthy","path":"tasks/healthy"},{"name":"sidecar-ok","path":"tasks/sidecar-ok"}]}]`)
	e := newEnv(t, reg)
	b, err := e.svc.Add(context.Background(), ws, "mixed@1")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	got := e.benchmark(t, b.Key)
	if got.Status != records.SyncReady {
		t.Fatalf("status %s (%s), want ready", got.Status, got.SyncError)
	}
	m, _ := e.manifest(t, got)
	want := map[string]string{
		"plain":    "",
		"separate": `task separate: [verifier] environment_mode = "separate" (separate verifier environments): the verifier runs in an image of its own, and this platform prepares no images at sync`,
		"sidecar":  "task sidecar: uses what gauntlet does not run yet: environment/docker-compose.yaml: services.db.privileged (privileged containers)",
		// A platform without task images runs no sidecar services.
		"sidecar-ok": "task sidecar-ok: environment/docker-compose.yaml: services beside the main container (db): this platform prepares no task images",
		"healthy":    "",
		// Multi-step tasks run (issue 23 item 1); a step's separate
		// verifier environment does not yet.
		"multi":          "",
		"multi-separate": `task multi-separate: uses what gauntlet does not run yet: steps[1] (two).verifier.environment_mode = "separate" (a separate verifier environment for a step)`,
	}
	for _, task := range m.Tasks {
		w, ok := want[task.Name]
		if !ok {
			t.Errorf("unexpected task %s", task.Name)
			continue
		}
		if task.UnavailableReason() != w {
			t.Errorf("task %s: unavailable = %q, want %q", task.Name, task.UnavailableReason(), w)
		}
		if task.Available() != (w == "") {
			t.Errorf("task %s: available = %v", task.Name, task.Available())
		}
		if task.Name == "multi" && (len(task.Steps) != 2 || task.Steps[0].Name != "one" || task.RewardStrategy != "mean") {
			t.Errorf("task multi: steps %+v, strategy %q; want one and two, mean", task.Steps, task.RewardStrategy)
		}
		delete(want, task.Name)
	}
	if len(want) != 0 {
		t.Errorf("tasks missing from the manifest: %v", want)
	}
}

func appendFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(body); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".sh") {
		if err := os.Chmod(path, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// A compose file that cannot be read (here: a dependency cycle, a build
// context outside the task) fails the sync with an error naming the task,
// the file and the field; nothing is stored.
func TestSyncRefusesABadComposeFile(t *testing.T) {
	for name, compose := range map[string]string{
		"cycle":   "services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n    depends_on: [a]\n",
		"context": "services:\n  api:\n    build: ../../\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			copyExample(t, "fix-median", filepath.Join(dir, "tasks", "bad"))
			appendFile(t, filepath.Join(dir, "tasks", "bad", "environment", "docker-compose.yaml"), compose)
			reg := filepath.Join(dir, "registry.json")
			writeRegistry(t, reg, `[{"name":"bad","version":"1","description":"","tasks":[{"name":"bad","path":"tasks/bad"}]}]`)
			e := newEnv(t, reg)
			b, err := e.svc.Add(context.Background(), ws, "bad@1")
			if err != nil {
				t.Fatal(err)
			}
			e.sync(t, b.Key)
			got := e.benchmark(t, b.Key)
			want := map[string]string{"cycle": "dependency cycle", "context": "services.api.build.context"}[name]
			if got.Status != records.SyncFailed || !strings.Contains(got.SyncError, "task bad: environment/docker-compose.yaml: ") || !strings.Contains(got.SyncError, want) {
				t.Errorf("status %s, error %q; want failed naming the task, the file and %q", got.Status, got.SyncError, want)
			}
			if keys := blobKeys(t, e); len(keys) != 0 {
				t.Errorf("blobs after a refused sync: %v", keys)
			}
		})
	}
}

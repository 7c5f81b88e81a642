package harbor

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/compose"
)

// composeTask writes a plain task with the given environment/ files.
func composeTask(t *testing.T, toml string, env map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"task.toml": toml, "instruction.md": "do it", "tests/test.sh": "exit 0"}
	for rel, body := range env {
		files["environment/"+rel] = body
	}
	writeFiles(t, dir, files)
	return dir
}

// A compose file's unimplemented attributes make the task unsupported,
// named; one that only sets main's environment runs as Harbor runs it, with
// [environment.env] winning.
func TestLoadTaskCompose(t *testing.T) {
	dir := composeTask(t, "[environment.env]\nB = \"from-toml\"\n", map[string]string{
		"docker-compose.yaml": "services:\n  main:\n    environment:\n      A: from-compose\n      B: from-compose\n",
	})
	task, err := LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Unsupported()) != 0 || task.Compose == nil {
		t.Fatalf("main-only compose: unsupported %q, compose %v; want it run", task.Unsupported(), task.Compose)
	}
	if diff := cmp.Diff(map[string]string{"A": "from-compose", "B": "from-toml"}, task.Config.Environment.Env); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}

	dir = composeTask(t, "", map[string]string{
		"docker-compose.yaml": "services:\n  main:\n    depends_on: [api]\n  api:\n    image: python:3.12-slim\n    privileged: true\n",
	})
	task, err = LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"environment/docker-compose.yaml: services.api.privileged (privileged containers)"}
	if diff := cmp.Diff(want, task.Unsupported()); diff != "" {
		t.Errorf("Unsupported (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"api"}, task.Sidecars()); diff != "" {
		t.Errorf("Sidecars (-want +got):\n%s", diff)
	}
}

// A compose file that cannot be read is the task's error, naming the file
// and the field; names Harbor does not read are ignored, as Harbor does.
func TestLoadTaskComposeErrors(t *testing.T) {
	dir := composeTask(t, "", map[string]string{
		"docker-compose.yaml": "services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n    depends_on: [a]\n",
	})
	_, err := LoadTask(dir)
	var ce *compose.Error
	if !errors.As(err, &ce) || ce.File != ComposeFile || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("LoadTask(cycle) = %v, want a compose error on %s naming the cycle", err, ComposeFile)
	}
	dir = composeTask(t, "", map[string]string{"compose.yaml": "services:\n  a:\n    privileged: true\n"})
	task, err := LoadTask(dir)
	if err != nil || task.Compose != nil || len(task.Unsupported()) != 0 {
		t.Errorf("compose.yaml (not read by Harbor): %v, %v, %q; want it ignored", err, task.Compose, task.Unsupported())
	}
}

// [[verifier.collect]] hooks are read with Harbor's defaults; one naming a
// service the task does not have is the task's error, naming the field.
func TestLoadTaskCollectHooks(t *testing.T) {
	toml := "[[verifier.collect]]\nservice = \"api\"\ncommand = \"curl -s localhost:8000/stats > /tmp/stats.json\"\ntimeout_sec = 30\n" +
		"[[verifier.collect]]\ncommand = \"cp /app/out /logs/artifacts/\"\nuser = 1000\n"
	dir := composeTask(t, toml, map[string]string{"docker-compose.yaml": "services:\n  api:\n    image: python:3.12-slim\n"})
	task, err := LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []CollectHook{
		{Command: "curl -s localhost:8000/stats > /tmp/stats.json", Service: "api", TimeoutSec: 30},
		{Command: "cp /app/out /logs/artifacts/", Service: "main", TimeoutSec: DefaultCollectTimeoutSec, User: "1000"},
	}
	if diff := cmp.Diff(want, task.Config.Verifier.Collect); diff != "" {
		t.Errorf("Collect (-want +got):\n%s", diff)
	}
	if len(task.Unsupported()) != 0 {
		t.Errorf("Unsupported = %q, want none", task.Unsupported())
	}
	for toml, field := range map[string]string{
		"[[verifier.collect]]\nservice = \"db\"\ncommand = \"true\"\n":      "verifier.collect[0].service",
		"[[verifier.collect]]\nservice = \"api\"\n":                         "verifier.collect[0].command",
		"[[verifier.collect]]\nservice = \"-x\"\ncommand = \"true\"\n":      "verifier.collect[0].service",
		"[[verifier.collect]]\ncommand = \"true\"\ntimeout_sec = 0\n":       "verifier.collect[0].timeout_sec",
		"artifacts = [\"/app/x\", {source = \"/log\", service = \"db\"}]\n": "artifacts[1].service",
	} {
		dir := composeTask(t, toml, map[string]string{"docker-compose.yaml": "services:\n  api:\n    image: python:3.12-slim\n"})
		_, err := LoadTask(dir)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("LoadTask(%q) = %v, want an error on %s", toml, err, field)
		}
	}
}

// An artifact of a sidecar service loads (the runner collects it from the
// service's filesystem) and is not an unsupported feature.
func TestLoadTaskWithServiceArtifacts(t *testing.T) {
	toml := "artifacts = [{source = \"/var/log/api/orders.log\", service = \"api\"}, \"/app/out.txt\"]\n"
	dir := composeTask(t, toml, map[string]string{"docker-compose.yaml": "services:\n  api:\n    image: python:3.12-slim\n"})
	task, err := LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Unsupported()) != 0 {
		t.Errorf("Unsupported = %q, want none", task.Unsupported())
	}
	if got := task.Config.Artifacts[0]; got.Service != "api" || !got.Sidecar() {
		t.Errorf("artifact 0 = %+v, want the api service's", got)
	}
}

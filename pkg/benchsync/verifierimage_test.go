package benchsync

import (
	"context"
	"strings"
	"testing"
)

// A separate verifier's image is pinned at sync like the task's; one that
// lacks /tests/test.sh, one that cannot be had, one without an image at
// all, and any on a platform that runs no separate verifier make the task
// unavailable naming it; shared tasks are untouched.
func TestSyncPinsSeparateVerifierImages(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "v1")
	reg.push(t, "library/grader:1", "tests/test.sh", "#!/bin/sh\n")
	const sep = "[verifier]\nenvironment_mode = \"separate\"\n"
	location := writeImageTasks(t, []imageTask{
		{name: "shared", environment: "docker_image = \"app:1\"\n"},
		{name: "graded", environment: "docker_image = \"app:1\"\n[verifier.environment]\ndocker_image = \"grader:1\"\n"},
		{name: "no-script", environment: "docker_image = \"app:1\"\n[verifier.environment]\ndocker_image = \"app:1\"\n"},
		{name: "gone", environment: "docker_image = \"app:1\"\n[verifier.environment]\ndocker_image = \"nowhere:1\"\n"},
		{name: "no-image", environment: "docker_image = \"app:1\"\n[verifier.environment]\ncpus = 1\n"},
		{name: "mode-only", environment: "docker_image = \"app:1\"\n", files: map[string]string{"task.toml": sep + "[environment]\ndocker_image = \"grader:1\"\n"}},
	})
	e := newEnv(t, location)
	hasFile := func(_ context.Context, pinned, path string) (bool, error) {
		return strings.Contains(pinned, "/grader@") && path == VerifierTestScript, nil
	}
	e.svc.envs = &Environments{Resolver: reg, HasFile: hasFile}
	b, err := e.svc.Add(ctx, ws, "envs")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	m, _ := e.manifest(t, e.benchmark(t, b.Key))
	want := map[string]string{
		"shared":    "",
		"graded":    "",
		"mode-only": "", // a fresh copy of [environment]: its docker_image
		"no-script": "does not provide /tests/test.sh",
		"gone":      "separate verifier: image nowhere:1",
		"no-image":  "tests/Dockerfile is missing and [verifier.environment] names no docker_image",
	}
	for name, w := range want {
		task, ok := m.Task(name)
		if !ok {
			t.Fatalf("task %s not in the manifest", name)
		}
		reason := task.UnavailableReason()
		switch {
		case w == "" && reason != "":
			t.Errorf("%s unavailable: %s", name, reason)
		case w != "" && (!strings.Contains(reason, w) || !strings.HasPrefix(reason, "task "+name+": ")):
			t.Errorf("%s: reason %q, want it to name the task and contain %q", name, reason, w)
		}
	}
	shared, _ := m.Task("shared")
	graded, _ := m.Task("graded")
	if shared.Environment.Verifier != nil {
		t.Errorf("shared task has a verifier image %+v", shared.Environment.Verifier)
	}
	v := graded.Environment.Verifier
	if v == nil || !strings.Contains(v.Pinned, "/grader@sha256:") || v.Digest == "" || v.Source != "pull" {
		t.Errorf("graded verifier %+v, want grader:1 pinned by digest", v)
	}

	// A platform that runs no separate verifier says so for each such task.
	e2 := newEnv(t, location)
	e2.svc.envs = &Environments{Resolver: reg, HasFile: hasFile, NoSeparateVerifier: "not here"}
	b2, err := e2.svc.Add(ctx, ws, "envs")
	if err != nil {
		t.Fatal(err)
	}
	e2.sync(t, b2.Key)
	m2, _ := e2.manifest(t, e2.benchmark(t, b2.Key))
	for _, task := range m2.Tasks {
		reason := task.UnavailableReason()
		if (task.Name == "shared") != (reason == "") || task.Name != "shared" && !strings.Contains(reason, "not here") {
			t.Errorf("%s: %q", task.Name, reason)
		}
	}
}

package ecssandbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
)

const verifierImage = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gauntlet-dev-task-images@sha256:3333333333333333333333333333333333333333333333333333333333333333"

// TestSeparateVerifierIsAContainerOfTheTask: a task with a separate
// verifier gets a "verifier" container over the pinned verifier image,
// the runner as its entry point in its hand-over mode, started with the
// task container; the two share only the hand-over volume (the verifier
// mounts the runner volume read-only, never /app or the agents volume);
// the task container's runner is told where the hand-over is; every
// container gets the task's size. ECS (the fake) accepts it and starts
// the verifier after the task container.
func TestSeparateVerifierIsAContainerOfTheTask(t *testing.T) {
	srv, url, keys := fakeECS(t)
	d := driverOn(t, url, keys, nil)
	spec := testSpec("launch-1")
	spec.VerifierImage = verifierImage
	h, err := d.Launch(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	def, containers, order := firstTaskDefinition(srv, h.ID)
	if def["cpu"] != "2048" || def["memory"] != "4096" {
		t.Errorf("task size = %v/%v, want 2048/4096 (two containers of 1 vCPU / 2 GiB)", def["cpu"], def["memory"])
	}
	v, task := containers[ecssandbox.VerifierContainer], containers[ecssandbox.TaskContainer]
	want := map[string]any{
		"name": "verifier", "image": verifierImage, "essential": false, "user": "0",
		"entryPoint": []any{"/gauntlet/sandbox-runner"}, "command": []any{"verifier-container", "--handoff", ecssandbox.HandoffMount},
		"dependsOn": []any{
			map[string]any{"containerName": ecssandbox.RunnerContainer, "condition": "SUCCESS"},
			map[string]any{"containerName": ecssandbox.TaskContainer, "condition": "START"},
		},
		"mountPoints": []any{
			map[string]any{"sourceVolume": "gauntlet", "containerPath": "/gauntlet", "readOnly": true},
			map[string]any{"sourceVolume": "handoff", "containerPath": ecssandbox.HandoffMount},
		},
		"cpu": 1024.0, "memory": 2048.0,
		"logConfiguration": map[string]any{"logDriver": "awslogs", "options": map[string]any{
			"awslogs-group": "/gauntlet/sandboxes", "awslogs-region": "us-east-1", "awslogs-stream-prefix": "verifier"}},
	}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("verifier container (-want +got):\n%s", diff)
	}
	var handoff bool
	for _, m := range task["mountPoints"].([]any) {
		if m := m.(map[string]any); m["sourceVolume"] == "handoff" && m["containerPath"] == ecssandbox.HandoffMount && m["readOnly"] == nil {
			handoff = true
		}
	}
	cmd := task["command"].([]any)
	if !handoff || cmd[len(cmd)-2] != "--verifier-handoff" || cmd[len(cmd)-1] != ecssandbox.HandoffMount {
		t.Errorf("task container mounts %v, command %v: want the hand-over volume and --verifier-handoff %s", task["mountPoints"], cmd, ecssandbox.HandoffMount)
	}
	if diff := cmp.Diff([]string{ecssandbox.RunnerContainer, ecssandbox.TaskContainer, ecssandbox.VerifierContainer}, order); diff != "" {
		t.Errorf("ECS start order (-want +got):\n%s", diff)
	}

	// With sidecars too: one definition holding them all.
	both := sidecarSpec("launch-2")
	both.VerifierImage = verifierImage
	if _, err := d.Launch(context.Background(), both); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	regs := srv.requests["RegisterTaskDefinition"]
	srv.mu.Unlock()
	var names []string
	for _, c := range regs[len(regs)-1]["containerDefinitions"].([]any) {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, ","); got != "runner-init,task,service-db,service-api,verifier" {
		t.Errorf("containers = %s", got)
	}

	unpinned := testSpec("launch-3")
	unpinned.VerifierImage = "grader:1"
	if _, err := d.Launch(context.Background(), unpinned); err == nil || !strings.Contains(err.Error(), `separate verifier image "grader:1" is not pinned`) {
		t.Errorf("unpinned verifier image: %v", err)
	}
}

package ecssandbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

const (
	dbImage  = "docker.io/library/postgres@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	apiImage = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gauntlet-dev-task-images@sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// sidecarSpec is a task with two sidecars: api waits for db to be healthy,
// main for api to have started.
func sidecarSpec(launch string) sandbox.Spec {
	spec := testSpec(launch)
	spec.Services = map[string]string{"db": dbImage, "api": apiImage}
	spec.Sidecars = []sandbox.Sidecar{
		{Name: "db", Image: dbImage, Environment: map[string]string{"POSTGRES_PASSWORD": "pw", "POSTGRES_DB": "orders"},
			Healthcheck: &sandbox.Healthcheck{Test: []string{"sh", "-c", "pg_isready -U postgres"}, Interval: 2500 * time.Millisecond,
				Timeout: 3 * time.Second, StartPeriod: 10 * time.Second, StartInterval: time.Second, Retries: 15}},
		{Name: "api", Image: apiImage, Entrypoint: []string{"/srv/api"}, Command: []string{"--port", "8080"}, WorkingDir: "/srv", User: "1000",
			DependsOn:   []sandbox.Dependency{{Service: "db", Condition: sandbox.ConditionHealthy}},
			Healthcheck: &sandbox.Healthcheck{Test: []string{"/srv/api", "--check"}, Interval: 30 * time.Second, Timeout: 30 * time.Second, Retries: 3}},
	}
	spec.MainDependsOn = []sandbox.Dependency{{Service: "api", Condition: sandbox.ConditionStarted}}
	return spec
}

// TestSidecarsAreContainersOfTheTaskDefinition: each sidecar service is a
// non-essential container of the attempt's task definition, over its
// pinned image through the mirrors, with compose's run keys, its
// healthcheck as ECS's healthCheck (an interval under ECS's 5 s minimum
// raised to it, its retries over ECS's 10 moved into the start period)
// and depends_on as dependsOn; the task
// container waits for what main depends on; every container gets the
// task's own size and the task holds them all. ECS (the fake) starts them
// in dependency order. The shape is registered once and reused; another
// shape is another family.
func TestSidecarsAreContainersOfTheTaskDefinition(t *testing.T) {
	srv, url, keys := fakeECS(t)
	const ecr = "111122223333.dkr.ecr.us-east-1.amazonaws.com"
	d := driverOn(t, url, keys, func(c *ecssandbox.Config) { c.Mirrors = map[string]string{"docker.io": ecr + "/docker-hub"} })
	ctx := context.Background()
	h, err := d.Launch(ctx, sidecarSpec("launch-1"))
	if err != nil {
		t.Fatal(err)
	}
	def, containers, order := firstTaskDefinition(srv, h.ID)
	// 3 containers of 1 vCPU / 2048 MiB: the smallest Fargate size that
	// holds 3 vCPU and 6 GiB.
	if def["cpu"] != "4096" || def["memory"] != "8192" {
		t.Errorf("task size = %v/%v, want 4096/8192", def["cpu"], def["memory"])
	}
	db, api, task := containers["service-db"], containers["service-api"], containers[ecssandbox.TaskContainer]
	if db == nil || api == nil {
		t.Fatalf("containers %v: want service-db and service-api", keysOf(containers))
	}
	want := map[string]any{
		"name": "service-db", "image": ecr + "/docker-hub/library/postgres@sha256:" + strings.Repeat("1", 64), "essential": false,
		"cpu": 1024.0, "memory": 2048.0,
		"environment": []any{map[string]any{"name": "POSTGRES_DB", "value": "orders"}, map[string]any{"name": "POSTGRES_PASSWORD", "value": "pw"}},
		"healthCheck": map[string]any{"command": []any{"CMD-SHELL", "pg_isready -U postgres"}, "interval": 5.0, "timeout": 3.0, "retries": 10.0, "startPeriod": 35.0},
		"logConfiguration": map[string]any{"logDriver": "awslogs", "options": map[string]any{
			"awslogs-group": "/gauntlet/sandboxes", "awslogs-region": "us-east-1", "awslogs-stream-prefix": "service-db"}},
	}
	if diff := cmp.Diff(want, db); diff != "" {
		t.Errorf("service-db container (-want +got):\n%s", diff)
	}
	for k, v := range map[string]any{
		"image": apiImage, "entryPoint": []any{"/srv/api"}, "command": []any{"--port", "8080"}, "workingDirectory": "/srv", "user": "1000",
		"dependsOn":   []any{map[string]any{"containerName": "service-db", "condition": "HEALTHY"}},
		"healthCheck": map[string]any{"command": []any{"CMD", "/srv/api", "--check"}, "interval": 30.0, "timeout": 30.0, "retries": 3.0},
	} {
		if diff := cmp.Diff(v, api[k]); diff != "" {
			t.Errorf("service-api %s (-want +got):\n%s", k, diff)
		}
	}
	if diff := cmp.Diff([]any{
		map[string]any{"containerName": ecssandbox.RunnerContainer, "condition": "SUCCESS"},
		map[string]any{"containerName": "service-api", "condition": "START"},
	}, task["dependsOn"]); diff != "" {
		t.Errorf("task container dependsOn (-want +got):\n%s", diff)
	}
	if task["cpu"] != 1024.0 || task["memory"] != 2048.0 || task["essential"] != true {
		t.Errorf("task container cpu/memory/essential = %v/%v/%v, want 1024/2048/true", task["cpu"], task["memory"], task["essential"])
	}
	if diff := cmp.Diff([]string{ecssandbox.RunnerContainer, "service-db", "service-api", ecssandbox.TaskContainer}, order); diff != "" {
		t.Errorf("ECS start order (-want +got):\n%s", diff)
	}

	// The same shape: no new registration. Another environment value: a
	// family of its own.
	if _, err := d.Launch(ctx, sidecarSpec("launch-2")); err != nil {
		t.Fatal(err)
	}
	other := sidecarSpec("launch-3")
	other.Sidecars[0].Environment = map[string]string{"POSTGRES_PASSWORD": "other"}
	if _, err := d.Launch(ctx, other); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	regs := srv.requests["RegisterTaskDefinition"]
	srv.mu.Unlock()
	if len(regs) != 2 || regs[0]["family"] == regs[1]["family"] {
		t.Fatalf("registrations: %d (families %v, %v), want 2 of different families", len(regs), regs[0]["family"], regs[len(regs)-1]["family"])
	}
}

func keysOf(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSidecarsECSCannotRunAreRefused: a combination ECS cannot express is
// refused before ECS is called, naming the compose key; CheckSidecars
// (what sync uses) says the same.
func TestSidecarsECSCannotRunAreRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*sandbox.Spec)
		want string
	}{
		{"interval", func(s *sandbox.Spec) { s.Sidecars[0].Healthcheck.Interval = 10 * time.Minute }, "services.db.healthcheck.interval: 10m0s is over what ECS allows (300 s)"},
		{"timeout", func(s *sandbox.Spec) { s.Sidecars[0].Healthcheck.Timeout = 90 * time.Second }, "services.db.healthcheck.timeout: 1m30s"},
		{"retries", func(s *sandbox.Spec) { s.Sidecars[1].Healthcheck.Retries = 0 }, "services.api.healthcheck.retries: 0 is under what ECS allows (1)"},
		{"retries into start period", func(s *sandbox.Spec) { s.Sidecars[1].Healthcheck.Retries = 21 }, "services.api.healthcheck.start_period: 0s, with the retries beyond ECS's 10 moved into it (330 s), is over what ECS allows (300 s)"},
		{"start period", func(s *sandbox.Spec) { s.Sidecars[0].Healthcheck.StartPeriod = 10 * time.Minute }, "services.db.healthcheck.start_period"},
		{"name", func(s *sandbox.Spec) { s.Sidecars[0].Name = "db.local" }, "services.db.local: the service name must be letters, digits"},
		{"condition", func(s *sandbox.Spec) { s.MainDependsOn[0].Condition = "service_completed_successfully" }, "services.main.depends_on: api: condition \"service_completed_successfully\""},
		{"unpinned", func(s *sandbox.Spec) { s.Sidecars[1].Image = "api:1" }, "service api: image \"api:1\" is not pinned to a digest"},
		{"too big", func(s *sandbox.Spec) { s.CPUs, s.MemoryMB = 8, 16384 }, "3 containers (the task's, 2 sidecar services') of 8.00 vCPU and 16384 MiB each: no Fargate size fits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, url, keys := fakeECS(t)
			d := driverOn(t, url, keys, nil)
			spec := sidecarSpec("launch-1")
			c.edit(&spec)
			_, err := d.Launch(context.Background(), spec)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "task hello") {
				t.Fatalf("Launch: %v, want an error naming the task and %q", err, c.want)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if n := len(srv.requests["RegisterTaskDefinition"]) + len(srv.requests["RunTask"]); n != 0 {
				t.Errorf("ECS called %d times for a refused spec", n)
			}
		})
	}
	spec := sidecarSpec("x")
	spec.Sidecars[0].Healthcheck.Interval = time.Hour
	if got := ecssandbox.CheckSidecars(spec.Sidecars, spec.MainDependsOn); !strings.HasPrefix(got, "services.db.healthcheck.interval") {
		t.Errorf("CheckSidecars = %q, want the interval named", got)
	}
	ok := sidecarSpec("y")
	if got := ecssandbox.CheckSidecars(ok.Sidecars, ok.MainDependsOn); got != "" {
		t.Errorf("CheckSidecars of a shape ECS runs = %q", got)
	}
}

// firstTaskDefinition is the first task definition the fake ECS was asked
// to register, its containers by name, and the order the fake started the
// containers of launch id in.
func firstTaskDefinition(srv *ecsServer, id string) (def map[string]any, containers map[string]map[string]any, order []string) {
	srv.mu.Lock()
	def = srv.requests["RegisterTaskDefinition"][0]
	order = srv.started[id]
	srv.mu.Unlock()
	containers = map[string]map[string]any{}
	for _, c := range def["containerDefinitions"].([]any) {
		c := c.(map[string]any)
		containers[c["name"].(string)] = c
	}
	return def, containers, order
}

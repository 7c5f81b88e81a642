package cloud_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud/cloudtest"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

// sidecarCompose is a task's compose file: an api service beside main,
// which waits for it to be healthy.
const sidecarCompose = `services:
  main:
    depends_on:
      api:
        condition: service_healthy
  api:
    image: python:3.13-slim
    command: ["python3", "-m", "http.server", "8000"]
    environment:
      API_MODE: orders
    healthcheck:
      test: ["CMD-SHELL", "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:8000/\")'"]
      interval: 2s
      timeout: 5s
      retries: 15
      start_period: 20s
`

// TestCloudRunsSidecarsOnFargate: the registry-sync function pins a
// sidecar's image through the pull-through prefix as it pins the task's and
// records how it runs; a task whose services Fargate cannot run as asked is
// unavailable, naming the key. A run of the task is planned and dispatched
// by the cloud's functions onto ECS (the fake), whose task definition holds
// the sidecar as a container: its pinned image through the mirror, its
// compose run keys and healthcheck, the task container waiting for it to
// be healthy. A separate verifier's image is pinned the same way and runs
// as the task's "verifier" container.
func TestCloudRunsSidecarsOnFargate(t *testing.T) {
	ctx := context.Background()
	env := cloudtest.NewEnv(t)
	regDir := t.TempDir()
	for name, edit := range map[string]func(dir string){
		"orders": func(string) {},
		"hooked": func(dir string) {
			appendFile(t, filepath.Join(dir, "task.toml"), "\n[[verifier.collect]]\nservice = \"api\"\ncommand = \"cp /srv/log /logs/artifacts/\"\n")
		},
		"slow-check": func(dir string) {
			p := filepath.Join(dir, "environment", "docker-compose.yaml")
			data, _ := os.ReadFile(p)
			if err := os.WriteFile(p, []byte(strings.Replace(string(data), "interval: 2s", "interval: 10m", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	} {
		writeImageTask(t, regDir, name, "python:3.13-slim")
		dir := filepath.Join(regDir, "tasks", name)
		if err := os.WriteFile(filepath.Join(dir, "environment", "docker-compose.yaml"), []byte(sidecarCompose), 0o644); err != nil {
			t.Fatal(err)
		}
		edit(dir)
	}
	// A separate verifier's image, pulled (no tests/Dockerfile build).
	writeImageTask(t, regDir, "graded", "python:3.13-slim")
	graded := filepath.Join(regDir, "tasks", "graded", "task.toml")
	data, err := os.ReadFile(graded)
	if err != nil {
		t.Fatal(err)
	}
	toml := strings.Replace(string(data), "[verifier]\n", "[verifier]\nenvironment_mode = \"separate\"\n", 1)
	if err := os.WriteFile(graded, []byte(toml+"\n[verifier.environment]\ndocker_image = \"python:3.13-slim\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := `[{"name": "rolling", "version": "head", "description": "sidecars", "tasks": [` +
		`{"name": "orders", "path": "tasks/orders"}, {"name": "hooked", "path": "tasks/hooked"}, {"name": "slow-check", "path": "tasks/slow-check"}, ` +
		`{"name": "graded", "path": "tasks/graded"}]}]`
	if err := os.WriteFile(filepath.Join(regDir, "registry.json"), []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := env.Vars()
	vars[cloud.EnvRegistry] = filepath.Join(regDir, "registry.json")
	p, _ := connectRegistrySync(t, vars)
	sync, err := p.BenchSync()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sync.Add(ctx, e2eWS, "rolling"); err != nil {
		t.Fatal(err)
	}
	if err := sync.Sync(ctx, benchsync.NewSyncMessage(e2eWS, "rolling-head")); err != nil {
		t.Fatalf("sync: %v", err)
	}
	recs := records.New(p.Ports.Table)
	b := readBenchmark(t, recs, e2eWS)
	if b.Status != records.SyncReady {
		t.Fatalf("after the sync: %+v", b)
	}
	m, _, err := recs.Benchmarks.Manifest(ctx, e2eWS, b.Key, b.ReadyVersion)
	if err != nil {
		t.Fatal(err)
	}
	orders, _ := m.Task("orders")
	pinned := "docker.io/library/python@" + env.Images.Python
	if !orders.Available() || orders.Environment.Services["api"].Pinned != pinned {
		t.Fatalf("orders: available %v (%s), services %+v; want api pinned to %s", orders.Available(), orders.UnavailableReason(), orders.Environment.Services, pinned)
	}
	if g, _ := m.Task("graded"); !g.Available() || g.Environment.Verifier == nil || g.Environment.Verifier.Pinned != pinned {
		t.Fatalf("graded: available %v (%s), verifier %+v; want its verifier image pinned to %s", g.Available(), g.UnavailableReason(), g.Environment.Verifier, pinned)
	}
	for name, want := range map[string]string{
		"hooked":     `task hooked: task.toml: verifier.collect[0].service = "api": on the Fargate sandboxes a sidecar service is a container of its own`,
		"slow-check": "task slow-check: environment/docker-compose.yaml: services.api.healthcheck.interval: 10m0s is over what ECS allows (300 s) (Fargate sandboxes)",
	} {
		task, _ := m.Task(name)
		if task.Available() || !strings.HasPrefix(task.UnavailableReason(), want) {
			t.Errorf("%s: unavailable = %q, want it to start %q", name, task.UnavailableReason(), want)
		}
	}

	// A run of it: planned, dispatched onto ECS.
	needs := cloud.Needs{Plan: true, Slots: true, Completions: true, Results: true, Blobs: true, Secrets: true, Sandboxes: true, MaxSandboxes: true}
	cfg, err := cloud.Load(needs, cloudtest.Getenv(vars))
	if err != nil {
		t.Fatal(err)
	}
	dp, err := cloud.Connect(ctx, cfg, discard)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := pipeline.New(dp.Ports, pipeline.Options{MaxSandboxes: cfg.MaxSandboxes, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Records().Workspaces.PutBilling(ctx, e2eWS, records.Billing{Status: records.BillingActive, Plan: "team"}); err != nil {
		t.Fatal(err)
	}
	rc, err := runconfig.Parse([]byte(`
[experiment]
benchmark = "rolling-head"
[tasks]
task_names = ["orders", "graded"]
[execution]
attempts_per_task = 1
[[agents]]
harness = "oracle"
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Submit(ctx, pipeline.SubmitRequest{Workspace: e2eWS, User: e2eUser, Config: rc}); err != nil {
		t.Fatal(err)
	}
	consume(t, ctx, dp.Ports.Plan, svc.HandlePlan, 1, 30*time.Second)
	consume(t, ctx, dp.Ports.Slots, svc.HandleSlot, 2, 30*time.Second)
	regs := env.ECS.Requests("RegisterTaskDefinition")
	if len(regs) != 2 || len(env.ECS.Requests("RunTask")) != 2 {
		t.Fatalf("%d registrations, %d RunTask calls; want two each", len(regs), len(env.ECS.Requests("RunTask")))
	}
	var containers, verifier map[string]map[string]any
	for _, r := range regs {
		cs := map[string]map[string]any{}
		for _, c := range r.Body["containerDefinitions"].([]any) {
			c := c.(map[string]any)
			cs[c["name"].(string)] = c
		}
		if cs["service-api"] != nil {
			containers = cs
		}
		if cs["verifier"] != nil {
			verifier = cs
		}
	}
	if containers == nil || verifier == nil {
		t.Fatalf("registrations %v: want one with service-api, one with verifier", regs)
	}
	api := containers["service-api"]
	mirror := vars[cloud.EnvSandboxMirrors]
	_, hub, _ := strings.Cut(strings.Split(mirror, ",")[0], "=")
	for k, want := range map[string]any{
		"image":       hub + "/library/python@" + env.Images.Python,
		"command":     []any{"python3", "-m", "http.server", "8000"},
		"environment": []any{map[string]any{"name": "API_MODE", "value": "orders"}},
		"essential":   false,
		"healthCheck": map[string]any{"command": []any{"CMD-SHELL", `python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8000/")'`},
			"interval": 5.0, "timeout": 5.0, "retries": 10.0, "startPeriod": 45.0},
	} {
		if diff := cmp.Diff(want, api[k]); diff != "" {
			t.Errorf("service-api %s (-want +got):\n%s", k, diff)
		}
	}
	// ECS (the fake) accepted both definitions and started their
	// containers in dependsOn order.
	var starts []string
	for _, arn := range env.ECS.TaskARNs() {
		starts = append(starts, strings.Join(env.ECS.Started(arn), ","))
	}
	slices.Sort(starts)
	if diff := cmp.Diff([]string{"runner-init,service-api,task", "runner-init,task,verifier"}, starts); diff != "" {
		t.Errorf("ECS start orders (-want +got):\n%s", diff)
	}
	if got := verifier["verifier"]["image"]; got != hub+"/library/python@"+env.Images.Python {
		t.Errorf("verifier container image = %v, want the pinned verifier image through the mirror", got)
	}
	if deps := containers["task"]["dependsOn"].([]any); !cmp.Equal(deps[len(deps)-1], map[string]any{"containerName": "service-api", "condition": "HEALTHY"}) {
		t.Errorf("task container dependsOn = %v, want service-api HEALTHY", deps)
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

package benchsync

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/imagebuild"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// Sidecar images are pinned at sync like task images: an `image` resolved
// to its digest, a `build` built (buildah) from its context in
// environment/; a service whose image cannot be had makes its task
// unavailable, naming the task, the file, the field and the cause.
func TestSyncPinsSidecarImages(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "app")
	reg.push(t, "library/api:1", "api.txt", "api")
	reg.push(t, "library/base:1", "base.txt", "base")
	compose := "services:\n  main:\n    depends_on: [api]\n  api:\n    image: api:1\n  db:\n    build: ./db\n"
	location := writeImageTasks(t, []imageTask{
		{name: "with-sidecars", environment: "docker_image = \"app:1\"\n", files: map[string]string{
			"environment/docker-compose.yaml": compose,
			"environment/db/Dockerfile":       "FROM base:1\nCOPY schema.sql /srv/\n",
			"environment/db/schema.sql":       "create table t (x int);\n",
		}},
		{name: "ghost-sidecar", environment: "docker_image = \"app:1\"\n", files: map[string]string{
			"environment/docker-compose.yaml": "services:\n  api:\n    image: ghost:9\n",
		}},
		{name: "bad-sidecar-build", environment: "docker_image = \"app:1\"\n", files: map[string]string{
			"environment/docker-compose.yaml": "services:\n  db:\n    build: ./db\n",
			"environment/db/Dockerfile":       "FROM base:1\nCOPY missing.sql /srv/\n",
		}},
	})
	e := newEnv(t, location)
	builder, err := imagebuild.New(imagebuild.Config{Dir: filepath.Join(t.TempDir(), "buildah"), Import: reg.importLayout})
	if err != nil {
		t.Fatal(err)
	}
	e.svc.envs = &Environments{Resolver: reg, Builder: buildahBuilder{builder}, Services: true}
	b, err := e.svc.Add(ctx, ws, "envs")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	b = e.benchmark(t, b.Key)
	if b.Status != records.SyncReady {
		t.Fatalf("after Sync: %+v", b)
	}
	m, _ := e.manifest(t, b)
	task, _ := m.Task("with-sidecars")
	env := task.Environment
	apiPin, _ := reg.Resolve(ctx, "api:1", nil)
	if env == nil || env.Unavailable != "" || len(env.Services) != 2 {
		t.Fatalf("with-sidecars: %+v", env)
	}
	if api := env.Services["api"]; api.Source != benchmark.ImagePull || api.Image != "api:1" || api.Pinned != apiPin {
		t.Errorf("api: %+v, want api:1 pinned to %s", api, apiPin)
	}
	db := env.Services["db"]
	if db.Source != benchmark.ImageBuild || len(db.BuildKey) != 64 || !strings.HasPrefix(db.Pinned, reg.host+"/built@sha256:") {
		t.Errorf("db: %+v, want a build pinned in the registry", db)
	}
	if got := env.ServiceImages(); got["api"] != apiPin || got["db"] != db.Pinned {
		t.Errorf("ServiceImages = %v", got)
	}
	// How each service runs, for a sandbox that declares containers up
	// front (Fargate): start order, main's dependencies, run keys.
	if diff := cmp.Diff([]string{"api", "db"}, env.ServiceOrder); diff != "" {
		t.Errorf("service order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]benchmark.ServiceDependency{{Service: "api", Condition: "service_started"}}, env.DependsOn); diff != "" {
		t.Errorf("main's depends_on (-want +got):\n%s", diff)
	}
	if r := env.Services["api"].Run; r == nil || r.Healthcheck != nil || len(r.DependsOn) != 0 {
		t.Errorf("api run = %+v, want recorded, with no healthcheck or dependency", r)
	}
	for name, want := range map[string][]string{
		"ghost-sidecar":     {"task ghost-sidecar: environment/docker-compose.yaml: services.api.image: ghost:9", "404"},
		"bad-sidecar-build": {"task bad-sidecar-build: environment/docker-compose.yaml: services.db.build: build failed", "missing.sql"},
	} {
		task, _ := m.Task(name)
		if task.Available() {
			t.Errorf("%s is available", name)
		}
		for _, w := range want {
			if !strings.Contains(task.UnavailableReason(), w) {
				t.Errorf("%s: unavailable = %q, want it to say %q", name, task.UnavailableReason(), w)
			}
		}
	}
}

// A task whose compose file mounts volumes is unavailable where the
// sandboxes mount none (never run without them), naming the services;
// where they do, it is not; a task without volumes is unaffected.
func TestComposeVolumesNeedAPlatformThatMountsThem(t *testing.T) {
	location := writeImageTasks(t, []imageTask{
		{name: "shared-volume", environment: "docker_image = \"app:1\"\n", files: map[string]string{
			"environment/docker-compose.yaml": "services:\n  main:\n    volumes: [\"evidence:/startup\"]\n  side:\n    image: alpine:3\n    volumes: [\"evidence:/startup\"]\nvolumes:\n  evidence:\n",
		}},
		{name: "no-volume", environment: "docker_image = \"app:1\"\n", files: map[string]string{
			"environment/docker-compose.yaml": "services:\n  side:\n    image: alpine:3\n",
		}},
	})
	root := filepath.Dir(location)
	withVolumes, err := harbor.LoadTask(filepath.Join(root, "tasks", "shared-volume"))
	if err != nil {
		t.Fatal(err)
	}
	without, err := harbor.LoadTask(filepath.Join(root, "tasks", "no-volume"))
	if err != nil {
		t.Fatal(err)
	}
	services := &fetcher{&deps{envs: &Environments{Services: true}}}
	got := services.sidecarReason("shared-volume", withVolumes)
	if want := "task shared-volume: environment/docker-compose.yaml: volumes of services main, side: this platform's sandboxes mount no compose volumes"; got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}
	if got := services.sidecarReason("no-volume", without); got != "" {
		t.Errorf("a task without volumes: reason %q, want none", got)
	}
	both := &fetcher{&deps{envs: &Environments{Services: true, Volumes: true}}}
	if got := both.sidecarReason("shared-volume", withVolumes); got != "" {
		t.Errorf("on a platform that mounts volumes: reason %q, want none", got)
	}
}

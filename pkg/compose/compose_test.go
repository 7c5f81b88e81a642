package compose

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const file = "environment/docker-compose.yaml"

// envDir writes a task's environment/ directory: the compose file and the
// other files given (relative path → content).
func envDir(t *testing.T, compose string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files[FileName] = compose
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func load(t *testing.T, compose string, files map[string]string) (*Project, error) {
	t.Helper()
	return Load(context.Background(), envDir(t, compose, files), file)
}

// Harbor's own example (examples/tasks/sidecar-artifacts): main waits for
// a built sidecar's healthcheck.
func TestLoadHarborSidecarExample(t *testing.T) {
	p, err := load(t, `services:
  main:
    depends_on:
      api:
        condition: service_healthy

  api:
    build:
      context: ./api-server
    expose:
      - "8000"
    healthcheck:
      test: ["CMD", "curl", "-sf", "http://localhost:8000/stats"]
      interval: 2s
      timeout: 5s
      retries: 15
      start_period: 3s
`, map[string]string{"api-server/Dockerfile": "FROM python:3.12-slim\n"})
	if err != nil {
		t.Fatal(err)
	}
	want := &Project{
		Main: Service{Name: "main", Environment: map[string]string{}, DependsOn: []Dependency{{Service: "api", Condition: ConditionHealthy}}},
		Sidecars: []Service{{
			Name: "api", Environment: map[string]string{},
			Build: &Build{Context: "api-server", Dockerfile: "Dockerfile"},
			Healthcheck: &Healthcheck{Test: []string{"curl", "-sf", "http://localhost:8000/stats"},
				Interval: 2 * time.Second, Timeout: 5 * time.Second, StartPeriod: 3 * time.Second, StartInterval: DefaultStartInterval, Retries: 15},
		}},
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("project (-want +got):\n%s", diff)
	}
}

// A sidecar by image, with its command, environment and a CMD-SHELL
// healthcheck with Docker's defaults; sidecars come in start order; the
// file need not name main (Harbor defines it).
func TestLoadImageServicesInStartOrder(t *testing.T) {
	p, err := load(t, `services:
  web:
    image: nginx:1.27
    depends_on: [db, cache]
  db:
    image: postgres:16
    environment:
      POSTGRES_PASSWORD: secret
      EMPTY:
    command: ["postgres", "-c", "fsync=off"]
    healthcheck:
      test: pg_isready -U postgres
  cache:
    image: redis:7
    entrypoint: redis-server --save ""
    depends_on:
      db:
        condition: service_healthy
`, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range p.Sidecars {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"db", "cache", "web"}, names); diff != "" {
		t.Errorf("start order (-want +got):\n%s", diff)
	}
	db := p.Sidecars[0]
	if diff := cmp.Diff(Service{Name: "db", Image: "postgres:16",
		Environment: map[string]string{"POSTGRES_PASSWORD": "secret"},
		Command:     []string{"postgres", "-c", "fsync=off"},
		Healthcheck: &Healthcheck{Test: []string{"sh", "-c", "pg_isready -U postgres"}, Interval: DefaultInterval, Timeout: DefaultTimeout, StartInterval: DefaultStartInterval, Retries: DefaultRetries},
	}, db); diff != "" {
		t.Errorf("db (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"redis-server", "--save", ""}, p.Sidecars[1].Entrypoint); diff != "" {
		t.Errorf("cache entrypoint (-want +got):\n%s", diff)
	}
	if p.Main.Name != MainService || len(p.Main.DependsOn) != 0 || len(p.Unsupported) != 0 {
		t.Errorf("main %+v, unsupported %q; want no main overrides and nothing unsupported", p.Main, p.Unsupported)
	}
}

// Nothing of the host's environment reaches a service through
// interpolation.
func TestLoadInterpolatesFromNothing(t *testing.T) {
	t.Setenv("GAUNTLET_TEST_HOST_SECRET", "leaked")
	p, err := load(t, "services:\n  s:\n    image: alpine\n    environment:\n      A: ${GAUNTLET_TEST_HOST_SECRET}\n      B: $${LITERAL}\n", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Sidecars[0].Environment; got["A"] != "" || got["B"] != "${LITERAL}" {
		t.Errorf("environment = %q, want A empty (no host variable) and B ${LITERAL}", got)
	}
}

// Every compose feature gauntlet does not implement is named, with the
// service and what it is, so the task is unavailable with that reason.
func TestLoadNamesUnsupportedFeatures(t *testing.T) {
	tests := []struct{ compose, want string }{
		{"services:\n  s:\n    image: a\n    privileged: true\n", "services.s.privileged (privileged containers)"},
		{"services:\n  s:\n    image: a\n    volumes: [\"/etc:/host-etc\"]\n", "services.s.volumes.[].type (bind mounts: only named volumes are run)"},
		{"services:\n  s:\n    image: a\n    volumes: [{type: tmpfs, target: /t}]\n", "services.s.volumes.[].type (tmpfs mounts: only named volumes are run)"},
		{"services:\n  s:\n    image: a\n    volumes: [{type: volume, source: v, target: /v, volume: {subpath: x}}]\nvolumes:\n  v: {}\n",
			"services.s.volumes.[].volume.subpath (volume options: only type, source, target, read_only and volume.nocopy are run)"},
		{"services:\n  s:\n    image: a\n    network_mode: host\n", "services.s.network_mode (network modes (host networking))"},
		{"services:\n  s:\n    image: a\n    ports: [\"8080:80\"]\n", "services.s.ports (ports published on the host)"},
		{"services:\n  s:\n    image: a\n    devices: [\"/dev/kvm:/dev/kvm\"]\n", "services.s.devices (host devices)"},
		{"services:\n  s:\n    image: a\n    cap_add: [NET_ADMIN]\n", "services.s.cap_add (added capabilities)"},
		{"services:\n  s:\n    image: a\n    pid: host\n", "services.s.pid (shared PID namespaces)"},
		{"services:\n  s:\n    image: a\n    env_file: [/etc/passwd]\n", "services.s.env_file (environment files)"},
		{"services:\n  s:\n    image: a\n    restart: always\n", "services.s.restart (restart policies)"},
		{"services:\n  s:\n    image: a\n    deploy:\n      replicas: 2\n", "services.s.deploy (deploy settings (replicas, resource limits))"},
		{"services:\n  s:\n    image: a\n    extends:\n      file: /etc/other.yaml\n      service: x\n", "services.s.extends (extended services)"},
		{"include: [/etc/other.yaml]\nservices:\n  s:\n    image: a\n", "include (included compose files)"},
		{"services:\n  s:\n    image: a\nvolumes:\n  v:\n    driver: nfs\n", "volumes.v.driver (volume options (drivers, external volumes, labels): a named volume is an empty directory of the trial's)"},
		{"services:\n  s:\n    image: a\nvolumes:\n  v:\n    external: true\n", "volumes.v.external (volume options (drivers, external volumes, labels): a named volume is an empty directory of the trial's)"},
		{"services:\n  main:\n    image: ubuntu:24.04\n", "services.main.image (an image for main other than the task's)"},
		{"services:\n  main:\n    command: [sleep, infinity]\n", "services.main.command (a command for main (the agent's container runs gauntlet's))"},
		{"services:\n  main:\n    depends_on:\n      init:\n        condition: service_completed_successfully\n  init:\n    image: a\n",
			"services.main.depends_on.init.condition (a depends_on condition other than service_started and service_healthy)"},
		{"services:\n  main:\n    depends_on:\n      s:\n        condition: service_healthy\n  s:\n    image: a\n",
			"services.main.depends_on.s: service_healthy on a service with no compose healthcheck (an image's own HEALTHCHECK is not read)"},
	}
	for _, tt := range tests {
		p, err := load(t, tt.compose, map[string]string{})
		if err != nil {
			t.Errorf("Load(%q): %v", tt.compose, err)
			continue
		}
		want := []string{file + ": " + tt.want}
		if diff := cmp.Diff(want, p.Unsupported); diff != "" {
			t.Errorf("Load(%q).Unsupported (-want +got):\n%s", tt.compose, diff)
		}
	}
}

// Bad input is an *Error naming the file and the field.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, compose string
		files         map[string]string
		want          []string
	}{
		{"cycle", "services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n    depends_on: [a]\n", nil, []string{"cycle", "a", "b"}},
		{"undefined dependency", "services:\n  a:\n    image: x\n    depends_on: [nothere]\n", nil, []string{"nothere"}},
		{"no image", "services:\n  a:\n    command: [x]\n", nil, []string{"a"}},
		{"context outside", "services:\n  a:\n    build: ../../\n", nil, []string{"services.a.build.context", "outside"}},
		{"context absolute", "services:\n  a:\n    build: /etc\n", nil, []string{"services.a.build.context", "outside"}},
		{"context URL", "services:\n  a:\n    build: https://github.com/x/y.git\n", nil, []string{"services.a.build.context", "URL"}},
		{"no Dockerfile", "services:\n  a:\n    build: ./srv\n", map[string]string{"srv/server.py": ""}, []string{"services.a.build.dockerfile"}},
		{"bad duration", "services:\n  a:\n    image: x\n    healthcheck:\n      test: [CMD, \"true\"]\n      interval: soon\n", nil, []string{"interval"}},
		{"bad test", "services:\n  a:\n    image: x\n    healthcheck:\n      test: [FOO, true]\n", nil, []string{"services.a.healthcheck.test"}},
		{"not yaml", "services: [\n", nil, []string{"yaml"}},
		{"bad service name", "services:\n  -bad:\n    image: x\n", nil, []string{"-bad"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := tt.files
			if files == nil {
				files = map[string]string{}
			}
			_, err := load(t, tt.compose, files)
			var ce *Error
			if !errors.As(err, &ce) || ce.File != file {
				t.Fatalf("Load = %v, want a compose *Error on %s", err, file)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// The compose file is read only as a regular file of environment/: a
// symlink (to anything on the host) is refused.
func TestLoadRefusesASymlink(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	_, err := Load(context.Background(), dir, file)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "regular file") {
		t.Fatalf("Load(symlink) = %v, want refused", err)
	}
}

// A sidecar's build option beyond context and dockerfile is named as one.
func TestLoadNamesBuildOptions(t *testing.T) {
	p, err := load(t, "services:\n  s:\n    build:\n      context: .\n      args:\n        X: \"1\"\n", map[string]string{"Dockerfile": "FROM x\n"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{file + ": services.s.build.args (build options other than context and dockerfile)"}
	if diff := cmp.Diff(want, p.Unsupported); diff != "" {
		t.Errorf("Unsupported (-want +got):\n%s", diff)
	}
}

// Named and anonymous volumes load, short and long syntax, main's too.
func TestLoadVolumes(t *testing.T) {
	p, err := load(t, `services:
  main:
    volumes:
      - data:/data
      - /scratch
  s:
    image: a
    volumes:
      - data:/d:ro
      - type: volume
        source: seed
        target: /seed/
        volume:
          nocopy: true
volumes:
  data:
  seed: {}
`, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Unsupported) != 0 {
		t.Errorf("Unsupported = %q, want none", p.Unsupported)
	}
	if diff := cmp.Diff([]string{"data", "seed"}, p.Volumes); diff != "" {
		t.Errorf("Volumes (-want +got):\n%s", diff)
	}
	want := []VolumeMount{{Volume: "data", Target: "/data"}, {Target: "/scratch"}}
	if diff := cmp.Diff(want, p.Main.Volumes); diff != "" {
		t.Errorf("main's volumes (-want +got):\n%s", diff)
	}
	want = []VolumeMount{{Volume: "data", Target: "/d", ReadOnly: true}, {Volume: "seed", Target: "/seed", NoCopy: true}}
	if diff := cmp.Diff(want, p.Sidecars[0].Volumes); diff != "" {
		t.Errorf("s's volumes (-want +got):\n%s", diff)
	}
	// A volume the file does not define is compose's own error.
	if _, err := load(t, "services:\n  s:\n    image: a\n    volumes: [\"nope:/x\"]\n", map[string]string{}); err == nil {
		t.Error("an undefined volume loaded")
	}
}

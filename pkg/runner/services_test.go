package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/compose"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// The sidecar tests: a task's compose services run beside the main pod,
// each in its own image, overlay, PID namespace and cgroup, on the main
// pod's loopback, reachable by name; main waits for service_healthy;
// nothing of them survives the trial; a service that never gets healthy
// is the runner's (infra) error naming it and its check's output.

// apiServer is a python one-liner serving body on 127.0.0.1:8000, its
// command line holding marker.
func apiServer(body, marker string) string {
	return fmt.Sprintf(`import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = %q.encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
http.server.HTTPServer(("0.0.0.0", 8000), H).serve_forever()  # %s
`, body, marker)
}

// fetchAPI is the agent's (and solve.sh's) fetch of http://api:8000/ into
// /app/answer.txt, with bash alone: the name resolves through /etc/hosts.
const fetchAPI = `exec 3<>/dev/tcp/api/8000 && printf 'GET / HTTP/1.0\r\nHost: api\r\n\r\n' >&3 && tail -n1 <&3 > /app/answer.txt
ps_seen=$(grep -l -a '[s]erve_forever' /proc/[0-9]*/cmdline 2>/dev/null | wc -l); echo "server_processes=$ps_seen" > /logs/agent/seen.txt
`

// sidecarTask is the fixture task with compose as its
// environment/docker-compose.yaml and solve as its solution.
func sidecarTask(t testing.TB, compose, solve string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	if out, err := exec.Command("cp", "-r", fixtureDir(t), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture task: %v: %s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(dir, "environment"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "environment", "docker-compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "solution", "solve.sh"), []byte("#!/usr/bin/env bash\n"+solve), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// apiCompose is a compose file whose api service runs server (python) and
// is healthy once it answers; main waits for that.
func apiCompose(server, healthTest string) string {
	return fmt.Sprintf(`services:
  main:
    depends_on:
      api:
        condition: service_healthy
  api:
    image: python:3.12-slim
    command: ["python3", "-c", %q]
    environment:
      SERVICE_ONLY: "yes"
    healthcheck:
      test: %s
      interval: 200ms
      timeout: 5s
      retries: 3
      start_period: 30s
      start_interval: 100ms
`, server, healthTest)
}

const apiHealthy = `["CMD", "python3", "-c", "import urllib.request; urllib.request.urlopen('http://api:8000/', timeout=2)"]`

// pythonServices gives the api service the python stand-in.
func pythonServices(t testing.TB) map[string]ServiceImage {
	return map[string]ServiceImage{"api": {Image: Image{Ref: "test/python3:" + testrootfs.Version,
		Rootfs: testrootfs.Of(t, testrootfs.Python3Tar), Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}}}
}

// runSidecarTrial runs spec with the api service; nothing of the trial's
// pods may be left after it: no process with marker in its command line,
// no mount, no cgroup of the trial.
func runSidecarTrial(t *testing.T, spec sandbox.Spec, services map[string]ServiceImage, marker string) (trialRun, error) {
	return runSidecarTrialAs(t, spec, services, marker, "")
}

// runSidecarTrialAs is runSidecarTrial with main's image user set to user.
func runSidecarTrialAs(t *testing.T, spec sandbox.Spec, services map[string]ServiceImage, marker, user string) (trialRun, error) {
	t.Helper()
	dir := t.TempDir()
	img := testImage(t)
	img.User = user
	opts := Options{Image: &img, Services: services, Isolation: IsolationBwrap, SelfPath: runnerBinary, StaticBinDir: t.TempDir(),
		WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out")}
	tr, err := run(context.Background(), spec, opts, harness.All())
	if pids := processesWithArg(t, marker); len(pids) > 0 {
		t.Errorf("processes of the services alive after the trial: %v", pids)
	}
	assertNoMountsUnder(t, dir)
	sum := sha256.Sum256([]byte(spec.LaunchID + "\x00" + opts.WorkDir))
	prefix := "trial-" + hex.EncodeToString(sum[:8]) + "-"
	for _, c := range []string{"memory", "cpu", "pids", ""} {
		left, _ := filepath.Glob(filepath.Join(cgroupRoot, c, cgroupParent, prefix+"*"))
		if len(left) > 0 {
			t.Errorf("cgroups of the trial left: %v", left)
		}
	}
	return trialRun{result: tr, out: opts.OutDir}, err
}

func TestSidecarReachableByNameFromMain(t *testing.T) {
	for h, want := range map[string]float64{"oracle": 1, "nop": 0} {
		t.Run(h, func(t *testing.T) {
			marker := uniqueMarker()
			spec := baseSpec(t, h)
			spec.Task.Dir = sidecarTask(t, apiCompose(apiServer("gauntlet", marker), apiHealthy), fetchAPI)
			r, err := runSidecarTrial(t, spec, pythonServices(t), marker)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := rewardOf(t, r.result); got != want {
				t.Errorf("reward = %v, want %v", got, want)
			}
			if h == "oracle" {
				// The service's processes are in a PID namespace of
				// their own: main sees none of them.
				if got := strings.TrimSpace(r.artifact(t, "agent/seen.txt")); got != "server_processes=0" {
					t.Errorf("main saw %q, want no server process (the service's PID namespace is its own)", got)
				}
			}
		})
	}
}

func TestSidecarThatNeverGetsHealthyIsAnInfraError(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "oracle")
	spec.Task.Name = "demo/sick-sidecar"
	compose := strings.Replace(apiCompose(apiServer("gauntlet", marker), `["CMD-SHELL", "echo not-ready-`+marker+`; exit 3"]`), "start_period: 30s", "start_period: 0s", 1)
	spec.Task.Dir = sidecarTask(t, compose, fetchAPI)
	_, err := runSidecarTrial(t, spec, pythonServices(t), marker)
	for _, want := range []string{"task demo/sick-sidecar", "service main depends on api being healthy", "unhealthy", "3 times", "not-ready-" + marker, "exit code 3"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %v, want an error saying %q", err, want)
		}
	}
}

func TestSidecarThatExitsIsAnInfraError(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "oracle")
	compose := apiCompose(`import sys; print("boom-`+marker+`", file=sys.stderr); sys.exit(4)`, apiHealthy)
	spec.Task.Dir = sidecarTask(t, compose, fetchAPI)
	_, err := runSidecarTrial(t, spec, pythonServices(t), marker)
	for _, want := range []string{"exited with code 4", "boom-" + marker} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %v, want an error saying %q", err, want)
		}
	}
}

func TestSidecarWithoutAnImageIsAnInfraError(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "oracle")
	spec.Task.Dir = sidecarTask(t, apiCompose(apiServer("gauntlet", marker), apiHealthy), fetchAPI)
	_, err := runSidecarTrial(t, spec, nil, marker)
	if err == nil || !strings.Contains(err.Error(), "service api: no image was given") {
		t.Errorf("Run = %v, want the missing image named", err)
	}
}

// Collect hooks run after the agent and before the verifier: main's in the
// main pod, a sidecar's in its own filesystem (here: a file the sidecar
// then serves, which the verifier fetches); a failing hook is logged with
// its output and the trial goes on, as in Harbor.
func TestCollectHooksRunInTheirServices(t *testing.T) {
	marker := uniqueMarker()
	compose := fmt.Sprintf(`services:
  main:
    depends_on:
      files:
        condition: service_healthy
  files:
    image: python:3.12-slim
    command: ["python3", "-m", "http.server", "8000", "--directory", "/srv", "--bind", "0.0.0.0"]
    environment:
      MARK: %q
    healthcheck:
      test: ["CMD", "python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/', timeout=2)"]
      interval: 200ms
      start_period: 30s
      start_interval: 100ms
`, marker)
	spec := baseSpec(t, "oracle")
	spec.Task.Dir = sidecarTask(t, compose, "echo gauntlet > /app/answer.txt\n")
	toml := `
[[verifier.collect]]
service = "files"
command = "echo sidecar-hook-$MARK > /srv/hook.txt"

[[verifier.collect]]
command = "cat /app/answer.txt > /app/main-hook.txt"

[[verifier.collect]]
service = "files"
command = "echo failing-hook-output-$MARK; exit 5"
`
	f, err := os.OpenFile(filepath.Join(spec.Task.Dir, "task.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(toml); err != nil {
		t.Fatal(err)
	}
	f.Close()
	verifier := `#!/usr/bin/env bash
exec 3<>/dev/tcp/files/8000 && printf 'GET /hook.txt HTTP/1.0\r\n\r\n' >&3 && tail -n1 <&3 > /logs/verifier/sidecar-hook.txt
cp /app/main-hook.txt /logs/verifier/main-hook.txt
echo 1 > /logs/verifier/reward.txt
`
	if err := os.WriteFile(filepath.Join(spec.Task.Dir, "tests", "test.sh"), []byte(verifier), 0o755); err != nil {
		t.Fatal(err)
	}
	services := pythonServices(t)
	services["files"] = services["api"]
	r, err := runSidecarTrial(t, spec, services, marker)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := strings.TrimSpace(r.artifact(t, "verifier/sidecar-hook.txt")); got != "sidecar-hook-"+marker {
		t.Errorf("the sidecar's hook left %q in its filesystem, want sidecar-hook-%s (run in the service, with its environment)", got, marker)
	}
	if got := strings.TrimSpace(r.artifact(t, "verifier/main-hook.txt")); got != "gauntlet" {
		t.Errorf("main's hook left %q, want the agent's answer (run after the agent, before the verifier)", got)
	}
	log := r.artifact(t, "runner.log")
	for _, want := range []string{"collect hook failed", "verifier.collect[2]", "exit code 5", "failing-hook-output-" + marker} {
		if !strings.Contains(log, want) {
			t.Errorf("runner.log does not say %q", want)
		}
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1: a failing hook does not end the trial", got)
	}
}

// copyOutOfService copies a file or a tree out of a service's root and
// never follows a symlink of the service's out of it.
func TestCopyOutOfService(t *testing.T) {
	root := t.TempDir()
	for rel, body := range map[string]string{"var/log/api/orders.log": "o1\n", "var/log/api/sub/x.txt": "x"} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(root, "var/log/api/escape")); err != nil {
		t.Fatal(err)
	}
	tr := &trial{sidecars: []*sidecar{{svc: compose.Service{Name: "api"}, iso: &imageIsolation{layer: &layer{root: root}}}}}
	dst := t.TempDir()
	if err := tr.services().copyOutOfService("api", "/var/log/api", filepath.Join(dst, "api")); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"api/orders.log": "o1\n", "api/sub/x.txt": "x"} {
		if got, err := os.ReadFile(filepath.Join(dst, rel)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", rel, got, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "api", "escape")); err == nil {
		t.Error("a symlink out of the service's root was copied")
	}
	if err := tr.services().copyOutOfService("api", "/var/log/api/orders.log", filepath.Join(dst, "one.log")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "one.log")); string(got) != "o1\n" {
		t.Errorf("single file = %q", got)
	}
	if err := tr.services().copyOutOfService("db", "/x", dst); err == nil {
		t.Error("copy out of a service that is not running: no error")
	}
}

// Main's phases as a non-root image user run in a user namespace of the
// main pod's own; its services still join its network namespace and
// answer by name.
func TestSidecarBesideANonRootMain(t *testing.T) {
	marker := uniqueMarker()
	spec := baseSpec(t, "oracle")
	fetch := `exec 3<>/dev/tcp/api/8000 && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && tail -n1 <&3 > /logs/agent/api.txt; id -u > /logs/agent/uid.txt`
	spec.Task.Dir = sidecarTask(t, apiCompose(apiServer("from-api-"+marker, marker), apiHealthy), fetch)
	r, err := runSidecarTrialAs(t, spec, pythonServices(t), marker, testrootfs.AgentUser)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := strings.TrimSpace(r.artifact(t, "agent/uid.txt")); got != fmt.Sprint(testrootfs.AgentUID) {
		t.Errorf("main ran as uid %s, want %d", got, testrootfs.AgentUID)
	}
	if got := strings.TrimSpace(r.artifact(t, "agent/api.txt")); got != "from-api-"+marker {
		t.Errorf("main (non-root) got %q from api:8000, want from-api-%s", got, marker)
	}
}

// loggingAPIServer is apiServer that also appends each request to
// /var/log/api/orders.log in its own filesystem.
func loggingAPIServer(marker string) string {
	return fmt.Sprintf(`import http.server, os
os.makedirs("/var/log/api", exist_ok=True)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open("/var/log/api/orders.log", "a") as f: f.write("order " + self.path + "\n")
        b = b"gauntlet"
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
http.server.HTTPServer(("0.0.0.0", 8000), H).serve_forever()  # %s
`, marker)
}

// A sidecar's declared artifacts (`service = "api"`, Harbor's
// sidecar-artifacts example) are collected from the service's own
// filesystem once the agent is done: with a separate verifier they are
// placed at their path in its environment — main stopped first, the
// service still running, as Harbor orders it — and kept with the attempt;
// the oracle, whose request the service logged, passes; nop, which made
// none, fails.
func TestSidecarArtifactsReachTheSeparateVerifier(t *testing.T) {
	script := "#!/bin/sh\nif grep -q 'order /' /var/log/api/orders.log 2>/dev/null; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
	vimg := verifierImage(t, script)
	for h, want := range map[string]float64{"oracle": 1, "nop": 0} {
		t.Run(h, func(t *testing.T) {
			marker := uniqueMarker()
			spec := baseSpec(t, h)
			// The healthcheck's request is logged too: the check here
			// only looks for the port, so the log holds the agent's
			// requests alone.
			compose := apiCompose(loggingAPIServer(marker), `["CMD", "python3", "-c", "import socket; socket.create_connection(('api', 8000), 2)"]`)
			dir := sidecarTask(t, compose, fetchAPI)
			editTOML(t, dir, "[verifier]\n", "[verifier]\nenvironment_mode = \"separate\"\n")
			cfg, err := os.ReadFile(filepath.Join(dir, "task.toml"))
			if err != nil {
				t.Fatal(err)
			}
			toml := `artifacts = [{source = "/var/log/api/orders.log", service = "api"}]` + "\n" + string(cfg)
			if err := os.WriteFile(filepath.Join(dir, "task.toml"), []byte(toml), 0o644); err != nil {
				t.Fatal(err)
			}
			spec.Task.Dir = dir
			dirs := t.TempDir()
			img := testImage(t)
			opts := Options{Image: &img, VerifierImage: &vimg, Services: pythonServices(t), Isolation: IsolationBwrap, SelfPath: runnerBinary,
				StaticBinDir: t.TempDir(), WorkDir: filepath.Join(dirs, "work"), OutDir: filepath.Join(dirs, "out")}
			tr, err := run(context.Background(), spec, opts, harness.All())
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if pids := processesWithArg(t, marker); len(pids) > 0 {
				t.Errorf("processes of the services alive after the trial: %v", pids)
			}
			assertNoMountsUnder(t, dirs)
			r := trialRun{result: tr, out: opts.OutDir}
			if got := rewardOf(t, r.result); got != want {
				t.Errorf("reward = %v, want %v", got, want)
			}
			manifest := r.artifact(t, DeclaredArtifactsDir+"/"+harbor.ArtifactsManifestFile)
			if !strings.Contains(manifest, `"service": "api"`) {
				t.Errorf("manifest.json does not name the service:\n%s", manifest)
			}
			if h == "oracle" {
				if got := r.artifact(t, DeclaredArtifactsDir+"/var/log/api/orders.log"); !strings.Contains(got, "order /") {
					t.Errorf("the kept orders.log = %q, want the oracle's request", got)
				}
			}
		})
	}
}

// A compose file's named volume (Harbor's environment-env-multi) is one
// directory shared by the services that mount it, main included, as
// Docker's is: what the sidecar writes there main reads; a `:ro` mount is
// read-only; a new volume starts with the image's content at its target
// (Docker's copy-up: the minbase's /etc/skel), unless volume.nocopy;
// nothing of them is left after the trial.
func TestComposeVolumesAreSharedByTheServices(t *testing.T) {
	marker := uniqueMarker()
	compose := `services:
  main:
    depends_on:
      sidecar:
        condition: service_started
    volumes:
      - evidence:/startup
      - skel:/etc/skel
      - type: volume
        source: empty
        target: /etc/skel-nocopy
        volume:
          nocopy: true
  sidecar:
    image: python:3.12-slim
    command: ["sh", "-c", "printf '%s' \"$${SIDECAR_ONLY-unset}\" > /startup/sidecar-env; if touch /ro/x 2>/dev/null; then echo writable; else echo refused; fi > /startup/ro; exec sleep 3600 # ` + marker + `"]
    environment:
      SIDECAR_ONLY: "from-compose"
    volumes:
      - evidence:/startup
      - evidence:/ro:ro
volumes:
  evidence:
  skel:
  empty:
`
	agent := `while [ ! -s /startup/ro ]; do sleep 0.05; done
printf 'sidecar=%s ro=%s bashrc=%s nocopy=%s\n' "$(cat /startup/sidecar-env)" "$(cat /startup/ro)" \
  "$([ -f /etc/skel/.bashrc ] && echo copied || echo missing)" "$(ls -A /etc/skel-nocopy | wc -l)" > /logs/agent/volumes.txt
echo gauntlet > /app/answer.txt
`
	spec := baseSpec(t, "command")
	spec.Task.Dir = sidecarTask(t, compose, "true")
	spec.Command = agent
	services := map[string]ServiceImage{"sidecar": pythonServices(t)["api"]}
	r, err := runSidecarTrial(t, spec, services, marker)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := strings.TrimSpace(r.artifact(t, "agent/volumes.txt")), "sidecar=from-compose ro=refused bashrc=copied nocopy=0"; got != want {
		t.Errorf("main found %q, want %q", got, want)
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1", got)
	}
}

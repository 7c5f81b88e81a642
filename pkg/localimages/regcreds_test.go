package localimages_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// The login the private registry accepts; the PAT is the canary the test
// looks for in every response, log line and stored file.
const (
	pullUser = "puller"
	pullPAT  = "ghp_pullcreds-canary-7Hq2Zx9"
)

// recorder keeps every API response body the client reads.
type recorder struct {
	mu     sync.Mutex
	bodies bytes.Buffer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.bodies.Write(body)
	r.bodies.WriteByte('\n')
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies.String()
}

// TestWorkspaceRegistryCredentials runs `gauntlet local` (the real server,
// SQLite, secret store, image store, buildah and bubblewrap) against a
// registry that demands a login, serving the Debian bases under private/:
// the demo-envs tasks, pointed there, are unavailable with "refused
// authentication" without a credential, the sync fails naming the record
// when its value is not username:password, and with the workspace's
// secret record named at add time the pull, the Dockerfile's base (buildah,
// through a temporary authfile) and the oracle's attempts all succeed. Bad
// registry_credentials answer 422 naming the field and write nothing, and
// the password appears in no response, log line or stored file.
func TestWorkspaceRegistryCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("heavy (a buildah build pulling its base, a rootfs unpack and two attempts in images); run without -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("buildah builds and image sandboxes need root here; run the tests as root")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bubblewrap is not installed; run `make deps`")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	reg := privateRegistry(t, ctx)
	dir := t.TempDir()
	location := privateDataset(t, filepath.Join(dir, "datasets"), reg.Host)

	buildDir := filepath.Join(dir, "buildah") // fresh: buildah must pull the private base itself
	p := startImagePlatform(t, ctx, dir, location, platformConfig{buildDir: buildDir, level: slog.LevelDebug})
	srv, logs, dataDir := p.srv, p.logs, p.dataDir
	rec := &recorder{}
	c, err := client.New(srv.URL(), srv.Tenant().Token, &http.Client{Transport: rec})
	if err != nil {
		t.Fatal(err)
	}

	// Bad input: the field is named, nothing is written.
	if _, err := c.PutSecret(ctx, "BAD_PULL", "workspace", []byte("no-colon-"+pullPAT)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutSecret(ctx, "PRIVATE_PULL", "workspace", []byte(pullUser+":"+pullPAT+"\n")); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		creds []v1.RegistryCredential
		field string
	}{
		{[]v1.RegistryCredential{{Registry: "http://" + reg.Host, Secret: "PRIVATE_PULL"}}, "registry_credentials[0].registry"},
		{[]v1.RegistryCredential{{Registry: reg.Host, Secret: "PRIVATE_PULL"}, {Registry: reg.Host + "/private", Secret: "PRIVATE_PULL"}}, "registry_credentials[1].registry"},
		{[]v1.RegistryCredential{{Registry: reg.Host, Secret: "private-pull"}}, "registry_credentials[0].secret"},
		{[]v1.RegistryCredential{{Registry: reg.Host, Secret: "NEVER_SET"}}, "registry_credentials[0].secret"},
	}
	for _, b := range bad {
		_, err := c.AddBenchmark(ctx, "private-envs@1.2", b.creds...)
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity {
			t.Fatalf("AddBenchmark(%v) = %v, want 422", b.creds, err)
		}
		if ps, _ := ae.Problems(); len(ps) != 1 || ps[0].Field != b.field || !strings.HasPrefix(ae.Message, b.field+": ") {
			t.Errorf("AddBenchmark(%v) = %q %+v, want the problem at %s", b.creds, ae.Message, ps, b.field)
		}
	}
	if list, err := c.Benchmarks(ctx); err != nil || len(list) != 0 {
		t.Fatalf("benchmarks after refused adds = %+v, %v; want none written", list, err)
	}

	// No credential: the registry refuses, each task says so.
	d := addAndSync(t, ctx, c, "private-envs@1.0")
	if d.Status != "ready" || d.Manifest == nil || len(d.Manifest.UnavailableTasks) != 2 {
		t.Fatalf("without a credential: %s %q %+v; want ready with both tasks unavailable", d.Status, d.SyncError, d.Manifest)
	}
	for _, u := range d.Manifest.UnavailableTasks {
		image := reg.Host + "/private/python:3.13-slim-bookworm"
		if u.Name == "build-inventory" {
			image = "base image " + reg.Host + "/private/debian:bookworm-slim"
		}
		if !strings.HasPrefix(u.Reason, "task "+u.Name+": ") || !strings.Contains(u.Reason, image) || !strings.Contains(u.Reason, refusedAuth) {
			t.Errorf("unavailable %s: %q, want the task, %s and %q", u.Name, u.Reason, image, refusedAuth)
		}
	}

	// A value that is not username:password fails the sync, naming the record.
	d = addAndSync(t, ctx, c, "private-envs@1.1", v1.RegistryCredential{Registry: reg.Host, Secret: "BAD_PULL"})
	if d.Status != "failed" || !strings.Contains(d.SyncError, "secret record BAD_PULL") || !strings.Contains(d.SyncError, "not username:password") {
		t.Errorf("with a malformed value: %s %q; want failed naming BAD_PULL", d.Status, d.SyncError)
	}

	// The workspace's credential: pulled, built, available.
	d = addAndSync(t, ctx, c, "private-envs@1.2", v1.RegistryCredential{Registry: reg.Host, Secret: "PRIVATE_PULL"})
	if d.Status != "ready" || d.Manifest == nil || len(d.Manifest.UnavailableTasks) != 0 {
		t.Fatalf("with the credential: %s %q %+v; want ready, every task available", d.Status, d.SyncError, d.Manifest)
	}
	if want := []v1.RegistryCredential{{Registry: reg.Host, Secret: "PRIVATE_PULL"}}; len(d.RegistryCredentials) != 1 || d.RegistryCredentials[0] != want[0] {
		t.Errorf("registry_credentials = %+v, want %+v", d.RegistryCredentials, want)
	}
	for _, task := range d.Manifest.Tasks {
		if task.Environment == nil || !strings.Contains(task.Environment.Pinned, "@sha256:") {
			t.Errorf("task %s: environment %+v, want pinned", task.Name, task.Environment)
		}
	}
	if left, err := os.ReadDir(filepath.Join(buildDir, "work")); err != nil || len(left) != 0 {
		t.Errorf("buildah work dir after the build: %v, %v; want empty (the authfile removed)", left, err)
	}

	// The oracle passes both tasks in their private images.
	created, err := c.SubmitRun(ctx, client.Submission{Config: []byte(`
[experiment]
benchmark = "private-envs-1-2"
[execution]
max_concurrent_attempts = 2
[[agents]]
harness = "oracle"
`)})
	if err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, ctx, c, created.ID)
	results, err := c.Results(ctx, r.ID, client.ResultFilter{})
	if err != nil {
		t.Fatal(err)
	}
	passed := map[string]bool{}
	for _, res := range results.Results {
		passed[res.Task] = res.Outcome == "passed"
	}
	if !passed["image-facts"] || !passed["build-inventory"] || r.Status != "finished" {
		t.Errorf("oracle run %s: %+v, want both tasks passed", r.Status, results.Results)
	}
	if _, err := c.BuildLog(ctx, "private-envs-1-2", "build-inventory"); err != nil {
		t.Fatal(err)
	}

	// The password is in no response, log line or stored file.
	for where, text := range map[string]string{"an API response": rec.String(), "the server log": logs.String()} {
		if strings.Contains(text, pullPAT) {
			t.Errorf("%s holds the registry password", where)
		}
	}
	if !strings.Contains(logs.String(), "benchmark added") {
		t.Error("the server log was not captured, so its scan saw nothing")
	}
	for _, root := range []string{dataDir, buildDir, filepath.Join(dir, "images")} {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() || e.Name() == "stock.txt" {
				return err
			}
			data, err := os.ReadFile(p)
			if err == nil && (bytes.Contains(data, []byte(pullPAT)) || bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString([]byte(pullUser+":"+pullPAT))))) {
				t.Errorf("stored file %s holds the registry password", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// refusedAuth is the image store's words for a 401 (image.ErrUnauthorized).
var refusedAuth = image.ErrUnauthorized.Error()

// privateRegistry serves the Debian bases (make base-images) under
// private/ behind basicAuth.
func privateRegistry(t *testing.T, ctx context.Context) *localreg.Registry {
	t.Helper()
	base, err := localreg.BaseLayout(localreg.BaseDir())
	if err != nil {
		t.Fatalf("base images: %v", err)
	}
	reg := imagetest.Registry(t, localreg.Options{Layouts: []string{base}, Handler: imagetest.BasicAuth(pullUser, pullPAT)})
	p, err := layout.FromPath(base)
	if err != nil {
		t.Fatal(err)
	}
	ii, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := ii.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	pushed := 0
	for _, m := range im.Manifests {
		name := m.Annotations["org.opencontainers.image.ref.name"]
		if name != "library/python:3.13-slim-bookworm" && name != "library/debian:bookworm-slim" {
			continue
		}
		img, err := ii.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Push(ctx, "private/"+strings.TrimPrefix(name, "library/"), img,
			remote.WithAuth(&authn.Basic{Username: pullUser, Password: pullPAT})); err != nil {
			t.Fatal(err)
		}
		pushed++
	}
	if pushed != 2 {
		t.Fatalf("base layout %s: pushed %d of the 2 bases", base, pushed)
	}
	return reg
}

// privateDataset copies examples/demo-envs with its images moved to the
// private registry, listed as versions 1.0, 1.1 and 1.2 of private-envs.
func privateDataset(t *testing.T, root, host string) string {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", "../../examples/demo-envs", filepath.Join(root, "tasks")).CombinedOutput(); err != nil {
		t.Fatalf("copy demo-envs: %v\n%s", err, out)
	}
	edit(t, filepath.Join(root, "tasks", "image-facts", "task.toml"), `docker_image = "python:3.13-slim-bookworm"`, `docker_image = "`+host+`/private/python:3.13-slim-bookworm"`)
	edit(t, filepath.Join(root, "tasks", "build-inventory", "environment", "Dockerfile"), "FROM debian:bookworm-slim", "FROM "+host+"/private/debian:bookworm-slim")
	type task struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}
	tasks := []task{{"build-inventory", "tasks/build-inventory"}, {"image-facts", "tasks/image-facts"}}
	var datasets []map[string]any
	for _, v := range []string{"1.0", "1.1", "1.2"} {
		datasets = append(datasets, map[string]any{"name": "private-envs", "version": v, "description": "demo-envs from a private registry", "tasks": tasks})
	}
	data, err := json.Marshal(datasets)
	if err != nil {
		t.Fatal(err)
	}
	location := filepath.Join(root, "registry.json")
	writeFile(t, location, string(data))
	return location
}

// addAndSync adds a dataset and waits for its sync to end.
func addAndSync(t *testing.T, ctx context.Context, c *client.Client, spec string, creds ...v1.RegistryCredential) v1.BenchmarkDetail {
	t.Helper()
	b, err := c.AddBenchmark(ctx, spec, creds...)
	if err != nil {
		t.Fatalf("AddBenchmark(%s): %v", spec, err)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		d, err := c.Benchmark(ctx, b.Key)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == "ready" || d.Status == "failed" {
			return d
		}
		select {
		case <-ctx.Done():
			t.Fatalf("benchmark %s still %s (%s)", b.Key, d.Status, d.Progress.Label)
		case <-tick.C:
		}
	}
}

// waitRun waits for a run's terminal state.
func waitRun(t *testing.T, ctx context.Context, c *client.Client, id string) v1.RunDetail {
	t.Helper()
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := c.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch r.Status {
		case "finished", "failed", "stopped":
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s still %s", id, r.Status)
		case <-tick.C:
		}
	}
}

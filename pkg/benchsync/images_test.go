package benchsync

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/imagebuild"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// testRegistry is go-containerregistry's registry on loopback; the
// resolver maps Docker Hub names into it, as the operator's mirror setting
// does, and pins them with a HEAD request (the real registry protocol).
type testRegistry struct {
	host string
}

func newTestRegistry(t testing.TB) *testRegistry {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return &testRegistry{host: strings.TrimPrefix(srv.URL, "http://")}
}

// push pushes a one-file image under repo:tag.
func (r *testRegistry) push(t testing.TB, repoTag, file, body string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: file, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(tw, body)
	tw.Close()
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
}

// Resolve maps a Docker Hub reference into the registry and pins it.
func (r *testRegistry) Resolve(ctx context.Context, ref string, _ []PullCredential) (string, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return "", err
	}
	repo := parsed.Context().RepositoryStr()
	if parsed.Context().RegistryStr() == r.host {
		repo = parsed.Context().RepositoryStr()
	}
	mapped, err := name.ParseReference(r.host+"/"+repo+sep(parsed)+parsed.Identifier(), name.Insecure)
	if err != nil {
		return "", err
	}
	desc, err := remote.Head(mapped, remote.WithContext(ctx))
	if err != nil {
		return "", err
	}
	return r.host + "/" + repo + "@" + desc.Digest.String(), nil
}

func sep(r name.Reference) string {
	if _, ok := r.(name.Digest); ok {
		return "@"
	}
	return ":"
}

// importLayout pushes a built layout into the registry.
func (r *testRegistry) importLayout(ctx context.Context, dir, key string) (string, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return "", err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return "", err
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		return "", err
	}
	ref, _ := name.ParseReference(r.host + "/built:" + key[:12])
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return "", err
	}
	d, _ := img.Digest()
	return r.host + "/built@" + d.String(), nil
}

// imageTask is a task directory to write.
type imageTask struct {
	name        string
	environment string // [environment] body
	dockerfile  string // environment/Dockerfile, when set
	files       map[string]string
}

func writeImageTasks(t testing.TB, tasks []imageTask) string {
	t.Helper()
	return writeImageTasksAt(t, filepath.Join(t.TempDir(), "registry.json"), tasks)
}

// writeImageTasksAt writes the tasks and registry.json at location (the
// registry file's path), replacing what is there.
func writeImageTasksAt(t testing.TB, location string, tasks []imageTask) string {
	t.Helper()
	root := filepath.Dir(location)
	type entry struct {
		Name        string `json:"name"`
		GitURL      string `json:"git_url"`
		GitCommitID string `json:"git_commit_id"`
		Path        string `json:"path"`
	}
	var entries []entry
	for _, task := range tasks {
		dir := filepath.Join(root, "tasks", task.name)
		files := map[string]string{
			"task.toml":      "[verifier]\ntimeout_sec = 10.0\n[agent]\ntimeout_sec = 10.0\n[environment]\n" + task.environment,
			"instruction.md": "Do " + task.name + ".\n",
			"tests/test.sh":  "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n",
		}
		if task.dockerfile != "" {
			files["environment/Dockerfile"] = task.dockerfile
		}
		for k, v := range task.files {
			files[k] = v
		}
		for rel, body := range files {
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		entries = append(entries, entry{Name: task.name, Path: "tasks/" + task.name})
	}
	reg, _ := json.Marshal([]map[string]any{{"name": "envs", "version": "1.0", "description": "image tasks", "tasks": entries}})
	writeRegistry(t, filepath.Join(root, "registry.json"), string(reg))
	return filepath.Join(root, "registry.json")
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test builds images with buildah, which needs root here; run the tests as root")
	}
}

// buildahBuilder adapts imagebuild to the sync's port.
type buildahBuilder struct{ b *imagebuild.Builder }

func (a buildahBuilder) Build(ctx context.Context, r BuildRequest) (string, error) {
	return a.b.Build(ctx, imagebuild.Request{Key: r.Key, ContextDir: r.ContextDir, Dockerfile: r.Dockerfile, Log: r.Log})
}

func TestSyncPreparesImages(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "v1")
	reg.push(t, "library/base:1", "base.txt", "base")
	reg.push(t, "library/default:latest", "default.txt", "default")
	location := writeImageTasks(t, []imageTask{
		{name: "pulls", environment: "docker_image = \"app:1\"\n"},
		{name: "builds", dockerfile: "FROM base:1\nWORKDIR /app\nCOPY files/ /app/\n", files: map[string]string{"environment/files/data.txt": "data"}},
		{name: "defaults"},
		{name: "unknown-image", environment: "docker_image = \"ghost:9\"\n"},
		{name: "bad-build", dockerfile: "FROM base:1\nCOPY missing.txt /\n", environment: "build_timeout_sec = 60\n"},
		{name: "bad-base", dockerfile: "FROM ghost:9\n"},
	})
	e := newEnv(t, location)
	builder, err := imagebuild.New(imagebuild.Config{Dir: filepath.Join(t.TempDir(), "buildah"), Import: reg.importLayout})
	if err != nil {
		t.Fatal(err)
	}
	e.svc.envs = &Environments{Resolver: reg, Builder: buildahBuilder{builder}, DefaultImage: "default:latest"}
	var logs bytes.Buffer // written under the handler's lock, read after the sync
	e.svc.log = slog.New(slog.NewTextHandler(&logs, nil))
	b, err := e.svc.Add(ctx, ws, "envs")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	b = e.benchmark(t, b.Key)
	if b.Status != records.SyncReady || b.Phase != "" {
		t.Fatalf("after Sync: %+v", b)
	}
	// Each task says it is prepared, with its place, how and its time
	// (make run's demo prints these while the catalog syncs).
	for name, want := range map[string]string{"pulls": "source=pull", "builds": "source=build", "defaults": "source=default",
		"unknown-image": "unavailable=true", "bad-build": "unavailable=true"} {
		re := regexp.MustCompile(`msg="task image prepared" task=` + name + ` n=[1-6] of=6 .*` + want + `.*\n`)
		if !re.MatchString(logs.String()) {
			t.Errorf("no progress line for %s with %s in the log:\n%s", name, want, logs.String())
		}
	}
	for n := 1; n <= 6; n++ {
		if !strings.Contains(logs.String(), fmt.Sprintf(" n=%d of=6 ", n)) {
			t.Errorf("no progress line n=%d of=6:\n%s", n, logs.String())
		}
	}
	m, _ := e.manifest(t, b)
	env := func(name string) benchmark.Environment {
		task, ok := m.Task(name)
		if !ok || task.Environment == nil {
			t.Fatalf("task %s has no environment: %+v", name, task)
		}
		return *task.Environment
	}
	appPin, _ := reg.Resolve(ctx, "app:1", nil)
	if got := env("pulls"); got.Source != benchmark.ImagePull || got.Image != "app:1" || got.Pinned != appPin || got.Unavailable != "" {
		t.Errorf("pulls: %+v, want pull of app:1 pinned to %s", got, appPin)
	}
	defPin, _ := reg.Resolve(ctx, "default:latest", nil)
	if got := env("defaults"); got.Source != benchmark.ImageDefault || got.Pinned != defPin {
		t.Errorf("defaults: %+v, want the default image pinned to %s", got, defPin)
	}
	built := env("builds")
	basePin, _ := reg.Resolve(ctx, "base:1", nil)
	if built.Source != benchmark.ImageBuild || len(built.BuildKey) != 64 || built.Bases["base:1"] != basePin ||
		!strings.HasPrefix(built.Pinned, reg.host+"/built@sha256:") || built.Unavailable != "" {
		t.Errorf("builds: %+v", built)
	}
	if rec, err := e.rec.Benchmarks.ImageBuild(ctx, built.BuildKey); err != nil || rec.Pinned != built.Pinned {
		t.Errorf("build record = %+v, %v; want %s", rec, err, built.Pinned)
	}
	for name, want := range map[string][]string{
		"unknown-image": {"task unknown-image", "image ghost:9", "404"},
		"bad-build":     {"task bad-build", "build failed", "missing.txt", "log builds/"},
		"bad-base":      {"task bad-base", "base image ghost:9 (line 1)", "404"},
	} {
		got := env(name)
		for _, w := range want {
			if !strings.Contains(got.Unavailable, w) {
				t.Errorf("%s: Unavailable = %q, want it to contain %q", name, got.Unavailable, w)
			}
		}
		task, _ := m.Task(name)
		if task.Available() {
			t.Errorf("%s is available", name)
		}
	}
	bad := env("bad-build")
	rc, err := e.blobs.Get(ctx, bad.BuildLog)
	if err != nil {
		t.Fatalf("build log %s: %v", bad.BuildLog, err)
	}
	logText, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(logText), "missing.txt") {
		t.Errorf("build log lacks the failure:\n%s", logText)
	}

	// A tag that moves upstream is a new manifest version on the next
	// sync; the build is not repeated (its key did not change).
	reg.push(t, "library/app:1", "app.txt", "v2")
	e.clock.Advance(DefaultLease)
	if err := e.svc.Sync(ctx, NewRefreshMessage(ws, b.Key, e.clock.Now())); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	after := e.benchmark(t, b.Key)
	if after.ReadyDigest == b.ReadyDigest || after.ReadyVersion == b.ReadyVersion {
		t.Fatalf("after the tag moved: version %s digest %s, want a new version (was %s %s)", after.ReadyVersion, after.ReadyDigest, b.ReadyVersion, b.ReadyDigest)
	}
	m2, _ := e.manifest(t, after)
	moved, _ := m2.Task("pulls")
	rebuilt, _ := m2.Task("builds")
	if moved.Environment.Pinned == appPin || rebuilt.Environment.Pinned != built.Pinned {
		t.Errorf("after the tag moved: pulls %s (was %s), builds %s (was %s)", moved.Environment.Pinned, appPin, rebuilt.Environment.Pinned, built.Pinned)
	}
	// The pinned run's version is untouched.
	old, _, err := e.rec.Benchmarks.Manifest(ctx, ws, b.Key, b.ReadyVersion)
	if err != nil {
		t.Fatal(err)
	}
	if task, _ := old.Task("pulls"); task.Environment.Pinned != appPin {
		t.Errorf("old version's pulls = %s, want %s", task.Environment.Pinned, appPin)
	}
}

func TestSyncImagePolicyAndNoBuilder(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "v1")
	location := writeImageTasks(t, []imageTask{
		{name: "public", environment: "docker_image = \"app:1\"\n"},
		{name: "offline", environment: "docker_image = \"app:1\"\nnetwork_mode = \"no-network\"\n"},
		{name: "dockerfile", dockerfile: "FROM app:1\n", environment: "network_mode = \"no-network\"\n"},
		{name: "nothing", environment: "network_mode = \"no-network\"\n"},
	})
	e := newEnv(t, location)
	obs := &observingResolver{ImageResolver: reg, t: t, e: e, key: "envs-1-0"}
	// One task at a time: the state seen below depends on the order.
	e.svc.envs = &Environments{Resolver: obs, NoPublicNetwork: true, ParallelBuilds: 1}
	b, err := e.svc.Add(ctx, ws, "envs")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	// The benchmark says it is preparing images while it resolves them
	// ("Preparing images · 1 / 4" in the views): "public" is refused by
	// policy without a resolve, "offline" resolves app:1, and "dockerfile"
	// finds its base app:1 already resolved in this sync (each reference
	// is resolved once).
	if diff := cmp.Diff([]string{"syncing images 1/4"}, obs.seen); diff != "" {
		t.Errorf("state seen while resolving (-want +got):\n%s", diff)
	}
	m, _ := e.manifest(t, e.benchmark(t, b.Key))
	want := map[string]string{
		"public":     "network policy allows no public network",
		"offline":    "",
		"dockerfile": "builds no images",
		"nothing":    "no default image",
	}
	for name, w := range want {
		task, _ := m.Task(name)
		reason := task.UnavailableReason()
		switch {
		case w == "" && reason != "":
			t.Errorf("%s unavailable: %s", name, reason)
		case w != "" && !strings.Contains(reason, w):
			t.Errorf("%s: reason %q, want it to contain %q", name, reason, w)
		case w != "" && !strings.HasPrefix(reason, fmt.Sprintf("task %s: ", name)):
			t.Errorf("%s: reason %q does not name the task first", name, reason)
		}
	}
}

// observingResolver records the benchmark's sync state at each Resolve.
type observingResolver struct {
	ImageResolver
	t    *testing.T
	e    *env
	key  string
	seen []string
}

func (o *observingResolver) Resolve(ctx context.Context, ref string, creds []PullCredential) (string, error) {
	b := o.e.benchmark(o.t, o.key)
	o.seen = append(o.seen, fmt.Sprintf("%s %s %d/%d", b.Status, b.Phase, b.Synced, b.Total))
	return o.ImageResolver.Resolve(ctx, ref, creds)
}

// cancellingResolver cancels the sync at its first resolve.
type cancellingResolver struct {
	ImageResolver
	cancel context.CancelFunc
}

func (c cancellingResolver) Resolve(ctx context.Context, ref string, _ []PullCredential) (string, error) {
	c.cancel()
	return "", ctx.Err()
}

// TestSyncCancelledReleasesItsClaim: a sync stopped by shutdown (long now
// that it builds images) leaves the benchmark pending, so the next start
// syncs it at once rather than after the lease.
func TestSyncCancelledReleasesItsClaim(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "v1")
	e := newEnv(t, writeImageTasks(t, []imageTask{{name: "pulls", environment: "docker_image = \"app:1\"\n"}}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.svc.envs = &Environments{Resolver: cancellingResolver{ImageResolver: reg, cancel: cancel}}
	b, err := e.svc.Add(context.Background(), ws, "envs")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Sync(ctx, NewSyncMessage(ws, b.Key)); err == nil {
		t.Fatal("cancelled Sync returned nil")
	}
	if got := e.benchmark(t, b.Key); got.Status != records.SyncPending {
		t.Fatalf("after a cancelled sync: %s, want pending", got.Status)
	}
	e.svc.envs = &Environments{Resolver: reg}
	e.sync(t, b.Key)
	if got := e.benchmark(t, b.Key); got.Status != records.SyncReady {
		t.Fatalf("after the next sync: %s, want ready", got.Status)
	}
}

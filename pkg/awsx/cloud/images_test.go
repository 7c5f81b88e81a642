package cloud_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud/cloudtest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/codebuild"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// TestCloudSyncPinsImages runs the registrysync function's sync on the
// emulators with ECR and CodeBuild fakes and an in-process registry behind
// ECR's basic auth: a docker_image task is pinned to the digest the
// pull-through prefix serves, a Dockerfile task is built by CodeBuild and
// pinned to the pushed digest, and an image no registry knows makes its
// task unavailable, naming the image.
func TestCloudSyncPinsImages(t *testing.T) {
	ctx := context.Background()
	env := cloudtest.NewEnv(t)
	regDir := t.TempDir()
	writeRolling(t, regDir, "word-frequency")
	writeImageTask(t, regDir, "pulls", "python:3.13-slim")
	writeImageTask(t, regDir, "ghost", "ghost/nothing:1")
	writeImageTask(t, regDir, "plain", "")
	reg := `[{"name": "rolling", "version": "head", "description": "images", "tasks": [` +
		`{"name": "word-frequency", "path": "tasks/word-frequency"}, {"name": "pulls", "path": "tasks/pulls"}, {"name": "ghost", "path": "tasks/ghost"}, ` +
		`{"name": "plain", "path": "tasks/plain"}]}]`
	if err := os.WriteFile(filepath.Join(regDir, "registry.json"), []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := env.Vars()
	vars[cloud.EnvRegistry] = filepath.Join(regDir, "registry.json")
	// The operator's default image as the stack sets it: a tag, which the
	// sync resolves through the pull-through prefix.
	vars[cloud.EnvSandboxDefaultImage] = "python:3.13-slim"
	p, _ := connectRegistrySync(t, vars)
	svc, err := p.BenchSync()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Add(ctx, "ws-a", "rolling"); err != nil {
		t.Fatal(err)
	}
	// CodeBuild is not waited on: the sync parks at "Preparing images"
	// with the build's id, and its resume picks the finished build up.
	err = svc.Sync(ctx, benchsync.NewSyncMessage("ws-a", "rolling-head"))
	var building *benchsync.ImagesBuilding
	if !errors.As(err, &building) || len(building.Resume.Resume.Builds) != 1 {
		t.Fatalf("first sync: %v, want it parked on the one build", err)
	}
	recs := records.New(p.Ports.Table)
	if b := readBenchmark(t, recs, "ws-a"); b.Status != records.SyncSyncing || b.Phase != records.SyncPhaseImages || b.Synced != 3 || b.Total != 4 {
		t.Fatalf("parked: %s %s %d/%d, want syncing images 3/4", b.Status, b.Phase, b.Synced, b.Total)
	}
	if err := svc.Sync(ctx, building.Resume); err != nil {
		t.Fatalf("resumed sync: %v", err)
	}
	b := readBenchmark(t, recs, "ws-a")
	if b.Status != records.SyncReady {
		t.Fatalf("after the sync: %+v", b)
	}
	m, _, err := recs.Benchmarks.Manifest(ctx, "ws-a", b.Key, b.ReadyVersion)
	if err != nil {
		t.Fatal(err)
	}
	envOf := func(name string) benchmark.Environment {
		task, ok := m.Task(name)
		if !ok || task.Environment == nil {
			t.Fatalf("task %s has no environment: %+v", name, task)
		}
		return *task.Environment
	}
	img := env.Images
	pulls := envOf("pulls")
	if pulls.Source != benchmark.ImagePull || pulls.Pinned != "docker.io/library/python@"+img.Python || pulls.Unavailable != "" {
		t.Errorf("pulls = %+v, want docker.io/library/python pinned by digest", pulls)
	}
	built := envOf("word-frequency")
	if built.Source != benchmark.ImageBuild || img.Pushed(built.BuildKey) == "" || built.Pinned != img.RepositoryURI+"@"+img.Pushed(built.BuildKey) || built.Unavailable != "" {
		t.Errorf("word-frequency = %+v, want built into %s", built, img.RepositoryURI)
	}
	if built.Bases["python:3.13-slim"] != pulls.Pinned {
		t.Errorf("word-frequency's base = %q, want the pinned %q", built.Bases["python:3.13-slim"], pulls.Pinned)
	}
	// CodeBuild pulls the base through the pull-through prefix, by digest.
	if df := contextDockerfile(t, p, built.BuildKey); !strings.Contains(df, "FROM "+img.Registry.Host+"/docker-hub/library/python@"+img.Python) {
		t.Errorf("the Dockerfile CodeBuild got =\n%s\nwant its FROM through %s/docker-hub by digest", df, img.Registry.Host)
	}
	ghost := envOf("ghost")
	if ghost.Pinned != "" || !strings.Contains(ghost.Unavailable, "ghost/nothing:1") {
		t.Errorf("ghost = %+v, want unavailable naming ghost/nothing:1", ghost)
	}
	plain := envOf("plain")
	if plain.Source != benchmark.ImageDefault || plain.Pinned != pulls.Pinned || plain.Unavailable != "" {
		t.Errorf("plain = %+v, want the default image pinned to %s", plain, pulls.Pinned)
	}
	ops := img.Ops()
	for _, op := range []string{"GetAuthorizationToken", "DescribeImages", "StartBuild", "BatchGetBuilds"} {
		if !slices.Contains(ops, op) {
			t.Errorf("ECR/CodeBuild ops = %v, want %s among them", ops, op)
		}
	}
	if n := countOf(ops, "StartBuild"); n != 1 {
		t.Errorf("StartBuild called %d times across the sync and its resume, want 1", n)
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// contextDockerfile reads the Dockerfile of the build context the sync
// uploaded for CodeBuild.
func contextDockerfile(t *testing.T, p *cloud.Platform, key string) string {
	t.Helper()
	rc, err := p.Blobs.Get(context.Background(), codebuild.ContextKey(key))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zipped, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == "Dockerfile" {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			r.Close()
			return string(b)
		}
	}
	t.Fatalf("build context of %s has no Dockerfile", key)
	return ""
}

func writeImageTask(t *testing.T, regDir, name, image string) {
	t.Helper()
	dst := filepath.Join(regDir, "tasks", name)
	if err := os.CopyFS(dst, os.DirFS("../../../examples/demo-bench/word-frequency")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dst, "environment", "Dockerfile")); err != nil {
		t.Fatal(err)
	}
	toml, err := os.ReadFile(filepath.Join(dst, "task.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if image != "" {
		toml = []byte(strings.Replace(string(toml), "[environment]\n", "[environment]\ndocker_image = \""+image+"\"\n", 1))
	}
	if err := os.WriteFile(filepath.Join(dst, "task.toml"), toml, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadImagesSettings: the sync's cold start names a missing build or
// repository variable, and refuses a default image that is not pinned.
func TestLoadImagesSettings(t *testing.T) {
	for _, name := range []string{cloud.EnvImageBuildProject, cloud.EnvTaskImagesRepository, cloud.EnvTaskImagesURI} {
		if _, err := cloud.Load(cloud.RegistrySync, cloudtest.Getenv(without(stackEnv(), name))); err == nil ||
			!strings.Contains(err.Error(), name+" is not set") {
			t.Errorf("Load without %s: error = %v, want it named", name, err)
		}
	}
	env := stackEnv()
	env[cloud.EnvSandboxDefaultImage] = "Python:3.13 slim"
	if _, err := cloud.Load(cloud.RegistrySync, cloudtest.Getenv(env)); err == nil ||
		!strings.Contains(err.Error(), `GAUNTLET_SANDBOX_DEFAULT_IMAGE="Python:3.13 slim" is not an image reference`) {
		t.Errorf("Load with a malformed default image: error = %v, want it refused", err)
	}
	// A tag is the sync's to resolve (the stack's default is one).
	env[cloud.EnvSandboxDefaultImage] = "docker.io/library/python:3.13-slim-bookworm"
	if cfg, err := cloud.Load(cloud.RegistrySync, cloudtest.Getenv(env)); err != nil || cfg.Images.DefaultImage != env[cloud.EnvSandboxDefaultImage] {
		t.Errorf("Load with a tag as default image: %+v, %v; want it read", cfg.Images, err)
	}
	cfg, err := cloud.Load(cloud.RegistrySync, cloudtest.Getenv(stackEnv()))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Images.BuildProject != "gauntlet-dev-images" || len(cfg.Images.Mirrors) != 2 {
		t.Errorf("images settings = %+v, want the project and both mirrors", cfg.Images)
	}
	if api, _ := cloud.Load(cloud.API, cloudtest.Getenv(without(stackEnv(), cloud.EnvImageBuildProject))); api.Images.BuildProject != "" {
		t.Errorf("the API read the images settings: %+v", api.Images)
	}
}

// TestCloudSyncCopiesWhatOnlyAWorkspaceLoginOpens: the registrysync
// function reads a benchmark's registry credential from Secrets Manager,
// pins an image the platform's own credentials cannot pull with it, and
// copies it by digest into the platform's task-images repository, which
// Fargate and CodeBuild pull from with the ECR token: the task pins the
// copy (same digest), and no workspace login leaves the sync. An image
// that needs no login pins as before.
func TestCloudSyncCopiesWhatOnlyAWorkspaceLoginOpens(t *testing.T) {
	ctx := context.Background()
	env := cloudtest.NewEnv(t)
	const password = "ghp_cloud-canary-31"
	private := imagetest.Registry(t, localreg.Options{Handler: imagetest.BasicAuth("bob", password)})
	img := imagetest.Image(t, v1.Config{}, imagetest.Layer(t, imagetest.File("app.txt", "private")))
	if err := private.Push(ctx, "private/app:1", img, remote.WithAuth(&authn.Basic{Username: "bob", Password: password})); err != nil {
		t.Fatal(err)
	}
	regDir := t.TempDir()
	writeImageTask(t, regDir, "private", private.Host+"/private/app:1")
	writeImageTask(t, regDir, "public", "python:3.13-slim")
	reg := `[{"name": "rolling", "version": "head", "description": "images", "tasks": [` +
		`{"name": "private", "path": "tasks/private"}, {"name": "public", "path": "tasks/public"}]}]`
	if err := os.WriteFile(filepath.Join(regDir, "registry.json"), []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, workspace string
		mirrored        bool
	}{
		{name: "registry without a mirror", workspace: "ws-a"},
		// The pull-through mirror in front of the registry answers "not
		// found" for a private repository it cannot read.
		{name: "registry behind a pull-through mirror", workspace: "ws-b", mirrored: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := tc.workspace
			vars := env.Vars()
			vars[cloud.EnvRegistry] = filepath.Join(regDir, "registry.json")
			if tc.mirrored {
				vars["GAUNTLET_SANDBOX_MIRRORS"] += "," + private.Host + "=" + env.Images.Registry.Host + "/private-mirror"
			}
			p, _ := connectRegistrySync(t, vars)
			if p.Ports.Secrets == nil {
				t.Fatal("the registrysync function has no secret store: fnspec gives it no Secrets read")
			}
			recs := records.New(p.Ports.Table)
			ref := secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: "PULL"}
			if err := p.Ports.Secrets.Put(ctx, ref, secret.Value("bob:"+password)); err != nil {
				t.Fatal(err)
			}
			if err := recs.Workspaces.PutSecretRecord(ctx, records.SecretRecord{Workspace: ws, Scope: secret.Workspace, Name: "PULL", SetBy: "u1"}); err != nil {
				t.Fatal(err)
			}
			svc, err := p.BenchSync()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Add(ctx, ws, "rolling", benchmark.RegistryCredential{Registry: private.Host, Secret: "PULL"}); err != nil {
				t.Fatal(err)
			}
			if err := svc.Sync(ctx, benchsync.NewSyncMessage(ws, "rolling-head")); err != nil {
				t.Fatal(err)
			}
			b := readBenchmark(t, recs, ws)
			if b.Status != records.SyncReady {
				t.Fatalf("after the sync: %s %q", b.Status, b.SyncError)
			}
			m, _, err := recs.Benchmarks.Manifest(ctx, ws, b.Key, b.ReadyVersion)
			if err != nil {
				t.Fatal(err)
			}
			priv, _ := m.Task("private")
			want, err := img.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if !priv.Available() || priv.Environment.Pinned != env.Images.RepositoryURI+"@"+want.String() {
				t.Fatalf("private task: available %v (%q), pinned %q; want the copy %s@%s", priv.Available(), priv.UnavailableReason(), priv.Environment.Pinned, env.Images.RepositoryURI, want)
			}
			if got := env.Images.Digest(env.Images.Repository + ":copy-" + strings.TrimPrefix(want.String(), "sha256:")); got != want.String() {
				t.Errorf("the task-images repository holds %q under the copy's tag, want %s", got, want)
			}
			if strings.Contains(fmt.Sprintf("%+v", m), password) {
				t.Errorf("the manifest version holds the password")
			}
			// A second sync (a redelivery, a refresh) finds the copy and pins it again.
			if err := svc.Sync(ctx, benchsync.NewSyncMessage(ws, "rolling-head")); err != nil {
				t.Fatal(err)
			}
			if b := readBenchmark(t, recs, ws); b.Status != records.SyncReady {
				t.Fatalf("after the second sync: %s %q", b.Status, b.SyncError)
			}
			if pub, _ := m.Task("public"); !pub.Available() || !strings.Contains(pub.Environment.Pinned, "@sha256:") {
				t.Errorf("public task: %+v, want pinned", pub.Environment)
			}

		})
	}
}

package localimages_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/fsblob"
	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
	"github.com/gauntlet-bench/gauntlet/pkg/localimages"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
)

const ws = "ws-1"

// TestSyncDemoEnvs syncs examples' demo-envs with the local wiring: the
// docker_image task is resolved through the mirror to the Debian + python3
// base and unpacked, the Dockerfile task is built with buildah FROM the
// minbase (pulled through the same mirror) and imported into the store;
// both end up pinned, unpacked and available.
func TestSyncDemoEnvs(t *testing.T) {
	if testing.Short() {
		t.Skip("heavy (a buildah build FROM the Debian base and two rootfs unpacks, ≈ 90 s on a busy machine); run without -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("buildah builds and rootfs unpacking need root here; run the tests as root")
	}
	ctx := context.Background()
	_, mirrors := imagetest.BaseImages(t)
	dir := t.TempDir()
	store, err := image.Open(filepath.Join(dir, "images"), image.Options{Mirrors: mirrors, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	envs, err := localimages.Environments(localimages.Config{Store: store, Mirrors: mirrors, BuildDir: buildCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	blobs, err := fsblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	recs := records.New(db.Table())
	svc, err := benchsync.New(benchsync.Config{Records: benchsync.StoreRecords(recs), Blobs: blobs, Registry: "../../examples/registry.json",
		WorkDir: filepath.Join(dir, "work"), Environments: envs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Add(ctx, ws, "demo-envs@1.0")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := svc.Sync(ctx, benchsync.NewSyncMessage(ws, b.Key)); err != nil {
		t.Fatal(err)
	}
	t.Logf("first sync (resolve, unpack, build): %v", time.Since(start))
	b, err = recs.Benchmarks.Benchmark(ctx, ws, b.Key)
	if err != nil || b.Status != records.SyncReady {
		t.Fatalf("benchmark %+v, %v; want ready", b, err)
	}
	m, _, err := recs.Benchmarks.Manifest(ctx, ws, b.Key, b.ReadyVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range m.Tasks {
		env := task.Environment
		if env == nil || env.Unavailable != "" || !strings.Contains(env.Pinned, "@sha256:") {
			t.Fatalf("task %s: environment %+v", task.Name, env)
		}
		rf, err := store.Rootfs(ctx, env.Pinned)
		if err != nil {
			t.Fatalf("task %s: rootfs of %s: %v", task.Name, env.Pinned, err)
		}
		switch task.Name {
		case "image-facts":
			if env.Source != benchmark.ImagePull || !strings.HasPrefix(env.Pinned, "docker.io/library/python@sha256:") {
				t.Errorf("image-facts: %+v", env)
			}
			if _, err := os.Stat(filepath.Join(imagetest.Mount(t, rf.Layers), "usr/bin/python3")); err != nil {
				t.Errorf("image-facts rootfs has no python3: %v", err)
			}
		case "separate-grader":
			// Its separate verifier's image is built from tests/ and
			// pinned beside the task's own, and provides /tests/test.sh.
			v := env.Verifier
			if v == nil || v.Source != benchmark.ImageBuild || !strings.HasPrefix(v.Pinned, localimages.BuildRepository+"@sha256:") || v.Digest == "" {
				t.Fatalf("separate-grader verifier image %+v", v)
			}
			vr, err := store.Rootfs(ctx, v.Pinned)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(imagetest.Mount(t, vr.Layers), "tests/test.sh")); err != nil {
				t.Errorf("verifier rootfs has no /tests/test.sh: %v", err)
			}
			vr.Close()
		case "build-inventory":
			if env.Source != benchmark.ImageBuild || !strings.HasPrefix(env.Pinned, localimages.BuildRepository+"@sha256:") ||
				!strings.HasPrefix(env.Bases["debian:bookworm-slim"], "docker.io/library/debian@sha256:") {
				t.Errorf("build-inventory: %+v", env)
			}
			stock, err := os.ReadFile(filepath.Join(imagetest.Mount(t, rf.Layers), "srv/inventory/stock.txt"))
			if err != nil || !strings.Contains(string(stock), "item-05 0\n") {
				t.Errorf("built rootfs stock.txt = %q, %v", stock, err)
			}
			if rf.Config.WorkingDir != "/app" || !contains(rf.Config.Env, "INVENTORY=/srv/inventory/stock.txt") {
				t.Errorf("built image config: %+v", rf.Config)
			}
		case "sidecar-orders":
			// Its api service is built from environment/api-server at sync,
			// pinned and unpacked like a task image, with its CMD kept.
			api := env.Services["api"]
			if api.Source != benchmark.ImageBuild || !strings.HasPrefix(api.Pinned, localimages.BuildRepository+"@sha256:") {
				t.Fatalf("sidecar-orders api service: %+v", api)
			}
			srf, err := store.Rootfs(ctx, api.Pinned)
			if err != nil {
				t.Fatalf("rootfs of the api service: %v", err)
			}
			if _, err := os.Stat(filepath.Join(imagetest.Mount(t, srf.Layers), "srv/server.py")); err != nil || strings.Join(srf.Config.Cmd, " ") != "python3 /srv/server.py" {
				t.Errorf("api service rootfs: server.py %v, cmd %q", err, srf.Config.Cmd)
			}
			srf.Close()
		}
		rf.Close()
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// buildCache is buildah's storage for these tests, kept between runs in the
// cache directory beside the base images, so cached layers make a second
// run's builds fast (buildah locks its own storage).
func buildCache(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(localreg.BaseDir()), "test-buildah")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

package localimages_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/localimages"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
	"github.com/gauntlet-bench/gauntlet/pkg/server/servertest"
)

// platformConfig is what the end-to-end tests of this package vary in the
// platform they start.
type platformConfig struct {
	mirrors  []image.Mirror
	buildDir string // buildah's storage; "" is the shared test cache
	policy   localimages.Policy
	level    slog.Level
}

// imagePlatform is a real `gauntlet local` — the server, SQLite, the image
// store, buildah and bubblewrap sandboxes — over a fresh image store and
// data dir under dir, serving the registry at location, stopped when the
// test ends.
type imagePlatform struct {
	srv     *server.Server
	store   *image.Store
	logs    *servertest.Buffer
	dataDir string
}

func startImagePlatform(t *testing.T, ctx context.Context, dir, location string, pc platformConfig) *imagePlatform {
	t.Helper()
	p := &imagePlatform{logs: &servertest.Buffer{}, dataDir: filepath.Join(dir, "data")}
	logger := slog.New(slog.NewTextHandler(p.logs, &slog.HandlerOptions{Level: pc.level}))
	store, err := image.Open(filepath.Join(dir, "images"), image.Options{Mirrors: pc.mirrors, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	p.store = store
	buildDir := pc.buildDir
	if buildDir == "" {
		buildDir = buildCache(t)
	}
	envs, err := localimages.Environments(localimages.Config{Store: store, Mirrors: pc.mirrors, BuildDir: buildDir, Policy: pc.policy})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.Open(ctx, server.Options{DataDir: p.dataDir, Addr: "127.0.0.1:0", CredentialsPath: "-",
		Logger: logger,
		Local: local.Options{Registry: location, RefreshEvery: -1, RunnerPath: runnerBin, Isolation: "bwrap", Images: localimages.SandboxImages(store, nil), Environments: envs,
			WatchInterval: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	p.srv = srv
	served := make(chan error, 1)
	sctx, stop := context.WithCancel(ctx)
	go func() { served <- srv.Serve(sctx) }()
	t.Cleanup(func() {
		stop()
		<-served
		srv.Close()
	})
	return p
}

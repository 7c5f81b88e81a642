package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
	"github.com/gauntlet-bench/gauntlet/pkg/server/servertest"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestListenFirstAnswersWhileSyncing: with ListenFirst the server answers
// while its first catalog sync runs — /v1/health 503 "starting", /healthz
// ok, every API route 503 "starting: syncing the catalog", which is what
// the CLI's client reports — and turns ready when the sync ends. The
// catalog's registry is held until the starting answers were seen.
func TestListenFirstAnswersWhileSyncing(t *testing.T) {
	root, err := servertest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	runner, err := servertest.Build(root, "./cmd/sandbox-runner", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(released) }) }
	fetched := make(chan struct{}, 1)
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case fetched <- struct{}{}:
		default:
		}
		select {
		case <-released:
		case <-r.Context().Done():
		}
		http.NotFound(w, r) // the benchmark fails its sync; the server turns ready all the same
	}))
	defer registry.Close()
	defer release()
	dir := t.TempDir()
	catalog := filepath.Join(dir, "catalog.toml")
	text := fmt.Sprintf("[[benchmarks]]\nkey = \"held-bench\"\nname = \"held-bench\"\ndescription = \"a benchmark whose registry answers when the test says\"\n"+
		"source = \"held-bench@1.0\"\nregistry = %q\n", registry.URL+"/registry.json")
	if err := os.WriteFile(catalog, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := server.Open(ctx, server.Options{
		DataDir: filepath.Join(dir, "data"), Addr: "127.0.0.1:0", CredentialsPath: "-",
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		ListenFirst: true,
		Local:       local.Options{RefreshEvery: -1, RunnerPath: runner, Isolation: "bwrap-host", Catalog: catalog, AllowPrivateRegistry: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Starting(); got != server.StartingCatalog {
		t.Errorf("Starting() after Open = %q, want %q", got, server.StartingCatalog)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		srv.Close()
	}()
	select {
	case <-fetched:
	case <-time.After(2 * time.Minute):
		t.Fatal("the catalog sync never asked the registry")
	}

	health := func() (int, v1.Health) {
		t.Helper()
		resp, err := http.Get(srv.URL() + "/v1/health")
		if err != nil {
			t.Fatalf("GET /v1/health while starting: %v (want an answer, not a refusal)", err)
		}
		defer resp.Body.Close()
		var h v1.Health
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, h
	}
	if code, h := health(); code != http.StatusServiceUnavailable || h.Status != v1.HealthStarting || h.Detail != server.StartingCatalog {
		t.Errorf("/v1/health while syncing = %d %+v, want 503 starting %q", code, h, server.StartingCatalog)
	}
	c, err := client.New(srv.URL(), srv.Tenant().Token, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(ctx); err != nil {
		t.Errorf("/healthz while syncing = %v, want ok (liveness)", err)
	}
	_, err = c.Benchmarks(ctx)
	if !client.IsStatus(err, http.StatusServiceUnavailable) || !strings.Contains(err.Error(), "starting: syncing the catalog") {
		t.Errorf("listing benchmarks while syncing: err %v, want 503 \"starting: syncing the catalog\"", err)
	}

	release()
	waitFor(t, "/v1/health 200 ready after the registry answered", 2*time.Minute, func() bool {
		code, h := health()
		return code == http.StatusOK && h.Status == v1.HealthReady
	})
	if srv.Starting() != "" {
		t.Errorf("Starting() = %q once ready", srv.Starting())
	}
	if _, err := c.Benchmarks(ctx); err != nil {
		t.Errorf("listing benchmarks once ready: %v", err)
	}
}

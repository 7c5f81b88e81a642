package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
	"github.com/gauntlet-bench/gauntlet/pkg/server/servertest"
)

// TestPeriodicRefresh starts a server of its own whose refresh loop runs
// every 100 ms for benchmarks synced more than 1 ms ago: demo-bench@1.0,
// added from the registry, once ready is re-resolved against the registry
// again and again (its last-synced time moves) and stays ready on the same
// version.
func TestPeriodicRefresh(t *testing.T) {
	root, err := servertest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ex := func(p string) string { return filepath.Join(root, "examples", p) }
	runner, err := servertest.Build(root, "./cmd/sandbox-runner", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := server.Open(ctx, server.Options{
		DataDir: t.TempDir(), Addr: "127.0.0.1:0", CredentialsPath: "-",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Local:  local.Options{Registry: ex("registry.json"), RefreshEvery: 100 * time.Millisecond, RefreshAfter: time.Millisecond, RunnerPath: runner, Isolation: "bwrap-host", Catalog: ex("catalog.toml")}, // the example tasks run on the host rootfs (development mode) until they carry images
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		<-done
		srv.Close()
	}()

	req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v1/benchmarks", strings.NewReader(`{"source":"demo-bench@1.0"}`))
	req.Header.Set("Authorization", "Bearer "+srv.Tenant().Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("add demo-bench@1.0: %d %s", resp.StatusCode, body)
	}

	var first time.Time
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		states, err := srv.Records().Benchmarks.SyncedBefore(ctx, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			if st.Key != "demo-bench-1-0" {
				continue
			}
			switch {
			case first.IsZero():
				first = st.LastSynced
			case st.LastSynced.After(first):
				b, err := srv.Records().Benchmarks.Benchmark(ctx, st.Workspace, st.Key)
				if err != nil {
					t.Fatal(err)
				}
				if b.Status != "ready" || b.ReadyVersion != "1.0" || st.RefreshError != "" {
					t.Fatalf("after a refresh: status %s version %s refresh error %q; want ready on 1.0 without error", b.Status, b.ReadyVersion, st.RefreshError)
				}
				return
			}
		}
		<-tick.C
	}
	t.Fatalf("demo-bench was not refreshed within 60 s (first sync at %v)", first)
}

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace/diskspacetest"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
	"github.com/gauntlet-bench/gauntlet/pkg/server/servertest"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestSecretWriteOnAFullDataDirIs507: a server whose data dir (a real
// 64 MB tmpfs) is full answers a secret write with 507
// INSUFFICIENT_STORAGE naming the data dir, not 500 INTERNAL; the same
// write succeeds once space returns.
func TestSecretWriteOnAFullDataDirIs507(t *testing.T) {
	dir := diskspacetest.Mount(t, 64)
	runner, err := servertest.Build(env.Root, "./cmd/sandbox-runner", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := server.Open(ctx, server.Options{DataDir: dir, Addr: "127.0.0.1:0",
		CredentialsPath: "-", Logger: slog.New(slog.DiscardHandler),
		Local: local.Options{Registry: filepath.Join(env.Root, "examples", "registry.json"), RunnerPath: runner, Isolation: "process", MinFreeMB: 8}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	put := func() (int, v1.Error) {
		req, err := http.NewRequestWithContext(ctx, "PUT", srv.URL()+"/v1/secrets/FULL_DISK_KEY", bytes.NewReader([]byte("value-of-a-full-disk")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+srv.Tenant().Token)
		req.Header.Set("Content-Type", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e v1.Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e
	}
	free := diskspacetest.Fill(t, dir)
	status, e := put()
	if status != http.StatusInsufficientStorage || e.Code != v1.CodeInsufficientStorage || !strings.Contains(e.Message, dir) {
		t.Fatalf("PUT secret on a full data dir = %d %+v, want 507 %s naming %s", status, e, v1.CodeInsufficientStorage, dir)
	}
	free()
	if status, e := put(); status != http.StatusCreated {
		t.Fatalf("PUT secret after space returned = %d %+v, want 201", status, e)
	}
}

// Package servertest starts a real `gauntlet local` in-process for tests:
// a temp data dir, the real SQLite database, real bubblewrap sandboxes run
// by a freshly built sandbox-runner, the example registry, catalog and
// agents, listening on 127.0.0.1 on a free port. Its slog output is kept so
// tests can scan it.
package servertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
)

// Env is a running server.
type Env struct {
	Server *server.Server
	// URL is the server's base URL; Tenant its first workspace.
	URL    string
	Tenant server.Tenant
	// Root is the repository root; DataDir the server's data dir.
	Root, DataDir string

	logs   *Buffer
	tmp    string
	cancel context.CancelFunc
	done   chan error
}

// Buffer is a goroutine-safe log sink.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// RepoRoot finds the repository root (the directory holding go.mod) above
// the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("servertest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Build compiles the main package pkg (e.g. "./cmd/sandbox-runner") of the
// repository into dir and returns the binary's path.
func Build(root, pkg, dir string) (string, error) {
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// Start builds sandbox-runner and starts a server on a temp data dir.
// It needs bubblewrap (`apt-get install bubblewrap`, done by `make deps`).
func Start() (*Env, error) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		return nil, errors.New("servertest: bubblewrap (bwrap) is not installed; run `make deps` or `apt-get install bubblewrap`")
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gauntlet-servertest-")
	if err != nil {
		return nil, err
	}
	e := &Env{Root: root, DataDir: filepath.Join(tmp, "data"), logs: &Buffer{}, tmp: tmp, done: make(chan error, 1)}
	if err := e.start(); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return e, nil
}

func (e *Env) start() error {
	runner, err := Build(e.Root, "./cmd/sandbox-runner", e.tmp)
	if err != nil {
		return err
	}
	ex := func(p string) string { return filepath.Join(e.Root, "examples", p) }
	logger := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Open(ctx, server.Options{
		DataDir: e.DataDir, Addr: "127.0.0.1:0",
		CredentialsPath: "-", Logger: logger,
		Local: local.Options{Registry: ex("registry.json"), RunnerPath: runner, Isolation: "bwrap-host", AgentsDir: ex("agents"), Catalog: ex("catalog.toml"), MaxSandboxes: max(2, runtime.NumCPU())},
	})
	if err != nil {
		cancel()
		return err
	}
	e.Server, e.URL, e.Tenant, e.cancel = srv, srv.URL(), srv.Tenant(), cancel
	go func() { e.done <- srv.Serve(ctx) }()
	return nil
}

// Logs returns every log line the server wrote so far.
func (e *Env) Logs() string { return e.logs.String() }

// Close stops the server and removes its data dir.
func (e *Env) Close() error {
	e.cancel()
	var err error
	select {
	case err = <-e.done:
	case <-time.After(30 * time.Second):
		err = errors.New("servertest: server did not stop within 30 s")
	}
	err = errors.Join(err, e.Server.Close())
	return errors.Join(err, os.RemoveAll(e.tmp))
}

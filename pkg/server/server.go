// Package server serves `gauntlet local` over HTTP.
//
// It opens the embedded platform (pkg/local: SQLite, local queues, blobs,
// secrets, sandboxes, the benchmark sync and every loop of the local
// function table) and serves the HTTP API and the web console on loopback,
// answering /v1/health "starting" until the platform's loops run. On first
// start it creates a workspace, a user and an API token, and writes the
// token where the CLI finds it.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gauntlet-bench/gauntlet/console"
	"github.com/gauntlet-bench/gauntlet/pkg/api"
	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// DefaultAddr is where `gauntlet local` listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8080"

// Options configure a Server.
type Options struct {
	// DataDir holds the database, blobs, secrets and the token file.
	DataDir string
	// Addr is the listen address (default DefaultAddr; port 0 picks one).
	Addr string
	// Local configures the embedded platform; its DataDir and Logger are
	// taken from these Options. Local.Catalog is the managed-benchmark
	// catalog: its benchmarks are imported once into the platform
	// workspace, and every workspace sees them.
	Local local.Options
	// CredentialsPath is where the CLI credentials are written (default
	// client.DefaultCredentialsPath()); "-" writes none.
	CredentialsPath string
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
	// ListenFirst makes Open return before the managed catalog
	// (Local.Catalog) is synced: Serve answers at once — /v1/health
	// "starting: syncing the catalog", every other API route 503 with that
	// message — syncs the catalog, then starts the platform's loops and
	// turns ready. Without it Open syncs the catalog before it returns.
	ListenFirst bool
}

// StartingCatalog is what a ListenFirst server reports until its catalog
// is synced.
const StartingCatalog = "syncing the catalog"

// Server is a running `gauntlet local`.
type Server struct {
	opts     Options
	log      *slog.Logger
	platform *local.Platform
	records  *records.Store
	api      *api.Handler
	listener net.Listener
	http     *http.Server
	now      func() time.Time

	// startingWhat is what the server is still doing before it is ready
	// ("" once ready); see Options.ListenFirst.
	startingWhat atomic.Value
	tenant       Tenant
	created      bool
	stopOnce     sync.Once
	done         chan struct{}
}

// Open opens the platform on the data dir, bootstraps the first workspace
// and listens. Nothing runs until Serve.
func Open(ctx context.Context, opts Options) (*Server, error) {
	if opts.DataDir == "" {
		return nil, errors.New("server: a data dir is required")
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := local.SecureDataDir(opts.DataDir); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{opts: opts, log: opts.Logger, now: time.Now, done: make(chan struct{})}
	s.startingWhat.Store("")
	if opts.ListenFirst && opts.Local.Catalog != "" {
		s.opts.Local.DeferCatalog = true
		s.startingWhat.Store(StartingCatalog)
	}
	if err := s.open(ctx); err != nil {
		s.closePlatform()
		return nil, err
	}
	return s, nil
}

func (s *Server) open(ctx context.Context) error {
	lo := s.opts.Local
	lo.DataDir, lo.Logger = s.opts.DataDir, s.opts.Logger
	p, err := local.Open(ctx, lo)
	if err != nil {
		return err
	}
	s.platform = p
	s.records = p.Records()
	s.api = api.New(api.Config{Records: api.RecordsOf(s.records), Runs: p.Service(), Checks: p.Service(), Benchmarks: p.Benchmarks(),
		Blobs: p.Blobs(), Secrets: p.Secrets(), Logger: s.log, Starting: s.Starting})
	if s.tenant, s.created, err = s.bootstrap(ctx); err != nil {
		return err
	}
	if s.listener, err = net.Listen("tcp", s.opts.Addr); err != nil {
		return fmt.Errorf("listen on %s: %w", s.opts.Addr, err)
	}
	return s.writeCredentials()
}

// writeCredentials points the CLI at this server.
func (s *Server) writeCredentials() error {
	path := s.opts.CredentialsPath
	if path == "-" {
		return nil
	}
	if path == "" {
		var err error
		if path, err = client.DefaultCredentialsPath(); err != nil {
			return err
		}
	}
	s.opts.CredentialsPath = path
	return client.SaveCredentials(path, client.Credentials{URL: s.URL(), Token: s.tenant.Token})
}

// Starting is what the server is still doing before it serves the API
// ("syncing the catalog"), or "" once it is ready.
func (s *Server) Starting() string { return s.startingWhat.Load().(string) }

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// Tenant is the data dir's first workspace and its token.
func (s *Server) Tenant() Tenant { return s.tenant }

// Created reports whether Open created the first workspace (a fresh data dir).
func (s *Server) Created() bool { return s.created }

// TokenPath is the file holding the first workspace's token.
func (s *Server) TokenPath() string { return filepath.Join(s.opts.DataDir, TokenFile) }

// CredentialsPath is where the CLI credentials were written ("-" for none).
func (s *Server) CredentialsPath() string { return s.opts.CredentialsPath }

// Platform is the embedded platform (tests and seeding use it).
func (s *Server) Platform() *local.Platform { return s.platform }

// Records is the platform's data model (tests and seeding use it).
func (s *Server) Records() *records.Store { return s.records }

// Handler serves the API at /v1 and /healthz (liveness; /v1/health is
// readiness) and the console elsewhere.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/", s.api)
	mux.Handle("/healthz", s.api)
	mux.Handle("/", console.Handler())
	return mux
}

// Serve answers HTTP at once, syncs a deferred catalog (ListenFirst),
// starts the platform's loops, and serves until ctx ends, then shuts down
// gracefully (Close then waits for the loops).
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(s.listener) }()
	err := s.start(ctx)
	if err == nil {
		select {
		case <-ctx.Done():
		case err = <-errc:
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			} else {
				err = fmt.Errorf("serve: %w", err)
			}
		}
	}
	shutdown, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stop()
	return errors.Join(err, s.http.Shutdown(shutdown))
}

// start syncs a deferred catalog, then starts the platform's loops and
// marks the server ready.
func (s *Server) start(ctx context.Context) error {
	if s.opts.Local.DeferCatalog {
		begun := time.Now()
		s.log.InfoContext(ctx, "starting: "+StartingCatalog+" (the API answers 503 until it ends)")
		if err := s.platform.InstallCatalog(ctx); err != nil {
			return err
		}
		s.log.InfoContext(ctx, "catalog synced", "seconds", time.Since(begun).Round(100*time.Millisecond).Seconds())
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.platform.Start(ctx); err != nil {
		return err
	}
	if s.Starting() != "" {
		s.startingWhat.Store("")
		s.log.InfoContext(ctx, "ready", "url", s.URL())
	}
	return nil
}

// Close stops the platform and releases the data dir; call it after Serve
// returned (or instead of Serve).
func (s *Server) Close() error {
	if s.listener != nil {
		_ = s.listener.Close()
	}
	return s.closePlatform()
}

func (s *Server) closePlatform() error {
	var err error
	s.stopOnce.Do(func() {
		if s.platform != nil {
			err = s.platform.Close()
		}
		close(s.done)
	})
	return err
}

// Package api is gauntlet's HTTP API handler.
//
// It is gauntlet's HTTP API: the /v1 JSON routes every client (the
// CLI, the console, curl) uses, as one http.Handler. `gauntlet local` serves
// it on loopback; the API Lambda wraps the same handler behind API Gateway.
//
// Handlers are thin: they authenticate the bearer token, decode and check the
// request, call one service method or record read, and encode the answer.
// Every read and write is scoped to the caller's workspace; another
// workspace's ids answer 404. One function, writeError, maps domain errors to
// status codes and the error shape {code, message, details}; a 5xx body never
// carries an internal error text.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// Runs is the part of the run pipeline the API drives.
type Runs interface {
	// Submit accepts a run (see pipeline.Submitter.Submit).
	Submit(ctx context.Context, req pipeline.SubmitRequest) (pipeline.SubmitResult, error)
	// Validate checks a submission without writing anything.
	Validate(ctx context.Context, req pipeline.SubmitRequest) (pipeline.Validation, error)
	// Stop asks a pending, queued or running run to stop on behalf of the
	// user by and returns it; a run that already ended gives an error
	// wrapping pipeline.ErrNotStoppable.
	Stop(ctx context.Context, runID, by string) (run.Run, error)
	// Offers says what this platform's runs may use (harnesses, hosted
	// models), for GET /v1/harnesses.
	Offers() pipeline.Offers
}

// Benchmarks adds, re-syncs and removes the benchmarks of a workspace.
type Benchmarks interface {
	// AddFrom starts adding a dataset — registry.json "name[@version]",
	// package "org/name[@ref]" or a git repository — to the workspace and
	// returns its record (status pending or syncing). A bad field is a
	// *benchmark.FieldError and nothing is written.
	AddFrom(ctx context.Context, ws string, req benchsync.AddRequest) (records.Benchmark, error)
	// Sync retries the sync of a benchmark and returns its record.
	Sync(ctx context.Context, ws, key string) (records.Benchmark, error)
	// Delete removes a benchmark added from the registry; a managed one
	// gives an error wrapping records.ErrConflict.
	Delete(ctx context.Context, ws, key string) error
}

// Config is what a Handler is built from.
type Config struct {
	// Records is the stored records the handlers read (and the few they
	// write): *records.Store, or a fake.
	Records    Records
	Runs       Runs
	Benchmarks Benchmarks
	// Checks runs environment checks; nil answers their routes with 501.
	Checks  Checks
	Blobs   blob.Store
	Secrets secret.Store
	// ManagedWorkspace holds the managed benchmarks every workspace sees
	// (default pipeline.PlatformWorkspace).
	ManagedWorkspace string
	// Logger receives one line per failed request (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Starting, when set, reports what the platform is still doing before
	// it can serve ("syncing the catalog"), or "" once it is ready. While
	// it is starting, /v1/health answers 503 with it and every other route
	// but /healthz and /v1/openapi.json answers 503 "starting: <what>".
	// Nil: always ready.
	Starting func() string
}

// Handler serves the API. It owns what every route shares — the routing
// table, authentication, readiness and the error shape — and hands each
// request to the handlers of its resource family, which hold only what
// their routes read.
type Handler struct {
	cfg  Config
	auth Authenticator
	mux  *http.ServeMux
	log  *slog.Logger

	runs       *runsAPI
	benchmarks *benchmarksAPI
	workspaces *workspacesAPI
	boards     *boardsAPI
}

// New returns the API handler; it authenticates gauntlet API tokens.
func New(cfg Config) *Handler {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	// The handler authenticates its own API tokens, so adding a user
	// issues one.
	return newHandler(cfg, &tokenAuthenticator{recs: cfg.Records, now: now}, true)
}

func newHandler(cfg Config, auth Authenticator, mintsTokens bool) *Handler {
	if cfg.ManagedWorkspace == "" {
		cfg.ManagedWorkspace = pipeline.PlatformWorkspace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	see := scope{runs: cfg.Records, benchmarks: cfg.Records, managed: cfg.ManagedWorkspace}
	checks := checkSource{checks: cfg.Checks}
	answers := &answerCache{} // rendered leaderboards, runs and results
	h := &Handler{cfg: cfg, auth: auth, mux: http.NewServeMux(), log: cfg.Logger,
		runs: &runsAPI{recs: cfg.Records, runs: cfg.Runs, blobs: cfg.Blobs, now: cfg.Now, log: cfg.Logger,
			scope: see, checks: checks, answers: answers},
		benchmarks: &benchmarksAPI{recs: cfg.Records, benchmarks: cfg.Benchmarks, blobs: cfg.Blobs,
			scope: see, checks: checks, manifests: newManifestCache(cfg.Records)},
		workspaces: &workspacesAPI{recs: cfg.Records, secrets: pipeline.NewSecrets(cfg.Secrets, cfg.Records, cfg.Now),
			now: cfg.Now, log: cfg.Logger, mintsTokens: mintsTokens},
		boards: &boardsAPI{recs: cfg.Records, now: cfg.Now, scope: see, answers: answers},
	}
	for _, rt := range h.routes() {
		handle := rt.handle
		if rt.admin {
			handle = h.adminOnly(handle)
		}
		if !rt.public {
			handle = h.authenticated(handle)
		}
		if !rt.public && !rt.whileStarting {
			handle = h.ready(handle)
		}
		h.mux.Handle(rt.method+" "+rt.pattern, h.handler(handle))
	}
	h.mux.Handle("/", h.handler(func(w http.ResponseWriter, r *http.Request) error {
		return errorf(http.StatusNotFound, v1.CodeNotFound, "no route %s %s; see /v1/openapi.json", r.Method, r.URL.Path)
	}))
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// route is one registered route. The OpenAPI test checks every route
// against openapi.json and back.
type route struct {
	method, pattern string
	public          bool
	admin           bool // platform operators only (403 for everyone else)
	// whileStarting serves the route before the platform is ready (public
	// routes always are).
	whileStarting bool
	handle        handlerFunc
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (h *Handler) routes() []route {
	runs, benchmarks, workspaces, boards := h.runs, h.benchmarks, h.workspaces, h.boards
	return []route{
		{method: "GET", pattern: "/healthz", public: true, handle: h.health},
		{method: "GET", pattern: "/v1/health", public: true, handle: h.readiness},
		{method: "GET", pattern: "/v1/openapi.json", public: true, handle: h.openAPI},
		{method: "GET", pattern: "/v1/workspace", handle: workspaces.workspace},
		{method: "GET", pattern: "/v1/harnesses", handle: runs.listHarnesses},
		{method: "GET", pattern: "/v1/secrets", handle: workspaces.listSecrets},
		{method: "PUT", pattern: "/v1/secrets/{name}", handle: workspaces.putSecret},
		{method: "DELETE", pattern: "/v1/secrets/{name}", handle: workspaces.deleteSecret},
		{method: "GET", pattern: "/v1/benchmarks", handle: benchmarks.listBenchmarks},
		{method: "POST", pattern: "/v1/benchmarks", handle: benchmarks.addBenchmark},
		{method: "GET", pattern: "/v1/benchmarks/{key}", handle: benchmarks.getBenchmark},
		{method: "DELETE", pattern: "/v1/benchmarks/{key}", handle: benchmarks.deleteBenchmark},
		{method: "POST", pattern: "/v1/benchmarks/{key}/sync", handle: benchmarks.syncBenchmark},
		{method: "GET", pattern: "/v1/benchmarks/{key}/leaderboard", handle: boards.leaderboard},
		{method: "GET", pattern: "/v1/compare", handle: boards.compare},
		{method: "POST", pattern: "/v1/benchmarks/{key}/check", handle: benchmarks.startCheck},
		{method: "GET", pattern: "/v1/benchmarks/{key}/check", handle: benchmarks.getCheck},
		{method: "GET", pattern: "/v1/benchmarks/{key}/tasks/{task}/build-log", handle: benchmarks.buildLog},
		{method: "POST", pattern: "/v1/runs", handle: runs.createRun},
		{method: "POST", pattern: "/v1/runs/validate", handle: runs.validateRun},
		{method: "GET", pattern: "/v1/runs", handle: runs.listRuns},
		{method: "GET", pattern: "/v1/runs/{id}", handle: runs.getRun},
		{method: "GET", pattern: "/v1/runs/{id}/config", handle: runs.runConfig},
		{method: "GET", pattern: "/v1/runs/{id}/logs", handle: runs.runLogs},
		{method: "POST", pattern: "/v1/runs/{id}/stop", handle: runs.stopRun},
		{method: "GET", pattern: "/v1/runs/{id}/results", handle: runs.listResults},
		{method: "GET", pattern: "/v1/runs/{id}/results/{result}", handle: runs.getResult},
		{method: "GET", pattern: "/v1/runs/{id}/results/{result}/artifacts/{path...}", handle: runs.getArtifact},
		{method: "GET", pattern: "/v1/runs/{id}/download", handle: runs.download},
		{method: "POST", pattern: "/v1/admin/workspaces", admin: true, handle: workspaces.adminCreateWorkspace},
		{method: "GET", pattern: "/v1/admin/workspaces", admin: true, handle: workspaces.adminListWorkspaces},
		{method: "PUT", pattern: "/v1/admin/workspaces/{id}/billing", admin: true, handle: workspaces.adminSetBilling},
		{method: "POST", pattern: "/v1/admin/workspaces/{id}/users", admin: true, handle: workspaces.adminAddUser},
	}
}

// handler adapts a handlerFunc: it gives the request an id and writes a
// returned error with writeError.
func (h *Handler) handler(fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		if err := fn(w, r); err != nil {
			h.writeError(w, r, err)
		}
	})
}

type requestIDKey struct{}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// health is /healthz: the process answers (liveness; always ok).
func (h *Handler) health(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// starting is what the platform is still doing, "" when it is ready.
func (h *Handler) starting() string {
	if h.cfg.Starting == nil {
		return ""
	}
	return h.cfg.Starting()
}

// readiness is /v1/health: 200 ready, or 503 while the platform is starting.
func (h *Handler) readiness(w http.ResponseWriter, r *http.Request) error {
	if what := h.starting(); what != "" {
		w.Header().Set("Retry-After", "2")
		return writeJSON(w, http.StatusServiceUnavailable, v1.Health{Status: v1.HealthStarting, Detail: what})
	}
	return writeJSON(w, http.StatusOK, v1.Health{Status: v1.HealthReady})
}

// ready answers 503 "starting: <what>" until the platform is ready.
func (h *Handler) ready(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if what := h.starting(); what != "" {
			w.Header().Set("Retry-After", "2")
			return errorf(http.StatusServiceUnavailable, v1.CodeUnavailable, "starting: %s", what)
		}
		return next(w, r)
	}
}

func (h *Handler) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(v1.OpenAPI)
	return err
}

package benchseed_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
	"github.com/gauntlet-bench/gauntlet/pkg/server/benchseed"
)

// BenchmarkRoutes serves the four read routes scripts/bench-api.sh loads
// (the leaderboard, a run, a run's first page of results, the first page of
// runs) in process through the server's HTTP handler — authentication,
// routing, the answer cache and the rendering — over the same seed of 50
// entrants × 500 tasks × 5 attempts: the API's CPU per request without the
// network or a load generator sharing the machine, so a change to the
// handler can be compared before and after on a busy machine.
func BenchmarkRoutes(b *testing.B) {
	srv, seeded := seededServer(b)
	tenant, h := srv.Tenant(), srv.Handler()
	get := func(b *testing.B, path string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+tenant.Token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
		}
	}
	routes := []struct{ name, path string }{
		{"leaderboard", "/v1/benchmarks/" + seeded.Benchmark + "/leaderboard"},
		{"run", "/v1/runs/" + seeded.Runs[0]},
		{"results", "/v1/runs/" + seeded.Runs[0] + "/results"},
		{"runs", "/v1/runs"},
	}
	for _, rt := range routes {
		b.Run(rt.name, func(b *testing.B) {
			for b.Loop() {
				get(b, rt.path)
			}
		})
	}
	b.Run("all-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				get(b, routes[i%len(routes)].path)
			}
		})
	})
}

// seededServer opens a server (no sandbox ever starts) holding the load
// tests' benchmark: 50 entrants × 500 tasks (10 categories) × 5 attempts.
func seededServer(b *testing.B) (*server.Server, benchseed.Seeded) {
	b.Helper()
	ctx := context.Background()
	srv, err := server.Open(ctx, server.Options{DataDir: b.TempDir(), Addr: "127.0.0.1:0", CredentialsPath: "-",
		Local: local.Options{Isolation: "process", RunnerPath: "/bin/true"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	seeded, err := benchseed.Seed(ctx, srv.Platform().Service(), srv.Tenant().Workspace,
		benchseed.Shape{Entrants: 50, Tasks: 500, Attempts: 5, Categories: 10})
	if err != nil {
		b.Fatal(err)
	}
	return srv, seeded
}

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func TestResolveBenchmarkKeyNameAndAmbiguity(t *testing.T) {
	list := v1.BenchmarkList{Benchmarks: []v1.BenchmarkView{
		{Key: "demo-bench", Name: "demo-bench", Source: v1.Source{Type: "managed", Ref: "examples/catalog.toml"}},
		{Key: "demo-bench-1-0", Name: "demo-bench", Source: v1.Source{Type: "harbor", Ref: "demo-bench@1.0"}},
		{Key: "tb-a", Name: "Terminal Bench", Source: v1.Source{Type: "harbor", Ref: "terminal-bench@2.0"}},
		{Key: "tb-b", Name: "Terminal Bench", Source: v1.Source{Type: "harbor", Ref: "terminal-bench@2.1"}},
		{Key: "solo", Name: "Solo Bench", Source: v1.Source{Type: "harbor", Ref: "solo@1"}},
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/benchmarks" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "token", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for ref, want := range map[string]string{
		"demo-bench":     "demo-bench", // a key wins over the name both carry
		"demo-bench-1-0": "demo-bench-1-0",
		"Solo Bench":     "solo",
		"nope":           "nope", // left for the API's not-found
	} {
		if got, err := resolveBenchmark(ctx, c, ref); err != nil || got != want {
			t.Errorf("resolve %q = %q, %v; want %q", ref, got, err, want)
		}
	}
	_, err = resolveBenchmark(ctx, c, "Terminal Bench")
	if err == nil || !strings.HasPrefix(err.Error(), "ambiguous: ") || !strings.Contains(err.Error(), "tb-a (harbor terminal-bench@2.0)") || !strings.Contains(err.Error(), "tb-b (harbor terminal-bench@2.1)") {
		t.Fatalf("ambiguous name: %v", err)
	}
}

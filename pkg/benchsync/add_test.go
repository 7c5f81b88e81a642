package benchsync

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/internal/fixtures"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// harborSnapshot returns the path of the shared Harbor registry snapshot
// (see internal/fixtures); a missing snapshot fails the test.
func harborSnapshot(t *testing.T) string {
	t.Helper()
	p, err := fixtures.Path("harbor-registry-2026-01-29.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAddAgainstHarborSnapshot validates specs against the real registry
// (no task is fetched: nothing here syncs).
func TestAddAgainstHarborSnapshot(t *testing.T) {
	ctx := context.Background()
	snapshot := harborSnapshot(t)
	e := newEnv(t, snapshot)
	tests := []struct {
		spec      string
		wantKey   string
		wantRef   string
		wantTotal int
	}{
		{"terminal-bench@2.0", "terminal-bench-2-0", "terminal-bench@2.0", 89},
		{"terminal-bench", "terminal-bench-2-0", "terminal-bench@2.0", 89},
		{"ds-1000", "ds-1000-head", "ds-1000@head", 0},
		{"swe-lancer-diamond@ic", "swe-lancer-diamond-ic", "swe-lancer-diamond@ic", 0},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			b, err := e.svc.Add(ctx, ws, tt.spec)
			if err != nil {
				t.Fatalf("Add(%q): %v", tt.spec, err)
			}
			if b.Key != tt.wantKey || b.Source != (benchmark.Source{Type: benchmark.Harbor, Ref: tt.wantRef}) || b.Status != records.SyncPending {
				t.Errorf("Add(%q) = %+v", tt.spec, b)
			}
			if tt.wantTotal != 0 && b.Total != tt.wantTotal {
				t.Errorf("Add(%q) total = %d, want %d", tt.spec, b.Total, tt.wantTotal)
			}
		})
	}

	_, err := e.svc.Add(ctx, ws, "terminal-bench@9.9")
	var unknown *UnknownDatasetError
	if !errors.As(err, &unknown) || !errors.Is(err, harbor.ErrVersionNotFound) {
		t.Fatalf("Add(unknown version) = %v, want *UnknownDatasetError wrapping ErrVersionNotFound", err)
	}
	if diff := cmp.Diff(&UnknownDatasetError{Registry: snapshot, Name: "terminal-bench", Version: "9.9", Known: []string{"2.0"}}, unknown); diff != "" {
		t.Errorf("unknown version (-want +got):\n%s", diff)
	}
	if want := `dataset terminal-bench has no version "9.9" in registry ` + snapshot + "; versions: 2.0"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}

	_, err = e.svc.Add(ctx, ws, "no-such-bench")
	if !errors.As(err, &unknown) || !errors.Is(err, harbor.ErrDatasetNotFound) {
		t.Fatalf("Add(unknown dataset) = %v, want *UnknownDatasetError wrapping ErrDatasetNotFound", err)
	}
	if len(unknown.Known) != 20 || unknown.More != 18 || unknown.Known[0] != "aider-polyglot" ||
		!strings.HasSuffix(err.Error(), " and 18 more") {
		t.Errorf("unknown dataset: %d names, %d more: %v", len(unknown.Known), unknown.More, err)
	}

	for _, spec := range []string{"", "bad name!", "terminal-bench@", "@2.0"} {
		if _, err := e.svc.Add(ctx, ws, spec); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("Add(%q) = %v, want ErrInvalidSpec", spec, err)
		}
	}
	list, err := e.rec.Benchmarks.Benchmarks(ctx, ws)
	if err != nil || len(list) != 3 {
		t.Errorf("Benchmarks = %d, %v; want the 3 distinct ones added", len(list), err)
	}
}

func TestAddUnreachableRegistry(t *testing.T) {
	e := newEnv(t, filepath.Join(t.TempDir(), "missing.json"))
	_, err := e.svc.Add(context.Background(), ws, "demo-bench")
	if !errors.Is(err, ErrRegistryUnavailable) || !strings.Contains(err.Error(), "missing.json unreachable") {
		t.Errorf("Add with a missing registry = %v, want ErrRegistryUnavailable naming it", err)
	}
	if list, _ := e.rec.Benchmarks.Benchmarks(context.Background(), ws); len(list) != 0 {
		t.Errorf("Add with a missing registry wrote %d benchmarks", len(list))
	}
}

func TestRetry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, exampleRegistry)
	if _, err := e.svc.Retry(ctx, ws, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Retry(missing) = %v, want ErrNotFound", err)
	}
	b, err := e.svc.Add(ctx, ws, "demo-bench")
	if err != nil {
		t.Fatal(err)
	}
	pending, err := e.svc.Retry(ctx, ws, b.Key)
	if err != nil || pending.Version != b.Version {
		t.Errorf("Retry(pending) = %+v, %v; want it unchanged", pending, err)
	}
	if _, err := e.rec.Benchmarks.UpdateSync(ctx, ws, b.Key, func(st *records.SyncState) error {
		b := &st.Benchmark
		b.Status, b.SyncError, b.Synced = records.SyncFailed, "registry x unreachable", 3
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(1)
	got, err := e.svc.Retry(ctx, ws, b.Key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != records.SyncPending || got.SyncError != "" || got.Synced != 0 || !got.UpdatedAt.Equal(e.clock.Now()) {
		t.Errorf("Retry(failed) = %+v", got)
	}
}

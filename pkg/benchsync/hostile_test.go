package benchsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// TestHostileRegistries: what an attacker's registry tries is refused with a
// reason, and nothing it names ends up in the blob store.
func TestHostileRegistries(t *testing.T) {
	ctx := context.Background()
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:canary-hash"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("task name with a path", func(t *testing.T) {
		dir := t.TempDir()
		copyExample(t, "fix-median", filepath.Join(dir, "tasks", "x"))
		reg := filepath.Join(dir, "registry.json")
		writeRegistry(t, reg, `[{"name":"evil","version":"1","description":"","tasks":[{"name":"../../../tmp/x","path":"tasks/x"}]}]`)
		e := newEnv(t, reg)
		_, err := e.svc.Add(ctx, ws, "evil@1")
		if err == nil || !strings.Contains(err.Error(), `tasks[0].name: "../../../tmp/x" is not a task name`) {
			t.Fatalf("Add(evil) error = %v, want the task name refused", err)
		}
	})
	t.Run("symlink to a host file", func(t *testing.T) {
		dir := t.TempDir()
		task := filepath.Join(dir, "tasks", "x")
		copyExample(t, "fix-median", task)
		if err := os.Remove(filepath.Join(task, "instruction.md")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, filepath.Join(task, "instruction.md")); err != nil {
			t.Fatal(err)
		}
		reg := filepath.Join(dir, "registry.json")
		writeRegistry(t, reg, `[{"name":"evil","version":"1","description":"","tasks":[{"name":"x","path":"tasks/x"}]}]`)
		e := newEnv(t, reg)
		b, err := e.svc.Add(ctx, ws, "evil@1")
		if err != nil {
			t.Fatal(err)
		}
		e.sync(t, b.Key)
		got := e.benchmark(t, b.Key)
		if got.Status != records.SyncFailed || !strings.Contains(got.SyncError, "instruction.md is a symbolic link") {
			t.Errorf("after Sync: status %s, error %q; want failed naming instruction.md", got.Status, got.SyncError)
		}
		if keys := blobKeys(t, e); len(keys) != 0 {
			t.Errorf("blobs after a refused sync: %v", keys)
		}
	})
	t.Run("invalid registry says where", func(t *testing.T) {
		reg := filepath.Join(t.TempDir(), "registry.json")
		writeRegistry(t, reg, "[\n  {\"name\": \"x\", \"version\": \"1\",\n   \"tasks\": [{\"name\": 7, \"path\": \"p\"}]}\n]")
		e := newEnv(t, reg)
		_, err := e.svc.Add(ctx, ws, "x@1")
		if !errors.Is(err, ErrRegistryInvalid) || !strings.Contains(err.Error(), reg) || !strings.Contains(err.Error(), "line 3, column") || !strings.Contains(err.Error(), "tasks.name: want a string") {
			t.Fatalf("Add(invalid registry) error = %v, want ErrRegistryInvalid naming the file, line and field", err)
		}
	})
	t.Run("one invalid entry spoils only itself", func(t *testing.T) {
		dir := t.TempDir()
		task := filepath.Join(dir, "tasks", "x")
		if err := os.MkdirAll(task, 0o755); err != nil {
			t.Fatal(err)
		}
		writeRegistry(t, filepath.Join(task, "instruction.md"), "Do x.")
		writeRegistry(t, filepath.Join(task, "task.toml"), "")
		if err := os.MkdirAll(filepath.Join(task, "tests"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeRegistry(t, filepath.Join(task, "tests", "test.sh"), "#!/bin/sh\nexit 0\n")
		reg := filepath.Join(dir, "registry.json")
		writeRegistry(t, reg, `[
  {"name": "good", "version": "1", "description": "", "tasks": [{"name": "x", "path": "tasks/x"}]},
  {"name": "bad", "version": "1", "description": "", "tasks": [{"name": "x"}]}
]`)
		e := newEnv(t, reg)
		_, err := e.svc.Add(ctx, ws, "bad@1")
		if !errors.Is(err, ErrRegistryInvalid) || !strings.Contains(err.Error(), reg) || !strings.Contains(err.Error(), `registry entry 1 ("bad@1"): tasks[0].path: is required`) {
			t.Fatalf("Add(bad@1) error = %v, want ErrRegistryInvalid naming the file, the entry and its problem", err)
		}
		b, err := e.svc.Add(ctx, ws, "good@1")
		if err != nil {
			t.Fatalf("Add(good@1) beside an invalid entry: %v", err)
		}
		e.sync(t, b.Key)
		if got := e.benchmark(t, b.Key); got.Status != records.SyncReady {
			t.Errorf("after Sync of good@1: status %s, error %q; want ready", got.Status, got.SyncError)
		}
	})
	t.Run("no tasks", func(t *testing.T) {
		reg := filepath.Join(t.TempDir(), "registry.json")
		writeRegistry(t, reg, `[{"name":"empty","version":"1","description":"","tasks":[]}]`)
		e := newEnv(t, reg)
		b, err := e.svc.Add(ctx, ws, "empty@1")
		if err != nil {
			t.Fatal(err)
		}
		e.sync(t, b.Key)
		got := e.benchmark(t, b.Key)
		if got.Status != records.SyncFailed || !strings.Contains(got.SyncError, "lists no tasks") {
			t.Errorf("after Sync of a 0-task dataset: status %s, error %q; want failed, lists no tasks", got.Status, got.SyncError)
		}
	})
}

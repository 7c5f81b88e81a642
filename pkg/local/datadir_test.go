package local_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/local"
)

func TestSecureDataDirTightensWhatIsThere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gauntlet.db", "gauntlet.db-wal", "token", "server.log"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	for _, d := range []string{dir, fresh} {
		if err := local.SecureDataDir(d); err != nil {
			t.Fatalf("SecureDataDir(%s): %v", d, err)
		}
		if info, err := os.Stat(d); err != nil || info.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v (%v), want 0700", d, info.Mode().Perm(), err)
		}
		entries, _ := os.ReadDir(d)
		if len(entries) == 0 {
			t.Errorf("%s: no database file created", d)
		}
		for _, e := range entries {
			if info, _ := e.Info(); info.Mode().Perm() != 0o600 {
				t.Errorf("%s/%s: mode %v, want 0600", d, e.Name(), info.Mode().Perm())
			}
		}
	}
}

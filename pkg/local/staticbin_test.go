package local

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestInstallStaticBinariesCopiesOnceAndFollowsChanges(t *testing.T) {
	srcDir, dir := t.TempDir(), filepath.Join(t.TempDir(), StaticBinDir)
	src := filepath.Join(srcDir, "terminus-2")
	if err := os.WriteFile(src, []byte("version one"), 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := installStaticBinaries(dir, []string{src})
	if err != nil || got != dir {
		t.Fatalf("install = %q, %v; want %q", got, err, dir)
	}
	dst := filepath.Join(dir, "terminus-2")
	first, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if first.Mode().Perm() != 0o755 {
		t.Errorf("installed mode %v, want 0755 (any sandbox uid runs it)", first.Mode().Perm())
	}

	// A restart with the same program leaves the installed file alone: a
	// running sandbox has it mounted.
	if _, err := installStaticBinaries(dir, []string{src}); err != nil {
		t.Fatal(err)
	}
	again, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(first, again) {
		t.Error("unchanged program was rewritten on restart")
	}

	// A rebuilt program of the same size is installed anew.
	if err := os.WriteFile(src, []byte("version two"), 0o700); err != nil {
		t.Fatal(err)
	}
	later := first.ModTime().Add(time.Second)
	if err := os.Chtimes(src, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := installStaticBinaries(dir, []string{src}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dst)
	if err != nil || string(data) != "version two" {
		t.Fatalf("after rebuild installed %q, %v; want the new bytes", data, err)
	}

	if got, err := installStaticBinaries(dir, nil); err != nil || got != "" {
		t.Errorf("no programs: %q, %v; want \"\", nil", got, err)
	}
}

package diskspace_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace/diskspacetest"
)

func TestWrapNamesTheDirOfAFullFilesystemOnly(t *testing.T) {
	enospc := &fs.PathError{Op: "write", Path: "/d/x", Err: syscall.ENOSPC}
	tests := []struct {
		name    string
		err     error
		wantDir string // "" = not an out-of-space error
	}{
		{"nil", nil, ""},
		{"ENOSPC", fmt.Errorf("put blob: %w", enospc), "/d"},
		{"EDQUOT", &fs.PathError{Op: "write", Path: "/d/x", Err: syscall.EDQUOT}, "/d"},
		{"other errno", &fs.PathError{Op: "open", Path: "/d/x", Err: syscall.EACCES}, ""},
		{"already wrapped keeps its dir", &diskspace.Error{Dir: "/first", Err: enospc}, "/first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diskspace.Wrap("/d", tt.err)
			e, ok := diskspace.As(got)
			if ok != (tt.wantDir != "") {
				t.Fatalf("Wrap(%v) = %v, out of space %v, want %v", tt.err, got, ok, tt.wantDir != "")
			}
			if ok && e.Dir != tt.wantDir {
				t.Errorf("Wrap(%v) dir = %q, want %q", tt.err, e.Dir, tt.wantDir)
			}
			if tt.err != nil && !errors.Is(got, tt.err) {
				t.Errorf("Wrap(%v) = %v, which no longer wraps the cause", tt.err, got)
			}
		})
	}
}

func TestMonitorOnAFilesystemFilledAndFreed(t *testing.T) {
	dir := diskspacetest.Mount(t, 8)
	m := diskspace.NewMonitor(dir, 2<<20, nil)
	start := time.Now()
	if err := m.Check(); err != nil {
		t.Fatalf("Check on an empty 8 MB tmpfs with a 2 MB floor = %v, want nil", err)
	}
	if m.FullSince(start) {
		t.Fatal("FullSince = true before the filesystem filled")
	}
	free := diskspacetest.Fill(t, dir)
	_, err := os.Create(filepath.Join(dir, "one-more"))
	if err == nil {
		// tmpfs counts inodes apart: the file exists, its data cannot.
		err = os.WriteFile(filepath.Join(dir, "one-more"), make([]byte, 4096), 0o600)
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write to the filled filesystem = %v, want ENOSPC", err)
	}
	err = m.Check()
	e, ok := diskspace.As(err)
	if !ok || e.Dir != dir || e.FloorBytes != 2<<20 || e.FreeBytes >= e.FloorBytes {
		t.Fatalf("Check on the filled filesystem = %#v, want an *Error for %s below the 2 MB floor", err, dir)
	}
	free()
	if err := m.Check(); err != nil {
		t.Fatalf("Check after freeing = %v, want nil", err)
	}
	if !m.FullSince(start) {
		t.Error("FullSince(start) = false after the filesystem was full, want true")
	}
	if m.FullSince(time.Now().Add(time.Second)) {
		t.Error("FullSince(later) = true, want false: the filesystem was not full after it")
	}
}

func TestMonitorNoteMarksAFullFilesystem(t *testing.T) {
	m := diskspace.NewMonitor(t.TempDir(), 0, nil)
	start := time.Now()
	m.Note(errors.New("some other failure"))
	m.Note(&diskspace.Error{Dir: "/d", FreeBytes: 1, FloorBytes: 2}) // below a floor is not full
	if m.FullSince(start) {
		t.Fatal("FullSince = true after failures that are not a full filesystem")
	}
	m.Note(diskspace.Wrap("/d", syscall.ENOSPC))
	if !m.FullSince(start) {
		t.Fatal("FullSince = false after a noted out-of-space write")
	}
}

// Package diskspacetest gives tests a real, small filesystem to fill: a
// tmpfs of a given size mounted for the test, and a filler that takes every
// free byte of it until the test frees it again.
package diskspacetest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Mount mounts a tmpfs of sizeMB mebibytes on a new directory for the test
// and unmounts it at cleanup. It skips the test where mounting is not
// allowed (not root), saying so.
func Mount(t testing.TB, sizeMB int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small-fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	opts := "size=" + strconv.Itoa(sizeMB) + "m,mode=0700"
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a %d MB tmpfs needs root (CAP_SYS_ADMIN): %v", sizeMB, err)
		}
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file in dir until the filesystem refuses another byte
// (ENOSPC) and returns a function that removes it. It fails the test when
// the filesystem never fills.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler-*")
	if err != nil {
		t.Fatalf("create filler in %s: %v", dir, err)
	}
	name := f.Name()
	chunk := make([]byte, 1<<20)
	for size := len(chunk); size > 0; {
		if _, err := f.Write(chunk[:size]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				f.Close()
				t.Fatalf("fill %s: %v", dir, err)
			}
			size /= 2 // take what is left in smaller pieces
		}
	}
	if err := f.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fill %s: %v", dir, err)
	}
	return func() {
		t.Helper()
		if err := os.Remove(name); err != nil {
			t.Errorf("free %s: %v", dir, err)
		}
	}
}

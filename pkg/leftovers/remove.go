package leftovers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// unmount detaches every mount below an attempt that is not kept from the
// caller's own mount namespace, innermost first. (A runner mounts in a
// namespace of its own; these are left by whatever did not.)
func (r *reclaimer) unmount() (int, error) {
	mounts, err := readMounts("self")
	if err != nil {
		return 0, fmt.Errorf("read own mounts: %w", err)
	}
	var points []string
	for _, m := range mounts {
		if id := r.attemptOfPath(m.Mountpoint); id != "" && !r.keep(id) {
			points = append(points, m.Mountpoint)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	n := 0
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			continue
		}
		n++
		r.log.Info("unmounted a leftover sandbox mount", "mount_point", p)
	}
	return n, errors.Join(errs...)
}

// removeDirs removes every attempt directory that is not kept.
func (r *reclaimer) removeDirs() (int, error) {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", r.dir, err)
	}
	mounts, err := readMounts("self")
	if err != nil {
		return 0, fmt.Errorf("read own mounts: %w", err)
	}
	mounted := map[string]bool{}
	for _, m := range mounts {
		if id := r.attemptOfPath(m.Mountpoint); id != "" {
			mounted[id] = true
		}
	}
	n := 0
	var errs []error
	for _, e := range entries {
		id := e.Name()
		if r.keep(id) {
			continue
		}
		if mounted[id] {
			// Removing through a mount would delete what it shows.
			errs = append(errs, fmt.Errorf("attempt %s not removed: something is still mounted in it", id))
			continue
		}
		if err := RemoveAll(filepath.Join(r.dir, id)); err != nil {
			errs = append(errs, fmt.Errorf("remove attempt %s: %w", id, err))
			continue
		}
		n++
		r.log.Info("removed a leftover sandbox dir", "attempt", id)
	}
	return n, errors.Join(errs...)
}

// RemoveAll deletes dir even when a sandbox left directories without write
// or search permission in it (which stop a non-root owner's os.RemoveAll):
// it makes every directory (never a symlink's target) accessible and tries
// again.
func RemoveAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(file string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(file, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

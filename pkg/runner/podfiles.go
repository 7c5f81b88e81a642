package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// What the runner puts into a running pod from the host side, as Harbor
// uploads files into its running container: the task's tests right before
// the verifier, the solution before the oracle. The merged overlay is a
// host path, but processes of the pod may be running (the agent's
// background processes) and may swap a directory for a symlink at any
// moment, so every write goes through an os.Root of the overlay: a symlink
// is followed only within it, never to the host's files.

// uploadDir replaces target (absolute in the pod) with a copy of the host
// directory src, owned by the runner's root, modes kept. A missing src
// uploads nothing (the verifier then fails as the task's own error).
func uploadDir(root, src, target string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("upload %s: %w", target, err)
	}
	defer r.Close()
	dst := strings.TrimPrefix(filepath.Clean(target), "/")
	if err := r.RemoveAll(dst); err != nil {
		return fmt.Errorf("upload %s: clear what is there: %w", target, err)
	}
	if err := r.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("upload %s: %w", target, err)
	}
	var dirs []string // modes set last, so a read-only directory is filled first
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		name := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			dirs = append(dirs, rel)
			return r.Mkdir(name, 0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return r.Symlink(link, name)
		case !d.Type().IsRegular():
			return nil
		}
		return uploadFile(r, path, name)
	})
	if err != nil {
		return fmt.Errorf("upload %s: %w", target, err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		info, err := os.Stat(filepath.Join(src, dirs[i]))
		if err != nil {
			return fmt.Errorf("upload %s: %w", target, err)
		}
		if err := r.Chmod(filepath.Join(dst, dirs[i]), info.Mode().Perm()|0o500); err != nil {
			return fmt.Errorf("upload %s: %w", target, err)
		}
	}
	return nil
}

// uploadFile copies the host file src to name in r, created anew.
func uploadFile(r *os.Root, src, name string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(info.Mode().Perm())
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// emptyDir removes everything in dir (a host directory a pod binds
// writable, such as /logs/verifier: the pod cannot replace dir itself,
// only its entries, which os.RemoveAll never follows) and gives it back to
// uid and gid with mode 0755.
func emptyDir(dir string, uid, gid uint32) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("empty %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("empty %s: %w", dir, err)
		}
	}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return fmt.Errorf("empty %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("empty %s: %w", dir, err)
	}
	return nil
}

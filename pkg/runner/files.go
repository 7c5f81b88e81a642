package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// copyOptions controls copyTree.
type copyOptions struct {
	// keepSymlinks recreates symlinks as symlinks; otherwise they are skipped.
	// Symlinks are never followed.
	keepSymlinks bool
	// budget bounds the bytes copied (0 = no bound); files beyond it are skipped.
	budget int64
	// redact, when set, replaces secret values in every file copied.
	redact *redactor
}

// copyTree copies the tree at src into dst (created if missing): directories,
// regular files with their permission bits, and symlinks as options say.
// FIFOs, devices and sockets are skipped. It returns a note for everything it
// skipped; src may have been written by untrusted code, so nothing in it is
// ever followed out of the tree.
func copyTree(src, dst string, opt copyOptions) (skipped []string, err error) {
	used := int64(0)
	var dirModes []dirMode
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return fmt.Errorf("walk %s: %w", src, walkErr)
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return fmt.Errorf("walk %s: %w", src, err)
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("stat %s: %w", path, err)
			}
			dirModes = append(dirModes, dirMode{target, info.Mode() & (fs.ModePerm | fs.ModeSticky)})
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			if !opt.keepSymlinks {
				skipped = append(skipped, rel+": symlink not copied")
				return nil
			}
			link, err := os.Readlink(path)
			if err != nil {
				return fmt.Errorf("read symlink %s: %w", path, err)
			}
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			skipped = append(skipped, rel+": not a regular file")
			return nil
		}
		err = copyRegularFile(path, target, opt, &used)
		if errors.Is(err, errOverBudget) {
			skipped = append(skipped, fmt.Sprintf("%s: skipped, over the %d-byte copy budget", rel, opt.budget))
			return nil
		}
		return err
	})
	if err != nil {
		return skipped, err
	}
	// Directory modes last, deepest first, so a read-only directory is
	// still writable while it is being filled.
	for i := len(dirModes) - 1; i >= 0; i-- {
		if err := os.Chmod(dirModes[i].path, dirModes[i].mode); err != nil {
			return skipped, fmt.Errorf("chmod %s: %w", dirModes[i].path, err)
		}
	}
	return skipped, nil
}

type dirMode struct {
	path string
	mode fs.FileMode
}

// seedApp copies the task's environment/files/ (what the task's Dockerfile
// copies into /app) into app, keeping modes and symlinks. A task without
// environment files starts with an empty /app.
func seedApp(taskDir, app string) ([]string, error) {
	src := filepath.Join(taskDir, "environment", "files")
	info, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", src)
	}
	return copyTree(src, app, copyOptions{keepSymlinks: true})
}

var errOverBudget = errors.New("over the copy budget")

func copyRegularFile(src, dst string, opt copyOptions, used *int64) error {
	budget := opt.budget
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", src, err)
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	if budget > 0 && *used+info.Size() > budget {
		return errOverBudget
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	if err := out.Chmod(info.Mode().Perm()); err != nil {
		out.Close()
		return fmt.Errorf("chmod %s: %w", dst, err)
	}
	var r io.Reader = in
	if budget > 0 {
		r = io.LimitReader(in, budget-*used)
	}
	n, err := opt.redact.copy(out, r)
	*used += n
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}

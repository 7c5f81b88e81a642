package registry

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// copyTree copies directory rel of base to dst (which must not exist):
// regular files with their executable bit, directories, and symbolic links
// as links; .git directories are skipped and other file types refused.
//
// Nothing outside base/rel is ever read: the tree is opened as an os.Root,
// so rel itself cannot climb out of base through a link, and every symbolic
// link in it must resolve to something inside the tree — a link to
// /etc/shadow, to "../..", or one that dangles is refused with its path
// named, because the files are handed to agents and readers of the run.
func copyTree(base, rel, dst string) error {
	parent, err := os.OpenRoot(base)
	if err != nil {
		return fmt.Errorf("open %s: %w", base, err)
	}
	defer parent.Close()
	root, err := parent.OpenRoot(rel)
	if err != nil {
		return fmt.Errorf("open %s: %w", filepath.ToSlash(rel), linkError(err))
	}
	defer root.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	show := func(p string) string { return filepath.ToSlash(filepath.Join(rel, p)) }
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("copy %s: %w", show(p), err)
		}
		if p == "." {
			return nil
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			return os.Mkdir(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := root.Readlink(p)
			if err != nil {
				return fmt.Errorf("copy %s: %w", show(p), err)
			}
			// Root.Stat follows the link (and any links it goes
			// through) but refuses to leave the root.
			if _, err := root.Stat(p); err != nil {
				return fmt.Errorf("task file %s is a symbolic link to %q, which does not resolve inside the task directory: refused", show(p), link)
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(root, p, target, show(p))
		}
		return fmt.Errorf("copy %s: unsupported file type %v", show(p), d.Type())
	})
}

// linkError says in words that a path climbed out of its root.
func linkError(err error) error {
	if err != nil && strings.Contains(err.Error(), "escapes") {
		return errors.New("path goes through a symbolic link that leaves the registry directory or repository: refused")
	}
	return err
}

func copyFile(root *os.Root, name, dst, show string) error {
	in, err := root.OpenFile(name, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return fmt.Errorf("copy %s: %w", show, err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return fmt.Errorf("copy %s: %w", show, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("copy %s: not a regular file", show)
	}
	mode := fs.FileMode(0o644)
	if info.Mode().Perm()&0o111 != 0 {
		mode = 0o755
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", show, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	return nil
}

// Package fsblob is the blob.Store on a directory of files: the object with key
// "runs/r1/result.json" is the file <dir>/runs/r1/result.json. Writes go to a
// temporary file that is renamed into place, so a reader sees the old object
// or the new one, never a part. Files are not fsynced: a process crash loses
// nothing, a power loss may lose the newest objects (like the SQLite database,
// which runs with synchronous=NORMAL).
package fsblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
)

// tmpDir is the reserved top-level directory holding writes in progress.
const tmpDir = ".tmp"

// maxKeyBytes is S3's key limit, applied here too.
const maxKeyBytes = 1024

// Store keeps objects as files under a directory.
type Store struct{ dir string }

var _ blob.Store = (*Store)(nil)

// New returns a store rooted at dir, creating it (and its temp directory).
func New(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blob dir %q: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(abs, tmpDir), 0o750); err != nil {
		return nil, fmt.Errorf("create blob dir %q: %w", abs, err)
	}
	return &Store{dir: abs}, nil
}

// ValidKey reports why key is not a valid object key, or nil: keys are
// slash-separated relative paths of at most 1,024 bytes, without empty, "."
// or ".." segments, backslashes or NUL bytes, and not under the reserved
// ".tmp" directory.
func ValidKey(key string) error {
	switch {
	case key == "":
		return errors.New("blob key is empty")
	case len(key) > maxKeyBytes:
		return fmt.Errorf("blob key is %d bytes, more than %d", len(key), maxKeyBytes)
	case strings.ContainsAny(key, "\\\x00"):
		return fmt.Errorf("blob key %q contains a backslash or NUL byte", key)
	case strings.HasPrefix(key, "/"):
		return fmt.Errorf("blob key %q is absolute", key)
	}
	for i, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("blob key %q has an empty segment", key)
		case seg == "." || seg == "..":
			return fmt.Errorf("blob key %q has a %q segment", key, seg)
		case i == 0 && seg == tmpDir:
			return fmt.Errorf("blob key %q is under the reserved %s directory", key, tmpDir)
		}
	}
	return nil
}

func (s *Store) file(key string) string { return filepath.Join(s.dir, filepath.FromSlash(key)) }

// Put writes the object through a temporary file renamed over key. A
// write the full filesystem refused returns a *diskspace.Error naming the
// store's directory, and leaves no partial object.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("put blob: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put blob %q: %w", key, err)
	}
	if err := s.put(ctx, key, r); err != nil {
		return fmt.Errorf("put blob %q: %w", key, diskspace.Wrap(s.dir, err))
	}
	return nil
}

func (s *Store) put(ctx context.Context, key string, r io.Reader) error {
	dst := s.file(key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(s.dir, tmpDir), "put-*")
	if err != nil {
		return err
	}
	_, copyErr := io.Copy(tmp, readerWithContext{ctx, r})
	closeErr := tmp.Close()
	if err := errors.Join(copyErr, closeErr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// readerWithContext stops a copy once the context is done.
type readerWithContext struct {
	ctx context.Context
	r   io.Reader
}

func (r readerWithContext) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// Get opens the object, or returns blob.ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidKey(key); err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	f, err := os.Open(s.file(key))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("get blob %q: %w", key, blob.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get blob %q: %w", key, err)
	}
	if info, err := f.Stat(); err != nil || info.IsDir() {
		_ = f.Close()
		return nil, fmt.Errorf("get blob %q: %w", key, blob.ErrNotFound)
	}
	return f, nil
}

// Path returns the file that holds an existing object, for a local reader
// (the sandbox runner unpacks task bundles straight from it).
func (s *Store) Path(key string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", fmt.Errorf("blob path: %w", err)
	}
	info, err := os.Stat(s.file(key))
	if err != nil || !info.Mode().IsRegular() {
		return "", fmt.Errorf("blob path %q: %w", key, blob.ErrNotFound)
	}
	return s.file(key), nil
}

// List returns the objects whose keys start with prefix, sorted by key.
func (s *Store) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	if strings.ContainsAny(prefix, "\\\x00") || strings.HasPrefix(prefix, "/") || slices.Contains(strings.Split(prefix, "/"), "..") {
		return nil, fmt.Errorf("list blobs: prefix %q is not a key prefix", prefix)
	}
	// Walk only the deepest directory the prefix names.
	root := s.dir
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		root = s.file(prefix[:i])
	}
	var infos []blob.Info
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(s.dir, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if key == tmpDir || (key != "." && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/")) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		infos = append(infos, blob.Info{Key: key, Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list blobs under %q: %w", prefix, err)
	}
	slices.SortFunc(infos, func(a, b blob.Info) int { return strings.Compare(a.Key, b.Key) })
	return infos, nil
}

// Delete removes the object and any directories it leaves empty; a missing
// object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := ValidKey(key); err != nil {
		return fmt.Errorf("delete blob: %w", err)
	}
	info, err := os.Lstat(s.file(key))
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return nil
	case err != nil:
		return fmt.Errorf("delete blob %q: %w", key, err)
	case info.IsDir(): // a key prefix, not an object
		return nil
	}
	if err := os.Remove(s.file(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete blob %q: %w", key, err)
	}
	for dir := path.Dir(key); dir != "."; dir = path.Dir(dir) {
		if os.Remove(s.file(dir)) != nil {
			break // not empty (or already gone): stop climbing
		}
	}
	return nil
}

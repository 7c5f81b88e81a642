package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PrivateDirMode and PrivateFileMode are the modes of the data dir and of
// every file directly in it: the database holds token hashes and run data,
// the token file the operator's credential, the logs whatever the server
// logged. Nobody but the operator reads them.
const (
	PrivateDirMode  fs.FileMode = 0o700
	PrivateFileMode fs.FileMode = 0o600
)

// DatabaseFile is the SQLite database's name in the data dir.
const DatabaseFile = "gauntlet.db"

// SecureDataDir creates dir as PrivateDirMode (or tightens an existing one,
// made by an older version or by hand), tightens every regular file directly
// in it to PrivateFileMode, and creates the database file with that mode
// before SQLite does (SQLite gives its -wal and -shm files the database's
// mode, so they follow).
func SecureDataDir(dir string) error {
	if err := os.MkdirAll(dir, PrivateDirMode); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := os.Chmod(dir, PrivateDirMode); err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, DatabaseFile), os.O_RDONLY|os.O_CREATE, PrivateFileMode)
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	f.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		if info.Mode().Perm()&^PrivateFileMode != 0 {
			if err := os.Chmod(filepath.Join(dir, e.Name()), PrivateFileMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

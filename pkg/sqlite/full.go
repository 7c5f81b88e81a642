package sqlite

import (
	"errors"
	"path/filepath"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
)

// wrapFull turns a write that failed because the database's filesystem is
// full (SQLITE_FULL, or an ENOSPC seen by the VFS) into a *diskspace.Error
// naming the database's directory; other errors pass through.
func (db *DB) wrapFull(err error) error {
	if err == nil {
		return nil
	}
	dir := filepath.Dir(db.path)
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL {
		return &diskspace.Error{Dir: dir, Err: err}
	}
	return diskspace.Wrap(dir, err)
}

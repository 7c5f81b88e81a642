// Package diskspace owns the platform's out-of-storage condition: a write to
// the platform's own storage (its database, blobs, secrets, sandbox dirs)
// that failed because the filesystem is full, and a data dir whose free
// space is below the operator's floor. Both are conditions of the platform,
// not of the attempt or request that met them: slots wait for space without
// spending their retries, and the API answers 507 Insufficient Storage.
//
// A sandbox's own storage limit filling up is not this condition: the agent
// sees ENOSPC inside its sandbox, and the attempt is graded as usual. Only
// errors that the platform's storage adapters wrap (Wrap) are.
package diskspace

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Error reports that the platform's storage at Dir is out of space: a write
// failed with ENOSPC (or SQLITE_FULL), or the free space is below the floor.
type Error struct {
	// Dir is the directory whose filesystem is out of space.
	Dir string
	// FreeBytes and FloorBytes are the free space found and the floor it
	// is below; both 0 when a write failed (Err says how).
	FreeBytes  uint64
	FloorBytes uint64
	// Err is the failed write's error; nil for a free-space check.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("out of storage space in %s: %v", e.Dir, e.Err)
	}
	return fmt.Sprintf("out of storage space in %s: %s free, below the floor of %s", e.Dir, MB(e.FreeBytes), MB(e.FloorBytes))
}

// Unwrap returns the failed write's error.
func (e *Error) Unwrap() error { return e.Err }

// As returns the out-of-space error err wraps, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Wrap returns err wrapped in an *Error naming dir when it says the
// filesystem is full (ENOSPC, or EDQUOT for a quota) and is not wrapped
// already; any other error, and nil, it returns as it is. Storage adapters
// call it on their writes.
func Wrap(dir string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := As(err); ok {
		return err
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &Error{Dir: dir, Err: err}
	}
	return err
}

// Free is the space an unprivileged writer can still use on the filesystem
// holding dir, in bytes.
func Free(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// MB formats a byte count in mebibytes for logs and messages.
func MB(bytes uint64) string {
	return fmt.Sprintf("%.1f MB", float64(bytes)/(1<<20))
}

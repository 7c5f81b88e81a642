package localsandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gauntlet-bench/gauntlet/pkg/leftovers"
)

// ownerLockFile, in the data dir, is held (flock) by the process that
// recovered the sandboxes dir, for as long as its driver is open: the kernel
// drops it when that process dies, however it dies, so whoever gets it
// knows that every sandbox in the dir it did not launch itself is a
// leftover. It holds the holder's pid, for the message of the one that
// does not get it.
const ownerLockFile = "sandboxes.lock"

// ErrSandboxesInUse is returned by Recover when another live process holds
// the sandboxes dir: its sandboxes are running, and nothing is touched.
var ErrSandboxesInUse = errors.New("the sandboxes dir is in use by another live process")

// Recover ends what the sandboxes of an earlier, dead process on this data
// dir left behind — processes (a bubblewrap that had not started its phase
// outlives its runner), loop devices, mounts, sandbox dirs — and logs each
// (see package leftovers). The driver's own live sandboxes are never
// touched, and Launch waits while Recover runs. It first takes the data
// dir's owner lock and keeps it until Close; while another live process
// holds it, Recover touches nothing and returns ErrSandboxesInUse. Calling
// it again is harmless: it finds nothing left.
func (d *Driver) Recover(ctx context.Context) (leftovers.Report, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return leftovers.Report{}, errors.New("recover sandboxes: driver closed")
	}
	if d.owner == nil {
		f, err := lockOwner(filepath.Join(d.cfg.DataDir, ownerLockFile))
		if err != nil {
			return leftovers.Report{}, fmt.Errorf("recover sandboxes: %w", err)
		}
		d.owner = f
	}
	live := make(map[string]bool, len(d.live))
	for id := range d.live {
		live[id] = true
	}
	rep, err := leftovers.Reclaim(ctx, leftovers.Options{Dir: d.sandboxesDir(), Keep: func(id string) bool { return live[id] },
		Logger: d.log})
	if err != nil {
		return rep, fmt.Errorf("recover sandboxes: %w", err)
	}
	return rep, nil
}

// lockOwner takes the owner lock file without waiting and writes this
// process's pid into it.
func lockOwner(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s, held by pid %s)", ErrSandboxesInUse, path, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Only for another process's message: a failed write loses nothing.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

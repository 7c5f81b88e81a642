// Package leftovers ends what the sandboxes of a dead process left behind
// under one directory, whose subdirectories are one attempt each: the
// processes still tied to an attempt, the loop devices backed by its files,
// the mounts on its paths, and the attempt directories themselves.
//
// A platform killed with SIGKILL can leave all four. Its runners die with it
// (parent-death signal), but a process a runner started can outlive them:
// bubblewrap's sandbox init sets its own parent-death signal only once its
// setup is done, so one that was still waiting for bwrap's monitor to release
// it stays blocked forever, re-parented to init, ignoring SIGTERM as a PID
// namespace's init does. It holds a copy of the runner's mount namespace, so
// the attempt's overlay and quota filesystem stay mounted there and the loop
// device under that filesystem stays attached (autoclear waits for the last
// unmount). Nothing but a new process cleans that up: Reclaim.
package leftovers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// DefaultWait bounds how long Reclaim waits for killed processes to exit
// and for detached loop devices to be released.
const DefaultWait = 10 * time.Second

// Options say where to reclaim and what to leave alone.
type Options struct {
	// Dir holds one subdirectory per attempt (a sandbox's work dir).
	Dir string
	// Keep reports whether the attempt named id (a subdirectory of Dir) is
	// live: its processes, mounts, loop devices and directory are never
	// touched. nil keeps nothing.
	Keep func(id string) bool
	// Wait bounds the waits for processes to exit and loop devices to be
	// released (0 = DefaultWait).
	Wait   time.Duration
	Logger *slog.Logger
}

// Report counts what Reclaim ended.
type Report struct {
	Processes   int // processes killed
	Unmounted   int // mounts detached in the caller's mount namespace
	LoopDevices int // loop devices detached
	Dirs        int // attempt directories removed
}

// Empty reports whether nothing was left over.
func (r Report) Empty() bool { return r == Report{} }

// Reclaim kills every process tied to an attempt under opts.Dir that Keep
// does not keep — by its command line, working or root directory, or a
// mount of its mount namespace on an attempt's path, and with them their
// descendants and process-group members — waits for them to exit, unmounts
// what is still mounted under the attempts in the caller's namespace,
// detaches the loop devices whose backing file is an attempt's, and removes
// the attempt directories. Each is logged. Running it again finds nothing:
// it is idempotent. It must not race with starting new attempts in opts.Dir
// that Keep does not know of yet.
func Reclaim(ctx context.Context, opts Options) (Report, error) {
	if opts.Dir == "" {
		return Report{}, errors.New("reclaim leftovers: Dir is empty")
	}
	if opts.Keep == nil {
		opts.Keep = func(string) bool { return false }
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultWait
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return Report{}, fmt.Errorf("reclaim leftovers in %s: %w", opts.Dir, err)
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return Report{}, nil
	}
	r := &reclaimer{dir: dir, spellings: spellings(dir), keep: opts.Keep, wait: opts.Wait, log: opts.Logger}
	var rep Report
	var errs []error
	if rep.Processes, err = r.killProcesses(ctx); err != nil {
		errs = append(errs, err)
	}
	if rep.Unmounted, err = r.unmount(); err != nil {
		errs = append(errs, err)
	}
	if rep.LoopDevices, err = r.detachLoopDevices(ctx); err != nil {
		errs = append(errs, err)
	}
	if rep.Dirs, err = r.removeDirs(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return rep, fmt.Errorf("reclaim leftovers in %s: %w", dir, err)
	}
	return rep, nil
}

// reclaimer is one Reclaim call.
type reclaimer struct {
	dir string
	// spellings are the ways dir can appear in paths the kernel reports:
	// as given, and with its symlinks resolved.
	spellings []string
	keep      func(string) bool
	wait      time.Duration
	log       *slog.Logger
}

func spellings(dir string) []string {
	out := []string{filepath.Clean(dir)}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != out[0] {
		out = append(out, real)
	}
	return out
}

// attemptOfPath returns the attempt a path lies in: the first element below
// one of dir's spellings ("" when path is not below dir, or is dir itself).
func (r *reclaimer) attemptOfPath(path string) string {
	for _, d := range r.spellings {
		if rest, ok := strings.CutPrefix(path, d+"/"); ok {
			id, _, _ := strings.Cut(rest, "/")
			if id != "" && id != "." && id != ".." {
				return id
			}
		}
	}
	return ""
}

// pathSeparators end a path inside a command-line argument such as
// "lowerdir=/a,upperdir=/b" or "--bind=/a:/b".
const pathSeparators = ",:= "

// attemptOfArg returns the attempt a command-line argument names a path in:
// a path below dir that starts the argument or follows one of
// pathSeparators (so /x/<dir>/... is not mistaken for <dir>/...).
func (r *reclaimer) attemptOfArg(arg string) string {
	for _, d := range r.spellings {
		prefix := d + "/"
		for from := 0; ; {
			i := strings.Index(arg[from:], prefix)
			if i < 0 {
				break
			}
			at := from + i
			from = at + 1
			if at > 0 && !strings.ContainsRune(pathSeparators, rune(arg[at-1])) {
				continue
			}
			rest := arg[at+len(prefix):]
			if end := strings.IndexAny(rest, "/"+pathSeparators); end >= 0 {
				rest = rest[:end]
			}
			if rest != "" && rest != "." && rest != ".." {
				return rest
			}
		}
	}
	return ""
}

// sortedKeys returns m's keys in order (for stable logs).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package leftovers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// sysBlock lists the block devices; a bound loop device has loop/backing_file.
const sysBlock = "/sys/block"

// loopPollInterval is how often Reclaim looks whether the kernel has
// released a detached loop device.
const loopPollInterval = 20 * time.Millisecond

// detachLoopDevices clears every loop device whose backing file lies in an
// attempt that is not kept (LOOP_CLR_FD; on a device still in use the
// kernel turns that into autoclear at its last close) and waits until the
// kernel has released them: once the attempt's processes are gone, nothing
// should hold them.
func (r *reclaimer) detachLoopDevices(ctx context.Context) (int, error) {
	bound := r.attemptLoopDevices()
	if len(bound) == 0 {
		return 0, nil
	}
	var errs []error
	for _, name := range sortedKeys(bound) {
		if err := clearLoop(name); err != nil {
			errs = append(errs, fmt.Errorf("detach /dev/%s (%s): %w", name, bound[name], err))
			delete(bound, name)
			continue
		}
		r.log.Info("detached a leftover loop device", "device", "/dev/"+name, "backing_file", bound[name])
	}
	deadline := time.Now().Add(r.wait)
	tick := time.NewTicker(loopPollInterval)
	defer tick.Stop()
	for {
		held := 0
		for name, file := range bound {
			if backing, ok := loopBackingFile(name); ok && backing == file {
				held++
			}
		}
		if held == 0 {
			return len(bound), errors.Join(errs...)
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("%d loop devices of attempts still in use %s after LOOP_CLR_FD (a mount in a namespace no process of the attempts holds?)", held, r.wait))
			return len(bound) - held, errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return len(bound) - held, errors.Join(append(errs, ctx.Err())...)
		case <-tick.C:
		}
	}
}

// attemptLoopDevices returns the bound loop devices (by name, loopN) whose
// backing file lies in an attempt that is not kept, with that file.
func (r *reclaimer) attemptLoopDevices() map[string]string {
	out := map[string]string{}
	matches, _ := filepath.Glob(filepath.Join(sysBlock, "loop*"))
	for _, dev := range matches {
		name := filepath.Base(dev)
		file, ok := loopBackingFile(name)
		if !ok {
			continue
		}
		if id := r.attemptOfPath(file); id != "" && !r.keep(id) {
			out[name] = file
		}
	}
	return out
}

// loopBackingFile returns the path of the file loop device name is bound
// to (without the " (deleted)" the kernel appends once it is unlinked).
func loopBackingFile(name string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(sysBlock, name, "loop", "backing_file"))
	if err != nil {
		return "", false
	}
	file := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), " (deleted)")
	return file, file != ""
}

// clearLoop detaches loop device name from its backing file.
func clearLoop(name string) error {
	f, err := os.OpenFile("/dev/"+name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	err = unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0)
	if errors.Is(err, unix.ENXIO) {
		return nil // released meanwhile
	}
	return err
}

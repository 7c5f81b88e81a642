// Package slirp attaches slirp4netns, a user-mode network stack, to a
// network namespace: the namespace gets tap0 (10.0.2.100/24, gateway
// 10.0.2.2, DNS at DNS) and egress through the caller's own network, never
// the host's loopback. Image sandboxes (pkg/runner) and image builds' RUN
// steps (pkg/imagebuild) get their network from it.
package slirp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DNS is slirp4netns's DNS forwarder inside the namespace.
const DNS = "10.0.2.3"

// readyTimeout bounds how long slirp4netns may take to configure tap0.
const readyTimeout = 10 * time.Second

// Start attaches slirp4netns (the program bin) to the network namespace of
// pid with --disable-host-loopback (10.0.2.2 does not reach the host's
// 127.0.0.1) and returns once the device is up. stop ends it.
func Start(bin string, pid int) (stop func(), err error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	cmd := exec.Command(bin, "--configure", "--mtu=65520", "--disable-host-loopback", "--ready-fd=3",
		strconv.Itoa(pid), "tap0")
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		readyW.Close()
		return nil, fmt.Errorf("start slirp4netns: %w", err)
	}
	readyW.Close()
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	done := make(chan error, 1)
	go func() {
		_, err := readyR.Read(make([]byte, 1))
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(readyTimeout):
		err = errors.New("timed out")
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("slirp4netns did not come up: %v: %s", err, strings.TrimSpace(errBuf.String()))
	}
	return stop, nil
}

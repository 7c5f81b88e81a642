// Package testnetns gives tests a TCP server inside a network namespace
// the test makes itself (ip netns and a veth pair with private addresses):
// the only non-loopback address the tests send traffic to.
package testnetns

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Server runs a TCP server inside a network namespace the test makes
// (ip netns + a veth pair with private addresses): the only non-loopback
// address the tests ever send traffic to. It answers reply to every
// connection and returns its address.
func Server(t testing.TB, reply string) string {
	t.Helper()
	n := netnsCount.Add(1)
	name := fmt.Sprintf("gt%d-%d", os.Getpid()%100000, n)
	sub := (os.Getpid()*7+int(n))%200 + 20
	hostIP, nsIP := fmt.Sprintf("10.213.%d.1", sub), fmt.Sprintf("10.213.%d.2", sub)
	hostIf, nsIf := name+"h", name+"n"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s (iproute2 is needed: apt-get install iproute2)", args, err, out)
		}
	}
	_ = exec.Command("ip", "netns", "del", name).Run()
	run("netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	run("link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostIf).Run() })
	run("link", "set", nsIf, "netns", name)
	run("addr", "add", hostIP+"/30", "dev", hostIf)
	run("link", "set", hostIf, "up")
	run("-n", name, "addr", "add", nsIP+"/30", "dev", nsIf)
	run("-n", name, "link", "set", nsIf, "up")
	run("-n", name, "link", "set", "lo", "up")

	lnCh := make(chan net.Listener, 1)
	errCh := make(chan error, 1)
	go func() {
		// The thread enters the namespace, listens and goes back. It must
		// not die: a child forked from it with Pdeathsig (a test's
		// in-process bwrap) would be killed with it.
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errCh <- err
			return
		}
		defer self.Close()
		fd, err := os.Open("/run/netns/" + name)
		if err != nil {
			runtime.UnlockOSThread()
			errCh <- err
			return
		}
		defer fd.Close()
		if err := unix.Setns(int(fd.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errCh <- err
			return
		}
		ln, err := net.Listen("tcp", nsIP+":0")
		if back := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); back != nil {
			err = fmt.Errorf("return to the test's network namespace: %w", back)
			if ln != nil {
				ln.Close()
			}
			errCh <- err
			select {} // stuck in the namespace: park, never reuse the thread
		}
		runtime.UnlockOSThread()
		if err != nil {
			errCh <- err
			return
		}
		lnCh <- ln
	}()
	var ln net.Listener
	select {
	case ln = <-lnCh:
	case err := <-errCh:
		t.Fatalf("server in netns %s: %v", name, err)
	}
	t.Cleanup(func() { ln.Close() })
	go Serve(ln, reply)
	return ln.Addr().String()
}

var netnsCount atomic.Int32

// Serve answers reply and a newline to every connection on ln until it is
// closed.
func Serve(ln net.Listener, reply string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte(reply + "\n"))
		c.Close()
	}
}

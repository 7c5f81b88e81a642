package runner

import (
	"bufio"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// TestListenInNetnsKeepsTheChildrenOfItsThreadAlive: Linux sends a child's
// Pdeathsig when the thread that forked it exits, and every phase's bwrap
// has Pdeathsig SIGKILL. Entering a sandbox's network for the egress proxy
// must therefore never retire a thread: before, the locked goroutine ended
// locked and its thread died, killing whatever bwrap had been forked from
// it (CI: an allowlist phase's agent "exited with code -1").
func TestListenInNetnsKeepsTheChildrenOfItsThreadAlive(t *testing.T) {
	// unshare execs the shell only once the new namespace is made: its
	// first line says the target is in it.
	target := exec.Command("unshare", "--net", "sh", "-c", "echo ready; exec sleep 120")
	out, err := target.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = target.Process.Kill(); _ = target.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the target did not enter its own network namespace: %q, %v", line, err)
	}
	// Children forked from many threads, as phases are.
	var mu sync.Mutex
	var children []*exec.Cmd
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			c := exec.Command("sleep", "120")
			c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := c.Start(); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			children = append(children, c)
			mu.Unlock()
		})
	}
	wg.Wait()
	defer func() {
		for _, c := range children {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	for i := range 24 {
		ln, err := listenInNetns(target.Process.Pid, "127.0.0.1:"+strconv.Itoa(20000+i))
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
	}
	// Each call waited for its goroutine, which (before) retired its
	// thread right after: those children would be dead by now.
	for _, c := range children {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(c.Process.Pid, &ws, syscall.WNOHANG, nil)
		if err == nil && pid == c.Process.Pid {
			t.Errorf("child %d died (%v) while the egress proxy entered the sandbox's network", pid, ws.Signal())
		}
	}
}

package runner

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// podInitCommand is the runner's helper that is pid 1 of an image
// sandbox's pod (bwrap --as-pid-1): it holds the trial's namespaces open
// between phases and reaps whatever the phases leave behind.
const podInitCommand = "pod-init"

// podInit is pid 1 of a pod. It keeps no capability (bwrap gave it none)
// and does nothing but reap: a phase's background processes are re-parented
// to it when their parents exit, as a container's are to its init. Every
// signal is taken and dropped: a process of the pod may send pid 1 only
// the signals it handles, so without the handlers a `kill -TERM 1` would
// be dropped by the kernel anyway, but the Go runtime's own handlers would
// act on some (SIGTERM, SIGQUIT, SIGABRT) and end the pod. SIGKILL from the
// runner (outside the pod's PID namespace) is what ends it, and with it
// every process of the namespace.
func podInit(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet(podInitCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	readyFD := fs.Int("ready-fd", -1, "write one byte to this fd (and close it) once pid 1 is set up")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: sandbox-runner pod-init [--ready-fd N]")
		return 127
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(stderr, "sandbox-runner pod-init: not pid 1 of a PID namespace")
		return 127
	}
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs)
	if *readyFD >= 0 {
		ready := os.NewFile(uintptr(*readyFD), "ready")
		_, _ = ready.Write([]byte{1})
		ready.Close()
	}
	for {
		reapOrphans()
		<-sigs
	}
}

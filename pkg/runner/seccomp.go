package runner

import (
	"fmt"
	"os"
	"sync"

	"github.com/gauntlet-bench/gauntlet/pkg/confine"
)

// The sandbox's seccomp filter, installed by bwrap (--seccomp) right
// before the phase's command: Docker's default profile for a container
// with Docker's default capabilities (pkg/confine), the one profile for
// every phase, whatever its user, as Docker derives it from the
// container's bounding set. Among what it refuses: mount, unshare and
// setns, clone with a namespace flag (a user namespace would hand its
// creator every capability over the namespaces it then makes), keyctl,
// bpf, perf_event_open, kexec and module loading; clone3 gets ENOSYS so
// libc falls back to clone. Syscalls of a foreign ABI (i386, x32) are
// refused.
var seccompProgram = sync.OnceValues(func() ([]byte, error) {
	return confine.SeccompProgram(confine.DockerCapabilities)
})

// seccompFile returns a pipe's read end holding the filter, for bwrap's
// --seccomp fd (the filter, a few kB, is far below a pipe's buffer).
func seccompFile() (*os.File, error) {
	prog, err := seccompProgram()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	defer w.Close()
	if _, err := w.Write(prog); err != nil {
		r.Close()
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	return r, nil
}

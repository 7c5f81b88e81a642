package runner

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// drainedOutput is a phase's stdout and stderr as pipes the runner copies
// from until every writer has closed them (the phase and anything it left
// running), not only until the phase's own process exits.
type drainedOutput struct {
	stdoutW, stderrW *os.File
	readers          []*os.File
	done             sync.WaitGroup
}

func newDrainedOutput(stdout, stderr io.Writer) (*drainedOutput, error) {
	d := &drainedOutput{}
	for _, w := range []io.Writer{stdout, stderr} {
		r, pw, err := os.Pipe()
		if err != nil {
			closeFiles(d.readers...)
			closeFiles(d.stdoutW, d.stderrW)
			return nil, fmt.Errorf("output pipes: %w", err)
		}
		d.readers = append(d.readers, r)
		if d.stdoutW == nil {
			d.stdoutW = pw
		} else {
			d.stderrW = pw
		}
		d.done.Go(func() {
			_, _ = io.Copy(w, r)
			r.Close()
		})
	}
	return d, nil
}

// started closes the runner's copies of the write ends once the process
// has them.
func (d *drainedOutput) started() { closeFiles(d.stdoutW, d.stderrW) }

// wait gives the copies up to waitDelay to reach the end of the output:
// what the phase wrote before it exited is in the files then, unless a
// process it left running still holds the pipes, whose later output the
// copies keep writing (within the files' caps) until the pod ends.
func (d *drainedOutput) wait() {
	done := make(chan struct{})
	go func() {
		d.done.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(waitDelay):
	}
}

package image

import (
	"io"
	"sync"
)

// Progress reports a pull's advance: Phase "download" counts compressed
// bytes fetched, "unpack" compressed bytes applied; Total is the phase's
// whole, and Done is set on the phase's last report.
type Progress struct {
	Phase    string
	Complete int64
	Total    int64
	Done     bool
}

type progressCounter struct {
	mu    sync.Mutex
	fn    func(Progress)
	phase string
	n     int64
	total int64
}

func newProgressCounter(fn func(Progress), phase string, total int64) *progressCounter {
	return &progressCounter{fn: fn, phase: phase, total: total}
}

func (c *progressCounter) add(k int64) {
	if c == nil || c.fn == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += k
	c.fn(Progress{Phase: c.phase, Complete: c.n, Total: c.total})
}

func (c *progressCounter) done() {
	if c == nil || c.fn == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fn(Progress{Phase: c.phase, Complete: c.total, Total: c.total, Done: true})
}

type countingReader struct {
	r   io.Reader
	add func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.add(int64(n))
	}
	return n, err
}

package diskspace

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Monitor watches the free space of the filesystem holding a data dir
// against a floor: below it the platform launches no sandbox. It also
// remembers when the filesystem was last full (a sample found less than
// FullBytes free, or a write failed for want of space), so an attempt that
// ran while it was can be told apart from one that failed by itself. Safe
// for concurrent use.
type Monitor struct {
	dir   string
	floor uint64
	log   *slog.Logger

	mu       sync.Mutex
	lastFull time.Time // the last time the filesystem was found full
}

// FullBytes is the free space below which a filesystem counts as full:
// less than any attempt writes.
const FullBytes = 1 << 20

// NewMonitor returns a monitor of dir's filesystem with a floor of
// floorBytes (0: no floor; only failed writes mark space short).
func NewMonitor(dir string, floorBytes uint64, log *slog.Logger) *Monitor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Monitor{dir: dir, floor: floorBytes, log: log}
}

// Dir is the watched directory.
func (m *Monitor) Dir() string { return m.dir }

// Floor is the free space below which Check fails, in bytes.
func (m *Monitor) Floor() uint64 { return m.floor }

// Check samples the free space: nil at or above the floor, an *Error with
// the free space and the floor below it, another error when the free space
// cannot be read.
func (m *Monitor) Check() error {
	free, err := Free(m.dir)
	if err != nil {
		return err
	}
	if free < FullBytes {
		m.mu.Lock()
		m.lastFull = time.Now()
		m.mu.Unlock()
	}
	if free >= m.floor {
		return nil
	}
	return &Error{Dir: m.dir, FreeBytes: free, FloorBytes: m.floor}
}

// Note records err when it is a write that failed for want of space: the
// filesystem was full now, whatever a sample says a moment later.
func (m *Monitor) Note(err error) {
	if e, ok := As(err); !ok || e.Err == nil {
		return
	}
	m.mu.Lock()
	m.lastFull = time.Now()
	m.mu.Unlock()
}

// FullSince reports whether the filesystem was full at any sample or noted
// failure since t, sampling once more now.
func (m *Monitor) FullSince(t time.Time) bool {
	_ = m.Check() // an unreadable filesystem says nothing either way
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.lastFull.Before(t)
}

// Wait returns once the free space is at or above the floor (sampling every
// interval), or with ctx's error.
func (m *Monitor) Wait(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := m.Check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// lowLogEvery is how often Run repeats its warning while space stays short.
const lowLogEvery = time.Minute

// Run samples the free space every interval until ctx ends, logging it at
// the start, whenever it crosses the floor, and every lowLogEvery while it
// stays below.
func (m *Monitor) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var wasLow bool
	var warned time.Time
	for first := true; ; first = false {
		err := m.Check()
		e, short := As(err)
		switch {
		case err != nil && !short:
			m.log.ErrorContext(ctx, "data dir free space unreadable", "data_dir", m.dir, "err", err)
		case short && (!wasLow || time.Since(warned) >= lowLogEvery):
			m.log.WarnContext(ctx, "data dir is below its free-space floor: no sandbox launches until space returns; slots wait without spending retries",
				"data_dir", m.dir, "free", MB(e.FreeBytes), "floor", MB(m.floor))
			wasLow, warned = true, time.Now()
		case !short && (wasLow || first):
			msg := "data dir free space"
			if wasLow {
				msg = "data dir free space is back above the floor; launches resume"
			}
			free, _ := Free(m.dir)
			m.log.InfoContext(ctx, msg, "data_dir", m.dir, "free", MB(free), "floor", MB(m.floor))
			wasLow = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

package benchsync

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"
)

// logFlushEvery is how often a running build's log is stored, so that it
// can be read and followed while the build runs.
const logFlushEvery = time.Second

// streamLog stores log under key now (empty: the build has started) and
// then every logFlushEvery while it grows, until stop is called; the
// caller stores the final log after stop. A failed write is logged and
// tried again at the next tick: the build does not depend on its readers.
func (s *fetcher) streamLog(ctx context.Context, key string, log *tailBuffer) (stop func()) {
	ctx = context.WithoutCancel(ctx)
	if err := s.blobs.Put(ctx, key, bytes.NewReader(nil)); err != nil {
		s.log.WarnContext(ctx, "store the start of a build log", "key", key, "err", err)
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(logFlushEvery)
		defer t.Stop()
		var stored int64
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			b, written := log.snapshot()
			if written == stored {
				continue
			}
			if err := s.blobs.Put(ctx, key, bytes.NewReader(b)); err != nil {
				s.log.WarnContext(ctx, "store a running build's log", "key", key, "err", err)
				continue
			}
			stored = written
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// errRemoved is the cause of a sync or refresh cancelled because its
// benchmark was removed.
var errRemoved = errors.New("benchmark removed")

// inflight tracks the syncs and refreshes this process runs, so that
// removing a benchmark cancels its builds at once (and waits for them to
// stop) instead of letting them run to their end.
type inflight struct {
	mu   sync.Mutex
	runs map[string]map[*inflightRun]struct{}
}

type inflightRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// start registers work on the benchmark ws/key and returns its context
// and the function that ends the registration (call it once the work has
// returned).
func (f *inflight) start(ctx context.Context, ws, key string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &inflightRun{cancel: cancel, done: make(chan struct{})}
	id := ws + "\x00" + key
	f.mu.Lock()
	if f.runs == nil {
		f.runs = map[string]map[*inflightRun]struct{}{}
	}
	if f.runs[id] == nil {
		f.runs[id] = map[*inflightRun]struct{}{}
	}
	f.runs[id][r] = struct{}{}
	f.mu.Unlock()
	return ctx, func() {
		cancel(nil)
		f.mu.Lock()
		delete(f.runs[id], r)
		if len(f.runs[id]) == 0 {
			delete(f.runs, id)
		}
		f.mu.Unlock()
		close(r.done)
	}
}

// cancel cancels the work on ws/key with cause and waits until it has
// returned or ctx ends; it returns how many it cancelled.
func (f *inflight) cancel(ctx context.Context, ws, key string, cause error) int {
	f.mu.Lock()
	var runs []*inflightRun
	for r := range f.runs[ws+"\x00"+key] {
		runs = append(runs, r)
	}
	f.mu.Unlock()
	for _, r := range runs {
		r.cancel(cause)
	}
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
		}
	}
	return len(runs)
}

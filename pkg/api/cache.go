package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Rendered answers are cached briefly: the leaderboard, run, run-list and
// result-list documents are read far more often than they change (a
// leaderboard changes when a run finishes, a finished run never, a run's
// results only when one is added), and rendering them means decoding large
// stored items: a page of runs decodes fifty run records with their task
// lists, ≈ 8 ms of CPU for 500-task runs, so uncached list routes queued
// every other read behind them under load (docs/BENCHMARKS.md, HTTP API).
// Each entry remembers the workspace it belongs to, so a cached answer is
// only ever served to its own workspace.
const (
	// liveTTL bounds how stale a cached answer of something that may still
	// change can be.
	liveTTL = time.Second
	// maxStale bounds how long past its expiry an answer may still be served
	// while its successor renders; an older one is rendered afresh first, so
	// a reader never gets an answer from long ago.
	maxStale = liveTTL
	// maxCachedAnswers and maxCachedBytes bound the cache; a full cache is
	// emptied. List pages are tens of KB each, so the byte bound is the one
	// a client paging through many cursors meets first.
	maxCachedAnswers = 4096
	maxCachedBytes   = 64 << 20
)

type cachedAnswer struct {
	workspace string
	version   string
	body      []byte
	expires   time.Time // zero: never (the answer cannot change)
}

type answerCache struct {
	mu      sync.Mutex
	answers map[string]cachedAnswer
	bytes   int // bodies held in answers
	// epoch counts forgets: a render that started before one is not stored,
	// nor joined by a request that came after it, since it may predate the
	// change the forget is for.
	epoch uint64
	// renders makes concurrent misses of one answer render it once.
	renders singleflight.Group
}

// answer returns the cached answer of key for the workspace, rendering it
// once however many requests miss at the same time. An expired answer is
// served while one request renders its successor, so readers never queue
// behind a refresh. render returns the body and when it expires (zero:
// never); it must not depend on the cancellation of any one request.
func (c *answerCache) answer(key, workspace string, now time.Time, render func() ([]byte, time.Time, error)) ([]byte, error) {
	return c.answerVersion(key, workspace, "", now, render)
}

// answerVersion is answer for a view whose stored state has a cheap
// version (a run's counters for its results): a cached answer of another
// version is never served, not even stale, and requests only share a
// render of their own version. The caller reads the version before the
// render reads the state, so the answer covers at least what that version
// says.
func (c *answerCache) answerVersion(key, workspace, version string, now time.Time, render func() ([]byte, time.Time, error)) ([]byte, error) {
	key = workspace + "\x00" + key
	body, fresh, found := c.get(key, workspace, version, now)
	if fresh {
		return body, nil
	}
	epoch := c.currentEpoch()
	flight := fmt.Sprintf("%s\x00%d\x00%s", key, epoch, version)
	ch := c.renders.DoChan(flight, func() (any, error) {
		body, expires, err := render()
		if err != nil {
			return nil, err
		}
		c.putIf(epoch, key, workspace, version, body, expires)
		return body, nil
	})
	if found {
		return body, nil // stale, and being refreshed
	}
	res := <-ch
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Val.([]byte), nil
}

// get returns the workspace's cached answer of key at version, whether it
// is still fresh, and whether there is one at all.
func (c *answerCache) get(key, workspace, version string, now time.Time) (body []byte, fresh, found bool) {
	c.mu.Lock()
	a, ok := c.answers[key]
	c.mu.Unlock()
	if !ok || a.workspace != workspace || a.version != version {
		return nil, false, false
	}
	if a.expires.IsZero() || !now.After(a.expires) {
		return a.body, true, true
	}
	if now.After(a.expires.Add(maxStale)) {
		return nil, false, false
	}
	return a.body, false, true
}

// forget drops the workspace's cached answer of key, after a request of
// that workspace changed what it says (a stop): the next read renders it
// afresh instead of serving, or joining the render of, the answer from
// before the change, so a client never sees the run step back.
//
// Bumping the epoch is what keeps later requests out of a render already
// under way: the epoch is part of the render's singleflight key.
func (c *answerCache) forget(key, workspace string) {
	key = workspace + "\x00" + key
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(key)
	c.epoch++
}

// forgetPrefix is forget for every answer of the workspace whose key starts
// with prefix (every page of a list).
func (c *answerCache) forgetPrefix(prefix, workspace string) {
	prefix = workspace + "\x00" + prefix
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.answers {
		if strings.HasPrefix(key, prefix) {
			c.drop(key)
		}
	}
	c.epoch++
}

// drop removes one answer; c.mu is held.
func (c *answerCache) drop(key string) {
	if a, ok := c.answers[key]; ok {
		c.bytes -= len(a.body)
		delete(c.answers, key)
	}
}

func (c *answerCache) currentEpoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// putIf stores an answer rendered since epoch, unless a forget came since.
func (c *answerCache) putIf(epoch uint64, key, workspace, version string, body []byte, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	c.drop(key)
	if c.answers == nil || len(c.answers) >= maxCachedAnswers || c.bytes+len(body) > maxCachedBytes {
		c.answers = map[string]cachedAnswer{}
		c.bytes = 0
	}
	c.answers[key] = cachedAnswer{workspace: workspace, version: version, body: body, expires: expires}
	c.bytes += len(body)
}

// render encodes v as the JSON writeJSON would send.
func render(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeCached sends a cached or freshly rendered JSON answer.
func writeCached(w http.ResponseWriter, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(body)
	return err
}

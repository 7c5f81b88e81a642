package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Rendered answers are cached briefly: the leaderboard and run documents
// are read far more often than they change (a leaderboard changes when a
// run finishes, a finished run never), and rendering them means decoding
// large stored items. Each entry remembers the workspace it belongs to, so
// a cached answer is only ever served to its own workspace.
const (
	// liveTTL bounds how stale a cached answer of something that may still
	// change can be.
	liveTTL = time.Second
	// maxStale bounds how long past its expiry an answer may still be served
	// while its successor renders; an older one is rendered afresh first, so
	// a reader never gets an answer from long ago.
	maxStale = liveTTL
	// maxCachedAnswers bounds the cache; a full cache is emptied.
	maxCachedAnswers = 4096
)

type cachedAnswer struct {
	workspace string
	body      []byte
	expires   time.Time // zero: never (the answer cannot change)
}

type answerCache struct {
	mu      sync.Mutex
	answers map[string]cachedAnswer
	// epoch counts forgets: a render that started before one is not stored,
	// since it may predate the change the forget is for.
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
	key = workspace + "\x00" + key
	body, fresh, found := c.get(key, workspace, now)
	if fresh {
		return body, nil
	}
	ch := c.renders.DoChan(key, func() (any, error) {
		epoch := c.currentEpoch()
		body, expires, err := render()
		if err != nil {
			return nil, err
		}
		c.putIf(epoch, key, workspace, body, expires)
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

// get returns the workspace's cached answer of key, whether it is still
// fresh, and whether there is one at all.
func (c *answerCache) get(key, workspace string, now time.Time) (body []byte, fresh, found bool) {
	c.mu.Lock()
	a, ok := c.answers[key]
	c.mu.Unlock()
	if !ok || a.workspace != workspace {
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
func (c *answerCache) forget(key, workspace string) {
	key = workspace + "\x00" + key
	c.mu.Lock()
	delete(c.answers, key)
	c.epoch++
	c.mu.Unlock()
	c.renders.Forget(key)
}

func (c *answerCache) currentEpoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// putIf stores an answer rendered since epoch, unless a forget came since.
func (c *answerCache) putIf(epoch uint64, key, workspace string, body []byte, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	if c.answers == nil || len(c.answers) >= maxCachedAnswers {
		c.answers = map[string]cachedAnswer{}
	}
	c.answers[key] = cachedAnswer{workspace: workspace, body: body, expires: expires}
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

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
		body, expires, err := render()
		if err != nil {
			return nil, err
		}
		c.put(key, workspace, body, expires)
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
	return a.body, a.expires.IsZero() || !now.After(a.expires), true
}

func (c *answerCache) put(key, workspace string, body []byte, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
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

package api

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestAnswerCacheVersions: an answer of another version is never served,
// not even stale, and a request does not join the render of an older
// version.
func TestAnswerCacheVersions(t *testing.T) {
	var c answerCache
	now := time.Unix(1000, 0)
	var renders atomic.Int32 // a stale answer's refresh renders in the background
	get := func(version string, at time.Time, body string) string {
		t.Helper()
		b, err := c.answerVersion("results", "ws", version, at, func() ([]byte, time.Time, error) {
			renders.Add(1)
			return []byte(body), at.Add(liveTTL), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := get("v1", now, "page1"); got != "page1" || renders.Load() != 1 {
		t.Fatalf("first answer = %q after %d renders, want page1 after 1", got, renders.Load())
	}
	if got := get("v1", now.Add(liveTTL/2), "other"); got != "page1" || renders.Load() != 1 {
		t.Errorf("same version within its TTL = %q after %d renders, want cached page1", got, renders.Load())
	}
	if got := get("v2", now.Add(liveTTL/2), "page2"); got != "page2" || renders.Load() != 2 {
		t.Errorf("new version within the old one's TTL = %q after %d renders, want a fresh page2", got, renders.Load())
	}
	// Expired, at the cached version: served stale while one render
	// refreshes it; at another version: rendered first.
	if got := get("v2", now.Add(liveTTL+liveTTL/2), "page2b"); got != "page2" {
		t.Errorf("expired answer at its version = %q, want stale page2", got)
	}
	if got := get("v3", now.Add(liveTTL+liveTTL/2), "page3"); got != "page3" {
		t.Errorf("expired answer at a newer version = %q, want the fresh page3", got)
	}

	// A render of v1 in flight is not joined by a request at v2.
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan string)
	go func() {
		b, _ := c.answerVersion("slow", "ws", "v1", now, func() ([]byte, time.Time, error) {
			close(started)
			<-release
			return []byte("old"), now.Add(liveTTL), nil
		})
		done <- string(b)
	}()
	<-started
	b, err := c.answerVersion("slow", "ws", "v2", now, func() ([]byte, time.Time, error) {
		return []byte("new"), now.Add(liveTTL), nil
	})
	close(release)
	if err != nil || string(b) != "new" {
		t.Errorf("request at v2 during a v1 render = %q, %v; want its own render new", b, err)
	}
	if got := <-done; got != "old" {
		t.Errorf("the v1 render answered %q, want old", got)
	}
}

// TestAnswerCacheForgetPrefix: forgetting a list drops every page of it in
// that workspace, and nothing else.
func TestAnswerCacheForgetPrefix(t *testing.T) {
	var c answerCache
	now := time.Unix(1000, 0)
	get := func(key, ws, body string) string {
		t.Helper()
		b, err := c.answer(key, ws, now, func() ([]byte, time.Time, error) { return []byte(body), now.Add(time.Hour), nil })
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, k := range []string{runListKey, runListKey + "limit=5", runListKey + "cursor=x", "run\x00r-1"} {
		get(k, "ws", "old")
		get(k, "other", "old")
	}
	c.forgetPrefix(runListKey, "ws")
	for _, k := range []string{runListKey, runListKey + "limit=5", runListKey + "cursor=x"} {
		if got := get(k, "ws", "new"); got != "new" {
			t.Errorf("page %q after forgetting the list = %q, want new", k, got)
		}
		if got := get(k, "other", "new"); got != "old" {
			t.Errorf("another workspace's page %q = %q, want its cached old", k, got)
		}
	}
	if got := get("run\x00r-1", "ws", "new"); got != "old" {
		t.Errorf("run detail after forgetting the run list = %q, want its cached old", got)
	}
}

// TestAnswerCacheByteBound: the cache never holds more than maxCachedBytes
// of bodies.
func TestAnswerCacheByteBound(t *testing.T) {
	var c answerCache
	now := time.Unix(1000, 0)
	body := make([]byte, maxCachedBytes/3+1) // shared: the test allocates one
	for i := range 10 {
		key := string(rune('a' + i))
		if _, err := c.answer(key, "ws", now, func() ([]byte, time.Time, error) { return body, now.Add(time.Hour), nil }); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		n, held := len(c.answers), c.bytes
		c.mu.Unlock()
		if held > maxCachedBytes || held != n*len(body) || n == 0 {
			t.Fatalf("after %d answers the cache holds %d bodies, %d bytes (bound %d)", i+1, n, held, maxCachedBytes)
		}
	}
	// Replacing an answer counts its size once.
	c.forget("a", "ws")
	c.mu.Lock()
	n, held := len(c.answers), c.bytes
	c.mu.Unlock()
	if held != n*len(body) {
		t.Errorf("after a forget the cache counts %d bytes for %d bodies of %d", held, n, len(body))
	}
}

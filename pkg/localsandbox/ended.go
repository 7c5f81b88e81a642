package localsandbox

import (
	"container/list"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// endedSet remembers recently ended sandboxes, oldest first, up to max
// entries and for at most retention; older ones are forgotten as new ones
// end or are looked up. It is not safe for concurrent use (the driver's
// mutex guards it).
type endedSet struct {
	max       int
	retention time.Duration
	order     *list.List               // of endedEntry, oldest first
	byID      map[string]*list.Element // sandbox id → element of order
}

type endedEntry struct {
	handle sandbox.Handle
	at     time.Time
}

func newEndedSet(max int, retention time.Duration) endedSet {
	return endedSet{max: max, retention: retention, order: list.New(), byID: map[string]*list.Element{}}
}

// add remembers h as ended at now.
func (s *endedSet) add(h sandbox.Handle, now time.Time) {
	if el, ok := s.byID[h.ID]; ok {
		s.order.Remove(el)
	}
	s.byID[h.ID] = s.order.PushBack(endedEntry{handle: h, at: now})
	s.evict(now)
}

// get returns the remembered handle of sandbox id.
func (s *endedSet) get(id string, now time.Time) (sandbox.Handle, bool) {
	s.evict(now)
	el, ok := s.byID[id]
	if !ok {
		return sandbox.Handle{}, false
	}
	return el.Value.(endedEntry).handle, true
}

// len is how many ended sandboxes are remembered.
func (s *endedSet) len() int { return s.order.Len() }

func (s *endedSet) evict(now time.Time) {
	for front := s.order.Front(); front != nil; front = s.order.Front() {
		e := front.Value.(endedEntry)
		if s.order.Len() <= s.max && now.Sub(e.at) <= s.retention {
			return
		}
		s.order.Remove(front)
		delete(s.byID, e.handle.ID)
	}
}

// Package queuetest is the contract suite for the queue port, in the manner of
// testing/fstest.TestFS: the SQLite queue and the SQS adapter both call Run.
// Durations are whole seconds (SQS's granularity) and the tests run in
// parallel, so the suite takes a few seconds against any adapter.
package queuetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

// NewQueues returns a fresh, empty queue for one test and its dead-letter
// queue. With maxReceives > 0, a message received maxReceives times moves to
// dlq on its next receive; with 0, dlq may be nil.
type NewQueues func(t *testing.T, maxReceives int) (q, dlq queue.Queue)

// Run runs the queue contract.
func Run(t *testing.T, newQueues NewQueues) {
	tests := []struct {
		name string
		run  func(t *testing.T, newQueues NewQueues)
	}{
		{"SendReceiveDelete", testSendReceiveDelete},
		{"VisibilityExpiry", testVisibilityExpiry},
		{"Delay", testDelay},
		{"ChangeVisibility", testChangeVisibility},
		{"DeadLetter", testDeadLetter},
		{"BatchOver10", testBatchOver10},
		{"ConcurrentReceivers", testConcurrentReceivers},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newQueues)
		})
	}
}

const (
	hidden = 30 * time.Second // a visibility no test outlasts
	second = time.Second
)

func send(t *testing.T, q queue.Queue, bodies ...string) {
	t.Helper()
	msgs := make([]queue.Outgoing, len(bodies))
	for i, b := range bodies {
		msgs[i] = queue.Outgoing{Body: []byte(b)}
	}
	if err := q.Send(t.Context(), msgs...); err != nil {
		t.Fatalf("Send(%d messages) = %v", len(msgs), err)
	}
}

// collect receives until it has n messages or within passes.
func collect(t *testing.T, q queue.Queue, n int, visibility, within time.Duration) []queue.Message {
	t.Helper()
	var got []queue.Message
	deadline := time.Now().Add(within)
	for len(got) < n && time.Now().Before(deadline) {
		msgs, err := q.Receive(t.Context(), queue.MaxBatch, visibility, second)
		if err != nil {
			t.Fatalf("Receive = %v", err)
		}
		got = append(got, msgs...)
	}
	return got
}

func bodies(msgs []queue.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Body)
	}
	slices.Sort(out)
	return out
}

func wantNothing(t *testing.T, q queue.Queue, wait time.Duration, why string) {
	t.Helper()
	msgs, err := q.Receive(t.Context(), queue.MaxBatch, hidden, wait)
	if err != nil {
		t.Fatalf("Receive = %v", err)
	}
	if len(msgs) > 0 {
		t.Errorf("Receive returned %q; want nothing: %s", bodies(msgs), why)
	}
}

func deleteAll(t *testing.T, q queue.Queue, msgs []queue.Message) {
	t.Helper()
	for _, m := range msgs {
		if err := q.Delete(t.Context(), m.Receipt); err != nil {
			t.Fatalf("Delete(%q) = %v", m.Receipt, err)
		}
	}
}

func testSendReceiveDelete(t *testing.T, newQueues NewQueues) {
	q, _ := newQueues(t, 0)
	before := time.Now()
	send(t, q, "a", "b", "c")
	got := collect(t, q, 3, hidden, 5*second)
	if diff := cmp.Diff([]string{"a", "b", "c"}, bodies(got)); diff != "" {
		t.Fatalf("received bodies (-want +got):\n%s", diff)
	}
	ids := map[string]bool{}
	for _, m := range got {
		if m.ID == "" || ids[m.ID] || m.Receipt == "" || m.ReceiveCount != 1 {
			t.Errorf("message %+v: want a unique ID, a receipt and ReceiveCount 1", m)
		}
		ids[m.ID] = true
		if m.SentAt.Before(before.Add(-5*second)) || m.SentAt.After(time.Now().Add(5*second)) {
			t.Errorf("message %s SentAt %v is not near the send at %v", m.ID, m.SentAt, before)
		}
	}
	deleteAll(t, q, got)
	wantNothing(t, q, 0, "every message is in flight or deleted")
}

// testVisibilityExpiry: an undeleted message comes back with ReceiveCount 2
// and a new receipt; a deleted one does not; a stale receipt is harmless.
func testVisibilityExpiry(t *testing.T, newQueues NewQueues) {
	q, _ := newQueues(t, 0)
	send(t, q, "deleted", "kept")
	first := collect(t, q, 2, second, 5*second)
	if len(first) != 2 {
		t.Fatalf("received %d messages, want 2", len(first))
	}
	var stale queue.Message
	for _, m := range first {
		if string(m.Body) == "deleted" {
			deleteAll(t, q, []queue.Message{m})
		} else {
			stale = m
		}
	}
	again := collect(t, q, 1, hidden, 5*second)
	if len(again) != 1 || string(again[0].Body) != "kept" || again[0].ReceiveCount != 2 ||
		again[0].ID != stale.ID || again[0].Receipt == stale.Receipt {
		t.Fatalf("after the visibility timeout got %+v; want only %q again, same ID, ReceiveCount 2, a new receipt", again, "kept")
	}
	wantNothing(t, q, 0, "the deleted message must not come back")
	if err := q.Delete(t.Context(), stale.Receipt); err != nil {
		t.Errorf("Delete(stale receipt) = %v, want nil", err)
	}
	if err := q.ChangeVisibility(t.Context(), stale.Receipt, 0); err != nil {
		t.Errorf("ChangeVisibility(stale receipt) = %v, want nil", err)
	}
	deleteAll(t, q, again)
}

func testDelay(t *testing.T, newQueues NewQueues) {
	q, _ := newQueues(t, 0)
	sent := time.Now()
	err := q.Send(t.Context(), queue.Outgoing{Body: []byte("later"), Delay: 2 * second}, queue.Outgoing{Body: []byte("now")})
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	now := collect(t, q, 1, hidden, 5*second)
	if diff := cmp.Diff([]string{"now"}, bodies(now)); diff != "" {
		t.Fatalf("receive before the delay ends (-want +got):\n%s", diff)
	}
	later := collect(t, q, 1, hidden, 6*second)
	if diff := cmp.Diff([]string{"later"}, bodies(later)); diff != "" {
		t.Fatalf("delayed receive (-want +got):\n%s", diff)
	}
	if waited := time.Since(sent); waited < 1500*time.Millisecond {
		t.Errorf("delayed message arrived after %v, want ≥ its 2 s delay", waited)
	}
}

func testChangeVisibility(t *testing.T, newQueues NewQueues) {
	q, _ := newQueues(t, 0)
	send(t, q, "m")
	first := collect(t, q, 1, hidden, 5*second)
	if len(first) != 1 {
		t.Fatalf("received %d messages, want 1", len(first))
	}
	if err := q.ChangeVisibility(t.Context(), first[0].Receipt, 0); err != nil {
		t.Fatalf("ChangeVisibility(0) = %v", err)
	}
	again := collect(t, q, 1, second, 3*second)
	if len(again) != 1 || again[0].ReceiveCount != 2 {
		t.Fatalf("after ChangeVisibility(0) got %+v; want the message again with ReceiveCount 2", again)
	}
	if err := q.ChangeVisibility(t.Context(), again[0].Receipt, hidden); err != nil {
		t.Fatalf("ChangeVisibility(30 s) = %v", err)
	}
	wantNothing(t, q, 2*second, "ChangeVisibility extended the 1 s visibility to 30 s")
}

func testDeadLetter(t *testing.T, newQueues NewQueues) {
	const maxReceives = 2
	q, dlq := newQueues(t, maxReceives)
	send(t, q, "poison")
	var id string
	for i := 1; i <= maxReceives; i++ {
		got := collect(t, q, 1, second, 5*second)
		if len(got) != 1 || got[0].ReceiveCount != i {
			t.Fatalf("receive %d got %+v; want the message with ReceiveCount %d", i, got, i)
		}
		id = got[0].ID
	}
	deadline := time.Now().Add(8 * second)
	for time.Now().Before(deadline) {
		if msgs, err := q.Receive(t.Context(), queue.MaxBatch, hidden, second); err != nil || len(msgs) > 0 {
			t.Fatalf("Receive after %d receives = %+v, %v; want nothing (dead-lettered)", maxReceives, msgs, err)
		}
		msgs, err := dlq.Receive(t.Context(), queue.MaxBatch, hidden, second)
		if err != nil {
			t.Fatalf("dead-letter Receive = %v", err)
		}
		if len(msgs) > 0 {
			if len(msgs) != 1 || string(msgs[0].Body) != "poison" || msgs[0].ID != id {
				t.Errorf("dead-letter queue got %+v; want the message %s", msgs, id)
			}
			return
		}
	}
	t.Errorf("message did not reach the dead-letter queue after %d receives", maxReceives)
}

func testBatchOver10(t *testing.T, newQueues NewQueues) {
	q, _ := newQueues(t, 0)
	var want []string
	for i := range 25 {
		want = append(want, fmt.Sprintf("m%02d", i))
	}
	send(t, q, want...)
	got := collect(t, q, 25, hidden, 10*second)
	if diff := cmp.Diff(want, bodies(got)); diff != "" {
		t.Errorf("received bodies (-want +got):\n%s", diff)
	}
}

// testConcurrentReceivers: no visible message is handed to two receivers.
func testConcurrentReceivers(t *testing.T, newQueues NewQueues) {
	q, _ := newQueues(t, 0)
	const count, receivers = 40, 5
	var want []string
	for i := range count {
		want = append(want, fmt.Sprintf("m%02d", i))
	}
	send(t, q, want...)
	var (
		mu       sync.Mutex
		got      []queue.Message
		deadline = time.Now().Add(10 * second)
		wg       sync.WaitGroup
	)
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= count || time.Now().After(deadline)
	}
	for range receivers {
		wg.Go(func() {
			for !done() {
				msgs, err := q.Receive(t.Context(), queue.MaxBatch, hidden, second)
				if err != nil {
					t.Errorf("Receive = %v", err)
					return
				}
				mu.Lock()
				got = append(got, msgs...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff(want, bodies(got)); diff != "" {
		t.Errorf("bodies received by %d receivers (-want +got; a repeat is a double delivery):\n%s", receivers, diff)
	}
}

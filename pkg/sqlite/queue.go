package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

// QueueOptions configure a queue's dead-lettering.
type QueueOptions struct {
	// MaxReceives is how many times a message is delivered before a further
	// receive moves it to DeadLetter instead; 0 means never dead-letter.
	MaxReceives int
	// DeadLetter names the queue that takes messages past MaxReceives.
	DeadLetter string
}

// Queue is a durable queue.Queue whose messages live in the database's
// messages table. Receipts are "<sequence>.<random token>"; a new token is
// issued per delivery, so a stale receipt changes nothing.
type Queue struct {
	db   *DB
	name string
	opts QueueOptions
}

var _ queue.Queue = (*Queue)(nil)

// Queue limits, SQS's, so that what works locally works in the cloud.
const (
	maxBodyBytes  = 256 * 1024
	maxDelay      = 15 * time.Minute
	maxVisibility = 12 * time.Hour
	// pollInterval is how often a waiting Receive looks again when no send in
	// this process wakes it (other processes, delays, visibility expiry).
	pollInterval = 50 * time.Millisecond
)

var queueName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// Queue returns the named queue, creating nothing until a message is sent.
func (db *DB) Queue(name string, opts QueueOptions) (*Queue, error) {
	switch {
	case !queueName.MatchString(name):
		return nil, fmt.Errorf("queue %q: name must match %s", name, queueName)
	case opts.MaxReceives < 0:
		return nil, fmt.Errorf("queue %q: max receives %d is negative", name, opts.MaxReceives)
	case opts.MaxReceives > 0 && !queueName.MatchString(opts.DeadLetter):
		return nil, fmt.Errorf("queue %q: max receives %d needs a dead-letter queue name matching %s", name, opts.MaxReceives, queueName)
	case opts.MaxReceives == 0 && opts.DeadLetter != "":
		return nil, fmt.Errorf("queue %q: dead-letter queue %q needs max receives > 0", name, opts.DeadLetter)
	case opts.DeadLetter == name:
		return nil, fmt.Errorf("queue %q: cannot be its own dead-letter queue", name)
	}
	return &Queue{db: db, name: name, opts: opts}, nil
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.name }

// Send enqueues the messages, a few thousand per transaction.
func (q *Queue) Send(ctx context.Context, msgs ...queue.Outgoing) error {
	for i, m := range msgs {
		if len(m.Body) == 0 || len(m.Body) > maxBodyBytes {
			return fmt.Errorf("send to %s: message %d body is %d bytes, want 1..%d", q.name, i, len(m.Body), maxBodyBytes)
		}
		if m.Delay < 0 || m.Delay > maxDelay {
			return fmt.Errorf("send to %s: message %d delay %v is outside 0..%v", q.name, i, m.Delay, maxDelay)
		}
	}
	for start := 0; start < len(msgs); start += createChunk {
		chunk := msgs[start:min(start+createChunk, len(msgs))]
		err := q.db.write(ctx, func(ctx context.Context, w *writeTx) error {
			return w.send(ctx, q.name, chunk)
		})
		if err != nil {
			return fmt.Errorf("send to %s: %w", q.name, err)
		}
	}
	return nil
}

// Receive returns up to n (at most queue.MaxBatch) visible messages, oldest
// first, hiding each for visibility. With wait > 0 it waits that long for at
// least one, woken by sends in this process and polling for the rest.
func (q *Queue) Receive(ctx context.Context, n int, visibility, wait time.Duration) ([]queue.Message, error) {
	if visibility < 0 || visibility > maxVisibility {
		return nil, fmt.Errorf("receive from %s: visibility %v is outside 0..%v", q.name, visibility, maxVisibility)
	}
	n = min(max(n, 1), queue.MaxBatch)
	deadline := time.Now().Add(wait)
	for {
		wake := q.db.notify.channel(q.name)
		msgs, err := q.receiveOnce(ctx, n, visibility)
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		timer := time.NewTimer(min(left, pollInterval))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("receive from %s: %w", q.name, ctx.Err())
		case <-wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func (q *Queue) receiveOnce(ctx context.Context, max int, visibility time.Duration) ([]queue.Message, error) {
	var delivered []queue.Message
	err := q.db.write(ctx, func(ctx context.Context, w *writeTx) error {
		var err error
		delivered, err = w.receive(ctx, q, max, visibility)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.name, err)
	}
	return delivered, nil
}

// candidate is a visible message picked for delivery.
type candidate struct {
	seq          int64
	id           string
	body         []byte
	receiveCount int
	sentAt       int64
}

func (w *writeTx) receive(ctx context.Context, q *Queue, max int, visibility time.Duration) ([]queue.Message, error) {
	now := w.now.UnixMilli()
	var delivered []queue.Message
	for len(delivered) < max {
		want := max - len(delivered)
		picked, err := w.visible(ctx, q.name, now, want)
		if err != nil {
			return nil, err
		}
		for _, c := range picked {
			if q.opts.MaxReceives > 0 && c.receiveCount >= q.opts.MaxReceives {
				if _, err := w.s.deadLetterMessage.ExecContext(ctx, q.opts.DeadLetter, now, c.seq); err != nil {
					return nil, fmt.Errorf("move message %s to %s: %w", c.id, q.opts.DeadLetter, err)
				}
				w.sentTo = append(w.sentTo, q.opts.DeadLetter)
				continue
			}
			receipt := strconv.FormatInt(c.seq, 10) + "." + randomHex(12)
			if _, err := w.s.deliverMessage.ExecContext(ctx, now+visibility.Milliseconds(), receipt, c.seq); err != nil {
				return nil, fmt.Errorf("deliver message %s: %w", c.id, err)
			}
			delivered = append(delivered, queue.Message{
				ID: c.id, Body: c.body, Receipt: receipt, ReceiveCount: c.receiveCount + 1,
				SentAt: time.UnixMilli(c.sentAt).UTC(),
			})
		}
		if len(picked) < want {
			break
		}
	}
	return delivered, nil
}

func (w *writeTx) visible(ctx context.Context, name string, now int64, limit int) ([]candidate, error) {
	rows, err := w.s.visibleMessages.QueryContext(ctx, name, now, limit)
	if err != nil {
		return nil, fmt.Errorf("find visible messages: %w", err)
	}
	var picked []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.seq, &c.id, &c.body, &c.receiveCount, &c.sentAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("find visible messages: %w", err)
		}
		picked = append(picked, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("find visible messages: %w", err)
	}
	return picked, nil
}

// Delete acknowledges a delivery; a stale receipt (the message was delivered
// again, or is gone) is a no-op.
func (q *Queue) Delete(ctx context.Context, receipt string) error {
	seq, err := parseReceipt(receipt)
	if err != nil {
		return fmt.Errorf("delete from %s: %w", q.name, err)
	}
	err = q.db.write(ctx, func(ctx context.Context, w *writeTx) error {
		_, err := w.s.deleteMessage.ExecContext(ctx, seq, receipt)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete from %s: %w", q.name, err)
	}
	return nil
}

// ChangeVisibility hides a delivery for d from now (0 = visible now); a stale
// receipt is a no-op.
func (q *Queue) ChangeVisibility(ctx context.Context, receipt string, d time.Duration) error {
	if d < 0 || d > maxVisibility {
		return fmt.Errorf("change visibility in %s: %v is outside 0..%v", q.name, d, maxVisibility)
	}
	seq, err := parseReceipt(receipt)
	if err != nil {
		return fmt.Errorf("change visibility in %s: %w", q.name, err)
	}
	err = q.db.write(ctx, func(ctx context.Context, w *writeTx) error {
		_, err := w.s.changeVisibility.ExecContext(ctx, w.now.Add(d).UnixMilli(), seq, receipt)
		return err
	})
	if err != nil {
		return fmt.Errorf("change visibility in %s: %w", q.name, err)
	}
	if d == 0 {
		q.db.notify.signal(q.name)
	}
	return nil
}

func parseReceipt(receipt string) (int64, error) {
	seqText, token, ok := strings.Cut(receipt, ".")
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if !ok || err != nil || seq <= 0 || token == "" {
		return 0, fmt.Errorf("receipt %q is not a receipt this queue issued", receipt)
	}
	return seq, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}

// notifier wakes waiting receivers of a queue when a send to it commits.
type notifier struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
}

// channel returns a channel closed at the next signal for the queue.
func (n *notifier) channel(name string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.chans == nil {
		n.chans = make(map[string]chan struct{})
	}
	c, ok := n.chans[name]
	if !ok {
		c = make(chan struct{})
		n.chans[name] = c
	}
	return c
}

// signal wakes everyone waiting on the queue.
func (n *notifier) signal(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.chans[name]; ok {
		close(c)
		delete(n.chans, name)
	}
}

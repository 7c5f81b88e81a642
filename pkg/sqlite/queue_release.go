package sqlite

import (
	"context"
	"fmt"
	"time"
)

// ReleaseInFlight makes every message of the queue that was delivered and
// is still hidden by its visibility timeout visible now, and voids the
// receipts of those deliveries. Call it at start, before receiving, when
// the process that received them is known to be gone (the local platform
// is the only process on its data dir): their handlers died with it, so
// waiting out the visibility timeout only delays the work. Messages sent
// with a delay and never delivered keep their delay. It returns how many
// messages it released.
func (q *Queue) ReleaseInFlight(ctx context.Context) (int64, error) {
	var n int64
	err := q.db.write(ctx, func(ctx context.Context, w *writeTx) error {
		now := w.now.UnixMilli()
		res, err := w.s.releaseInFlight.ExecContext(ctx, now, q.name, now)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("release in-flight messages of %s: %w", q.name, err)
	}
	if n > 0 {
		q.db.notify.signal(q.name)
	}
	return n, nil
}

// Postpone hides a delivery for d from now and takes back its receive
// count, voiding its receipt: the message is delivered again as if this
// delivery had not happened. It is for a handler that failed because of a
// condition of the platform, not of the message (its storage was full):
// such a failure must not bring the message nearer its dead-letter queue.
// A stale receipt is a no-op.
func (q *Queue) Postpone(ctx context.Context, receipt string, d time.Duration) error {
	if d < 0 || d > maxVisibility {
		return fmt.Errorf("postpone in %s: %v is outside 0..%v", q.name, d, maxVisibility)
	}
	seq, err := parseReceipt(receipt)
	if err != nil {
		return fmt.Errorf("postpone in %s: %w", q.name, err)
	}
	err = q.db.write(ctx, func(ctx context.Context, w *writeTx) error {
		_, err := w.s.postponeMessage.ExecContext(ctx, w.now.Add(d).UnixMilli(), seq, receipt)
		return err
	})
	if err != nil {
		return fmt.Errorf("postpone in %s: %w", q.name, err)
	}
	if d == 0 {
		q.db.notify.signal(q.name)
	}
	return nil
}

package sqlite

import (
	"context"
	"fmt"
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

package benchsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// Queued is the front of a Service that an API and a scheduler call: it
// records the change and sends the sync messages the queue consumer then
// runs (Sync). Both `gauntlet local` and the cloud functions use it, so
// adding, retrying and refreshing enqueue the same way everywhere.
type Queued struct {
	Service *Service
	Queue   queue.Queue
}

// Add adds a registry dataset to the workspace and enqueues its sync.
func (q Queued) Add(ctx context.Context, ws, spec string, creds ...benchmark.RegistryCredential) (records.Benchmark, error) {
	rec, err := q.Service.Add(ctx, ws, spec, creds...)
	if err != nil {
		return rec, err
	}
	return rec, q.enqueuePending(ctx, rec)
}

// AddFrom adds a benchmark from a registry.json dataset, a package
// dataset or a git repository (Service.AddFrom) and enqueues its sync.
func (q Queued) AddFrom(ctx context.Context, ws string, req AddRequest) (records.Benchmark, error) {
	rec, err := q.Service.AddFrom(ctx, ws, req)
	if err != nil {
		return rec, err
	}
	return rec, q.enqueuePending(ctx, rec)
}

// Sync retries a failed sync and enqueues it.
func (q Queued) Sync(ctx context.Context, ws, key string) (records.Benchmark, error) {
	rec, err := q.Service.Retry(ctx, ws, key)
	if err != nil {
		return rec, err
	}
	return rec, q.enqueuePending(ctx, rec)
}

// Delete removes a registry-added benchmark (see Service.Delete).
func (q Queued) Delete(ctx context.Context, ws, key string) error {
	return q.Service.Delete(ctx, ws, key)
}

// RefreshDue enqueues a refresh of every benchmark last synced more than
// olderThan before now and returns how many it enqueued.
func (q Queued) RefreshDue(ctx context.Context, now time.Time, olderThan time.Duration) (int, error) {
	msgs, err := q.Service.Refresh(ctx, now, olderThan)
	if err != nil {
		return 0, err
	}
	return len(msgs), q.Enqueue(ctx, msgs...)
}

// Enqueue sends sync messages; a duplicate is harmless (Sync claims the
// benchmark under a lease).
func (q Queued) Enqueue(ctx context.Context, msgs ...SyncMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	out := make([]queue.Outgoing, len(msgs))
	for i, m := range msgs {
		body, err := m.Encode()
		if err != nil {
			return err
		}
		out[i] = queue.Outgoing{Body: body}
	}
	if err := q.Queue.Send(ctx, out...); err != nil {
		return fmt.Errorf("enqueue %d benchmark syncs: %w", len(msgs), err)
	}
	return nil
}

// Run handles one delivered sync message as the sync queue's consumer
// does: Sync, and when the sync parked on running image builds, the resume
// message sent with its delay. The message is then done (nil); a failed
// send leaves it to be delivered again, which resumes the sync once its
// lease expires.
func (q Queued) Run(ctx context.Context, msg SyncMessage) error {
	err := q.Service.Sync(ctx, msg)
	var ib *ImagesBuilding
	if !errors.As(err, &ib) {
		return err
	}
	body, err := ib.Resume.Encode()
	if err != nil {
		return err
	}
	if err := q.Queue.Send(ctx, queue.Outgoing{Body: body, Delay: ib.After}); err != nil {
		return fmt.Errorf("send the resume of %s/%s: %w", msg.Workspace, msg.Key, err)
	}
	return nil
}

// enqueuePending sends the sync of a benchmark left pending; one already
// ready (an idempotent Add) needs none.
func (q Queued) enqueuePending(ctx context.Context, rec records.Benchmark) error {
	if rec.Status != records.SyncPending {
		return nil
	}
	return q.Enqueue(ctx, NewSyncMessage(rec.Workspace, rec.Key))
}

package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/api"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// Sync queue timing.
const (
	// syncVisibility hides a sync message while one worker syncs; it matches
	// the sync lease, so a crashed sync is taken over when both expire.
	syncVisibility = benchsync.DefaultLease
	// syncBusyDelay is how long a message of a sync held elsewhere waits.
	syncBusyDelay = 5 * time.Second
	syncWait      = time.Second
)

// benchmarks implements api.Benchmarks on benchsync: every add or retry
// enqueues a sync message that the sync loop consumes.
type benchmarks struct {
	sync  *benchsync.Service
	queue queue.Queue
}

var _ api.Benchmarks = (*benchmarks)(nil)

func (b *benchmarks) Add(ctx context.Context, ws, spec string) (records.Benchmark, error) {
	rec, err := b.sync.Add(ctx, ws, spec)
	if err != nil {
		return rec, err
	}
	if rec.Status == records.SyncPending {
		if err := b.enqueue(ctx, benchsync.NewSyncMessage(ws, rec.Key)); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

func (b *benchmarks) Sync(ctx context.Context, ws, key string) (records.Benchmark, error) {
	rec, err := b.sync.Retry(ctx, ws, key)
	if err != nil {
		return rec, err
	}
	return rec, b.enqueue(ctx, benchsync.NewSyncMessage(ws, key))
}

func (b *benchmarks) Delete(ctx context.Context, ws, key string) error {
	return b.sync.Delete(ctx, ws, key)
}

func (b *benchmarks) enqueue(ctx context.Context, msgs ...benchsync.SyncMessage) error {
	out := make([]queue.Outgoing, len(msgs))
	for i, m := range msgs {
		body, err := m.Encode()
		if err != nil {
			return err
		}
		out[i] = queue.Outgoing{Body: body}
	}
	if err := b.queue.Send(ctx, out...); err != nil {
		return fmt.Errorf("enqueue benchmark sync: %w", err)
	}
	return nil
}

// consume runs the sync loop until ctx ends: one message at a time, since
// a sync is long and the machine small.
func (b *benchmarks) consume(ctx context.Context, log *slog.Logger) {
	for ctx.Err() == nil {
		msgs, err := b.queue.Receive(ctx, 1, syncVisibility, syncWait)
		if err != nil {
			if ctx.Err() == nil {
				log.ErrorContext(ctx, "receive sync message", "err", err)
				sleep(ctx, syncWait)
			}
			continue
		}
		for _, m := range msgs {
			b.handle(ctx, log, m)
		}
	}
}

func (b *benchmarks) handle(ctx context.Context, log *slog.Logger, m queue.Message) {
	msg, err := benchsync.DecodeSyncMessage(m.Body)
	if err == nil {
		err = b.sync.Sync(ctx, msg)
	}
	switch {
	case err == nil || errors.Is(err, benchsync.ErrPoison):
		if err != nil {
			log.ErrorContext(ctx, "sync message dropped", "message_id", m.ID, "err", err)
		}
		if derr := b.queue.Delete(ctx, m.Receipt); derr != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "delete sync message", "message_id", m.ID, "err", derr)
		}
	case errors.Is(err, benchsync.ErrSyncInProgress):
		_ = b.queue.ChangeVisibility(ctx, m.Receipt, syncBusyDelay)
	case ctx.Err() == nil:
		log.ErrorContext(ctx, "benchmark sync failed; will retry", "workspace", msg.Workspace, "key", msg.Key, "err", err)
		_ = b.queue.ChangeVisibility(ctx, m.Receipt, syncBusyDelay)
	}
}

// refresh enqueues a refresh of every benchmark last synced more than
// olderThan ago, at once and then every interval, until ctx ends — the local
// counterpart of the cloud's scheduled registrysync.
func (b *benchmarks) refresh(ctx context.Context, log *slog.Logger, now func() time.Time, interval, olderThan time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		msgs, err := b.sync.Refresh(ctx, now(), olderThan)
		if err == nil {
			err = b.enqueue(ctx, msgs...)
		}
		if err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "benchmark refresh", "err", err)
		} else if len(msgs) > 0 {
			log.InfoContext(ctx, "benchmark refresh queued", "benchmarks", len(msgs))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

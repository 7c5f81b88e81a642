package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/api"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

// Sync queue timing.
const (
	// syncVisibility hides a sync message while one worker syncs; it matches
	// the sync lease, so a crashed sync is taken over when both expire.
	syncVisibility = benchsync.DefaultLease
	// syncBusyDelay is how long a message of a sync held elsewhere waits.
	syncBusyDelay = 5 * time.Second
	syncWait      = time.Second
	// syncWorkers is how many syncs run at once: a benchmark's sync does
	// not wait behind another's image builds (each sync bounds its own
	// builds by the parallel-builds setting).
	syncWorkers = 4
)

// benchmarks is the API's benchmarks port (benchsync.Queued) plus the local
// loops that consume the sync queue and schedule refreshes.
type benchmarks struct {
	benchsync.Queued
}

var _ api.Benchmarks = (*benchmarks)(nil)

// consume runs the sync loop until ctx ends: up to syncWorkers messages
// at once (syncs of different benchmarks side by side; two deliveries of
// one benchmark meet its lease), and waits for them to return.
func (b *benchmarks) consume(ctx context.Context, log *slog.Logger) {
	sem := make(chan struct{}, syncWorkers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		// Receive only as many as there are free workers.
		sem <- struct{}{}
		free := 1
		for free < syncWorkers {
			select {
			case sem <- struct{}{}:
				free++
				continue
			default:
			}
			break
		}
		msgs, err := b.Queue.Receive(ctx, free, syncVisibility, syncWait)
		for range free - len(msgs) {
			<-sem
		}
		if err != nil {
			if ctx.Err() == nil {
				log.ErrorContext(ctx, "receive sync message", "err", err)
				sleep(ctx, syncWait)
			}
			continue
		}
		for _, m := range msgs {
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				b.handle(ctx, log, m)
			}()
		}
	}
}

func (b *benchmarks) handle(ctx context.Context, log *slog.Logger, m queue.Message) {
	msg, err := benchsync.DecodeSyncMessage(m.Body)
	if err == nil {
		err = b.Service.Sync(ctx, msg)
	}
	switch {
	case err == nil || errors.Is(err, benchsync.ErrPoison):
		if err != nil {
			log.ErrorContext(ctx, "sync message dropped", "message_id", m.ID, "err", err)
		}
		if derr := b.Queue.Delete(ctx, m.Receipt); derr != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "delete sync message", "message_id", m.ID, "err", derr)
		}
	case errors.Is(err, benchsync.ErrSyncInProgress):
		_ = b.Queue.ChangeVisibility(ctx, m.Receipt, syncBusyDelay)
	case ctx.Err() == nil:
		log.ErrorContext(ctx, "benchmark sync failed; will retry", "workspace", msg.Workspace, "key", msg.Key, "err", err)
		_ = b.Queue.ChangeVisibility(ctx, m.Receipt, syncBusyDelay)
	}
}

// refresh enqueues a refresh of every benchmark last synced more than
// olderThan ago, at once and then every interval, until ctx ends — the local
// counterpart of the cloud's scheduled registrysync.
func (b *benchmarks) refresh(ctx context.Context, log *slog.Logger, now func() time.Time, interval, olderThan time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := b.RefreshDue(ctx, now(), olderThan)
		if err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "benchmark refresh", "err", err)
		} else if n > 0 {
			log.InfoContext(ctx, "benchmark refresh queued", "benchmarks", n)
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

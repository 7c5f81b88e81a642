package local

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

// handlerGrace is how long an in-flight message may finish after shutdown
// starts; after it the handler's context is cancelled (the message is then
// redelivered on the next start).
const handlerGrace = 10 * time.Second

// poller returns a loop that receives from the named queue and hands each
// message to handle on up to workers goroutines. A handled message is
// deleted; a poison one goes to the dead-letter queue at once; a failed one
// becomes visible again after a short backoff.
func (p *Platform) poller(name string, workers int, visibility time.Duration, handle func(context.Context, []byte) error) func(context.Context) {
	q, dlq := p.queues[name], p.dlqs[name]
	return func(ctx context.Context) {
		// Handlers run on a context that outlives ctx by handlerGrace.
		hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
		defer hcancel()
		stop := context.AfterFunc(ctx, func() { time.AfterFunc(handlerGrace, hcancel) })
		defer stop()
		sem := make(chan struct{}, workers)
		var wg sync.WaitGroup
		defer wg.Wait()
		for ctx.Err() == nil {
			msgs, err := q.Receive(ctx, min(workers, queue.MaxBatch), visibility, time.Second)
			if err != nil {
				if ctx.Err() == nil {
					p.log.Error("receive", "queue", name, "err", err)
					sleep(ctx, time.Second)
				}
				continue
			}
			for _, m := range msgs {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					p.deliver(hctx, name, q, dlq, m, handle)
				}()
			}
			// Wait for a free worker before receiving more.
			sem <- struct{}{}
			<-sem
		}
	}
}

func (p *Platform) deliver(ctx context.Context, name string, q, dlq queue.Queue, m queue.Message, handle func(context.Context, []byte) error) {
	err := handle(ctx, m.Body)
	switch {
	case err == nil:
	case errors.Is(err, pipeline.ErrPoison):
		p.log.Error("poison message dead-lettered", "queue", name, "message_id", m.ID, "err", err)
		if err := dlq.Send(ctx, queue.Outgoing{Body: m.Body}); err != nil {
			p.log.Error("dead-letter", "queue", name, "message_id", m.ID, "err", err)
			return
		}
	default:
		p.log.Warn("message failed; it will be delivered again", "queue", name, "message_id", m.ID, "receive_count", m.ReceiveCount, "err", err)
		backoff := time.Duration(min(m.ReceiveCount, 8)) * time.Second
		if err := q.ChangeVisibility(ctx, m.Receipt, backoff); err != nil && ctx.Err() == nil {
			p.log.Error("change visibility", "queue", name, "message_id", m.ID, "err", err)
		}
		return
	}
	if err := q.Delete(ctx, m.Receipt); err != nil && ctx.Err() == nil {
		p.log.Error("delete", "queue", name, "message_id", m.ID, "err", err)
	}
}

// recomputeConsumer names the change-stream checkpoint of Recompute.
const recomputeConsumer = "recompute"

// tailChanges feeds change records to Recompute from the saved checkpoint,
// saving the next checkpoint only after a batch succeeded (at-least-once).
func (p *Platform) tailChanges(ctx context.Context) {
	stream, cps := p.db.Stream(), p.db.Checkpoints()
	for ctx.Err() == nil {
		cp, err := cps.Load(ctx, recomputeConsumer)
		if err != nil {
			p.retryLater(ctx, "load checkpoint", err)
			continue
		}
		changes, next, err := stream.Read(ctx, cp, 1000)
		if err != nil {
			p.retryLater(ctx, "read change stream", err)
			continue
		}
		if len(changes) == 0 {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		if err := p.svc.Recompute(ctx, changes); err != nil {
			p.retryLater(ctx, "recompute", err)
			continue
		}
		if err := cps.Save(ctx, recomputeConsumer, next); err != nil {
			p.retryLater(ctx, "save checkpoint", err)
		}
	}
}

func (p *Platform) watchdog(ctx context.Context) {
	t := time.NewTicker(p.opts.WatchInterval)
	defer t.Stop()
	for {
		if err := p.svc.Watch(ctx); err != nil && ctx.Err() == nil {
			p.log.Error("watchdog", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Platform) retryLater(ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	p.log.Error(what, "err", err)
	sleep(ctx, time.Second)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

package local

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/fnspec"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// handlerGrace is how long an in-flight message of a pipeline queue may
// finish after shutdown starts; after it the handler's context is cancelled
// (the message is then redelivered on the next start).
const handlerGrace = 10 * time.Second

// Bounds of the pause after a failed receive.
const (
	receiveRetryMin = 50 * time.Millisecond
	receiveRetryMax = time.Second
)

// Sync queue timing.
const (
	// syncVisibility hides a sync message while one worker syncs; it matches
	// the sync lease, so a crashed sync is taken over when both expire.
	syncVisibility = benchsync.DefaultLease
	// syncWorkers is how many syncs run at once: a benchmark's sync does
	// not wait behind another's image builds (each sync bounds its own
	// builds by the parallel-builds setting).
	syncWorkers = 4
)

// loop is one row of the local function table: a function of fnspec's
// table (one Lambda in the cloud) as a loop of this process, or the
// platform's own free-space sampler.
type loop struct {
	name string
	run  func(context.Context)
}

// consumer is how a queue function's loop consumes its Source queue.
type consumer struct {
	fn         fnspec.Function
	workers    int
	visibility time.Duration
	handle     func(context.Context, []byte) error
	// grace is how long a handler may finish after shutdown starts.
	grace time.Duration
	// release makes the messages a previous process had received visible
	// again at start: their handlers died with it, and handling them again
	// is safe at once. A sync's message is not released: its lease, which
	// the message's visibility matches, says when it may be taken over.
	release bool
}

// consumers are the queue rows of the table, in pipeline order.
func (p *Platform) consumers() []consumer {
	vis := func(d time.Duration) time.Duration {
		if p.opts.Visibility > 0 {
			return p.opts.Visibility
		}
		return d
	}
	return []consumer{
		{fn: fnspec.Planner, workers: 1, visibility: vis(5 * time.Minute), handle: p.svc.HandlePlan, grace: handlerGrace, release: true},
		{fn: fnspec.Dispatcher, workers: p.opts.Workers, visibility: vis(2 * time.Minute), handle: p.svc.HandleSlot, grace: handlerGrace, release: true},
		{fn: fnspec.Grader, workers: p.opts.Workers, visibility: vis(time.Minute), handle: p.svc.HandleCompletion, grace: handlerGrace, release: true},
		{fn: fnspec.Ingester, workers: p.opts.Workers, visibility: vis(time.Minute), handle: p.svc.HandleResult, grace: handlerGrace, release: true},
		// A sync is long: it stops with the process and is resumed under
		// its lease by the next one.
		{fn: fnspec.RegistrySync, workers: syncWorkers, visibility: syncVisibility, handle: p.handleSync},
	}
}

// loops is the local function table: every loop `gauntlet local` runs.
func (p *Platform) loops() []loop {
	var rows []loop
	for _, c := range p.consumers() {
		rows = append(rows, loop{c.fn.Name, p.poller(c)})
	}
	rows = append(rows,
		loop{fnspec.Leaderboard.Name, p.tailChanges},
		loop{fnspec.Watchdog.Name, every(p.opts.WatchInterval, p.watch)},
		loop{"space", func(ctx context.Context) { p.space.Run(ctx, p.opts.SpaceInterval) }},
	)
	if p.opts.RefreshEvery >= 0 {
		// The registrysync function's schedule.
		rows = append(rows, loop{fnspec.RegistrySync.Name + " schedule", every(p.opts.RefreshEvery, p.refresh)})
	}
	return rows
}

// poller returns the loop of consumer c: it receives from c's source queue
// as many messages as it has free workers and hands each to c.handle. A
// handled message is deleted; a poison one goes to the dead-letter queue at
// once; a failed one becomes visible again after a short backoff.
func (p *Platform) poller(c consumer) func(context.Context) {
	name := string(c.fn.Source)
	q, dlq := p.queues[name], p.dlqs[name]
	return func(ctx context.Context) {
		// Handlers run on a context that outlives ctx by c.grace.
		hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
		defer hcancel()
		stop := context.AfterFunc(ctx, func() { time.AfterFunc(c.grace, hcancel) })
		defer stop()
		sem := make(chan struct{}, c.workers)
		var wg sync.WaitGroup
		defer wg.Wait()
		// A failed receive (the database locked by another process) is
		// tried again soon, then less often while it keeps failing.
		pause := receiveRetryMin
		// full holds the error of a handler that met a full data dir.
		var full atomic.Pointer[error]
		for ctx.Err() == nil {
			free := acquireFree(sem)
			if err := full.Swap(nil); err != nil {
				releaseN(sem, free)
				p.waitForSpace(ctx, name, *err)
				continue
			}
			msgs, err := q.Receive(ctx, min(free, queue.MaxBatch), c.visibility, time.Second)
			releaseN(sem, free-len(msgs))
			if _, isFull := diskspace.As(err); isFull {
				p.waitForSpace(ctx, name, err)
				continue
			}
			if err != nil {
				if ctx.Err() == nil {
					p.log.Error("receive", "queue", name, "err", err, "retry_in", pause)
					sleep(ctx, pause)
					pause = min(2*pause, receiveRetryMax)
				}
				continue
			}
			pause = receiveRetryMin
			for _, m := range msgs {
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					if err := p.deliver(hctx, name, q, dlq, m, c.handle); err != nil {
						full.CompareAndSwap(nil, &err)
					}
				}()
			}
		}
	}
}

// acquireFree takes one worker of sem, waiting for it, and then every
// other one free at the moment, and returns how many it took: a poller
// receives only as many messages as it can start at once, so no message
// waits in hand while its visibility runs out.
func acquireFree(sem chan struct{}) int {
	sem <- struct{}{}
	free := 1
	for free < cap(sem) {
		select {
		case sem <- struct{}{}:
			free++
		default:
			return free
		}
	}
	return free
}

// releaseN gives n workers of sem back.
func releaseN(sem chan struct{}, n int) {
	for range n {
		<-sem
	}
}

// waitForSpace holds a poller that met a full data dir for at least one
// sampling interval and until the free space is back above the floor, so
// its messages are not received over and over while nothing can be
// written (without a floor, it tries again every interval).
func (p *Platform) waitForSpace(ctx context.Context, name string, cause error) {
	p.space.Note(cause)
	p.log.Warn("the data dir is full: the poller waits for space", "queue", name, "err", cause)
	sleep(ctx, p.opts.SpaceInterval)
	if err := p.space.Wait(ctx, p.opts.SpaceInterval); err == nil {
		p.log.Info("space is back: the poller resumes", "queue", name)
	}
}

// spacePostpone is how long a message whose handler met a full data dir
// stays hidden: past it the poller has waited for space anyway.
const spacePostpone = time.Second

// deliver hands one message to handle and acknowledges, dead-letters or
// releases it. It returns the handler's error when the data dir was full:
// the message is then put back without counting the delivery (the platform,
// not the message, failed), and the poller waits for space.
func (p *Platform) deliver(ctx context.Context, name string, q, dlq queue.Queue, m queue.Message, handle func(context.Context, []byte) error) error {
	err := handle(ctx, m.Body)
	if _, full := diskspace.As(err); full {
		p.log.Warn("message put back: the data dir is full", "queue", name, "message_id", m.ID, "err", err)
		if pq, ok := q.(postponer); ok {
			if perr := pq.Postpone(ctx, m.Receipt, spacePostpone); perr != nil && ctx.Err() == nil {
				p.log.Error("put back", "queue", name, "message_id", m.ID, "err", perr)
			}
		}
		return err
	}
	switch {
	case err == nil:
	case errors.Is(err, pipeline.ErrPoison), errors.Is(err, benchsync.ErrPoison):
		p.log.Error("poison message dead-lettered", "queue", name, "message_id", m.ID, "err", err)
		if err := dlq.Send(ctx, queue.Outgoing{Body: m.Body}); err != nil {
			p.log.Error("dead-letter", "queue", name, "message_id", m.ID, "err", err)
			return nil
		}
	default:
		p.log.Warn("message failed; it will be delivered again", "queue", name, "message_id", m.ID, "receive_count", m.ReceiveCount, "err", err)
		backoff := time.Duration(min(m.ReceiveCount, 8)) * time.Second
		if err := q.ChangeVisibility(ctx, m.Receipt, backoff); err != nil && ctx.Err() == nil {
			p.log.Error("change visibility", "queue", name, "message_id", m.ID, "err", err)
		}
		return nil
	}
	if err := q.Delete(ctx, m.Receipt); err != nil && ctx.Err() == nil {
		p.log.Error("delete", "queue", name, "message_id", m.ID, "err", err)
	}
	return nil
}

// postponer is the local queue's way to put a delivery back uncounted
// (sqlite.Queue.Postpone).
type postponer interface {
	Postpone(ctx context.Context, receipt string, d time.Duration) error
}

// recomputeConsumer names the change-stream checkpoint of Recompute.
const recomputeConsumer = "recompute"

// ChangesDeadLetterQueue names the queue that takes the change records
// Recompute kept failing on (see changeTailer).
const ChangesDeadLetterQueue = "changes-dlq"

// tailChanges feeds change records to Recompute from the saved checkpoint.
func (p *Platform) tailChanges(ctx context.Context) {
	dlq, err := p.db.Queue(ChangesDeadLetterQueue, sqlite.QueueOptions{})
	if err != nil {
		p.log.Error("open change dead-letter queue; change tailer not started", "queue", ChangesDeadLetterQueue, "err", err)
		return
	}
	t := &changeTailer{stream: p.db.Stream(), checkpoints: p.db.Checkpoints(), recompute: p.svc.Recompute,
		deadLetter: dlq, log: p.log}
	t.run(ctx)
}

// Defaults of changeTailer.
const (
	tailBatch       = 1000
	tailAttempts    = 4
	tailBackoff     = 500 * time.Millisecond
	tailIdle        = 200 * time.Millisecond
	tailRetryLater  = time.Second
	tailMaxBackoff  = 10 * time.Second
	deadLetterError = 1024 // bytes of the error kept in a dead-letter record
)

// changeTailer reads the change stream from a saved checkpoint and hands
// each batch to recompute, saving the next checkpoint only after the batch
// was handled (at-least-once), the way the cloud's stream event source does
// with BisectBatchOnFunctionError and an on-failure destination:
//
//   - a failing batch is retried attempts times, with a backoff that doubles;
//   - then each change of it is tried on its own, so one poisonous change
//     does not hold up the others;
//   - a change that still fails goes to the dead-letter queue (its id, key
//     and error, logged too), and the checkpoint moves past it.
type changeTailer struct {
	stream      store.Stream
	checkpoints store.Checkpoints
	recompute   func(context.Context, []store.Change) error
	deadLetter  queue.Queue
	log         *slog.Logger
	// attempts and backoff default to tailAttempts and tailBackoff.
	attempts int
	backoff  time.Duration
}

// DeadChange is the body of a change-dead-letter message.
type DeadChange struct {
	ChangeID string           `json:"change_id"`
	Kind     store.ChangeKind `json:"kind"`
	PK       string           `json:"pk"`
	SK       string           `json:"sk"`
	Error    string           `json:"error"`
	At       time.Time        `json:"at"`
}

func (t *changeTailer) run(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := t.step(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			t.log.Error("change tailer", "err", err)
			sleep(ctx, tailRetryLater)
		case n == 0:
			sleep(ctx, tailIdle)
		}
	}
}

// step handles one batch from the saved checkpoint and returns its size.
// An error means nothing was acknowledged: the batch is read again.
func (t *changeTailer) step(ctx context.Context) (int, error) {
	cp, err := t.checkpoints.Load(ctx, recomputeConsumer)
	if err != nil {
		return 0, fmt.Errorf("load checkpoint: %w", err)
	}
	changes, next, err := t.stream.Read(ctx, cp, tailBatch)
	if err != nil {
		return 0, fmt.Errorf("read change stream: %w", err)
	}
	if len(changes) == 0 {
		return 0, nil
	}
	if err := t.retry(ctx, changes); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if _, full := diskspace.As(err); full {
			// The platform's condition, not the changes': dead-lettering
			// them would lose them. Nothing is acknowledged; the batch is
			// read again after space returns.
			return 0, err
		}
		t.log.Warn("recompute of a change batch kept failing; trying its changes one by one", "changes", len(changes), "err", err)
		if err := t.isolate(ctx, changes); err != nil {
			return 0, err
		}
	}
	if err := t.checkpoints.Save(ctx, recomputeConsumer, next); err != nil {
		return 0, fmt.Errorf("save checkpoint: %w", err)
	}
	return len(changes), nil
}

// retry runs recompute on changes up to attempts times with a doubling
// backoff and returns the last error.
func (t *changeTailer) retry(ctx context.Context, changes []store.Change) error {
	attempts, backoff := t.attempts, t.backoff
	if attempts <= 0 {
		attempts = tailAttempts
	}
	if backoff <= 0 {
		backoff = tailBackoff
	}
	var err error
	for i := range attempts {
		if i > 0 {
			sleep(ctx, backoff)
			backoff = min(2*backoff, tailMaxBackoff)
		}
		if err = t.recompute(ctx, changes); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// isolate tries each change of a batch that kept failing on its own, once
// (the batch had its retries), and dead-letters those that fail. It returns
// an error, acknowledging nothing, when a dead-letter cannot be written
// (locally the queue lives in the same database, so a database that fails
// every write dead-letters nothing).
func (t *changeTailer) isolate(ctx context.Context, changes []store.Change) error {
	for i := range changes {
		err := t.recompute(ctx, changes[i:i+1])
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := t.bury(ctx, changes[i], err); err != nil {
			return err
		}
	}
	return nil
}

func (t *changeTailer) bury(ctx context.Context, c store.Change, cause error) error {
	d := DeadChange{ChangeID: c.ID, Kind: c.Kind, Error: cause.Error(), At: c.At}
	if len(d.Error) > deadLetterError {
		d.Error = d.Error[:deadLetterError]
	}
	if img := cmp.Or(c.New, c.Old); img != nil {
		d.PK, d.SK = img.PK, img.SK
	}
	body, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode dead change %s: %w", c.ID, err)
	}
	if err := t.deadLetter.Send(ctx, queue.Outgoing{Body: body}); err != nil {
		return fmt.Errorf("dead-letter change %s: %w", c.ID, err)
	}
	t.log.Error("change dead-lettered after every retry failed", "queue", ChangesDeadLetterQueue, "change", c.ID,
		"pk", d.PK, "sk", d.SK, "err", cause)
	return nil
}

// every returns a loop that runs run at once and then every interval
// until ctx ends (the local counterpart of a scheduled function).
func every(interval time.Duration, run func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			run(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
}

// watch is one run of the watchdog function.
func (p *Platform) watch(ctx context.Context) {
	if err := p.svc.Watch(ctx); err != nil && ctx.Err() == nil {
		p.log.Error("watchdog", "err", err)
	}
}

// handleSync is the registrysync function's queue handler: it runs one
// sync message (benchsync.Queued.Run, as the cloud's function does).
func (p *Platform) handleSync(ctx context.Context, body []byte) error {
	msg, err := benchsync.DecodeSyncMessage(body)
	if err != nil {
		return err
	}
	return p.benchmarks.Run(ctx, msg)
}

// refresh is one run of the registrysync function's schedule: it enqueues
// a refresh of every benchmark last synced more than RefreshAfter ago.
func (p *Platform) refresh(ctx context.Context) {
	n, err := p.benchmarks.RefreshDue(ctx, time.Now(), p.opts.RefreshAfter)
	if err != nil && ctx.Err() == nil {
		p.log.ErrorContext(ctx, "benchmark refresh", "err", err)
	} else if n > 0 {
		p.log.InfoContext(ctx, "benchmark refresh queued", "benchmarks", n)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

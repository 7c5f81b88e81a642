package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/sqsq"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

// SyncHandler is the registrysync function's handler. It serves two event
// sources: SQS batches of benchsync.SyncMessage bodies (benchmarks added or
// retried through the API, and the refresh messages it sends itself), and
// the hourly EventBridge Scheduler event, which lists the benchmarks whose
// last sync is older than the refresh age and sends one refresh message
// each to the sync queue.
type SyncHandler struct {
	svc          benchsync.Queued
	refreshAfter time.Duration
	now          func() time.Time
	batch        *sqsq.BatchHandler
	log          *slog.Logger
}

// SyncHandlerConfig wires a SyncHandler.
type SyncHandlerConfig struct {
	Service *benchsync.Service
	// Queue is the sync queue the scheduled refresh sends to.
	Queue queue.Queue
	// RefreshAfter is the age of a last sync that makes a benchmark due
	// (Config.SyncRefreshAfter).
	RefreshAfter time.Duration
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// NewSyncHandler returns the handler; Service and Queue are required.
func NewSyncHandler(cfg SyncHandlerConfig) (*SyncHandler, error) {
	if cfg.Service == nil || cfg.Queue == nil {
		return nil, fmt.Errorf("registrysync: Service and Queue are required")
	}
	h := &SyncHandler{svc: benchsync.Queued{Service: cfg.Service, Queue: cfg.Queue}, refreshAfter: cfg.RefreshAfter, now: cfg.Now, log: cfg.Logger}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	sync := func(ctx context.Context, m queue.Message) error {
		msg, err := benchsync.DecodeSyncMessage(m.Body)
		if err != nil {
			return err
		}
		// Run, not Sync: a sync parked on running image builds sends its
		// own resume, so no build is waited on past the function's timeout.
		return h.svc.Run(ctx, msg)
	}
	h.batch = sqsq.NewBatchHandler(sync, h.log)
	return h, nil
}

// SyncHandler returns the registrysync handler on the platform: the
// benchsync service, the sync queue and the configured refresh age.
func (p *Platform) SyncHandler() (*SyncHandler, error) {
	svc, err := p.BenchSync()
	if err != nil {
		return nil, err
	}
	if p.SyncQueue == nil {
		return nil, notWired("sync queue", EnvSyncQueueURL)
	}
	return NewSyncHandler(SyncHandlerConfig{Service: svc, Queue: p.SyncQueue, RefreshAfter: p.Config.SyncRefreshAfter, Logger: p.Logger})
}

// RefreshResponse is the answer to a scheduled event.
type RefreshResponse struct {
	// Enqueued counts the refresh messages sent.
	Enqueued int `json:"enqueued"`
}

// Handle is the Lambda entry point; it answers an SQS batch with its
// partial batch response and a scheduled event with a RefreshResponse.
func (h *SyncHandler) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	if ev, ok := IsScheduled(raw); ok {
		return h.Refresh(ctx, ev)
	}
	var batch events.SQSEvent
	if err := json.Unmarshal(raw, &batch); err != nil || len(batch.Records) == 0 || batch.Records[0].EventSource != "aws:sqs" {
		return nil, fmt.Errorf("registrysync: the event is neither an SQS batch nor a scheduled event")
	}
	return h.batch.Handle(ctx, batch)
}

// Refresh lists the benchmarks due for a refresh and sends their refresh
// messages to the sync queue. An error leaves the schedule's retry policy
// to invoke it again; messages already sent are harmless to send twice.
func (h *SyncHandler) Refresh(ctx context.Context, ev events.EventBridgeEvent) (RefreshResponse, error) {
	n, err := h.svc.RefreshDue(ctx, h.now(), h.refreshAfter)
	if err != nil {
		h.log.ErrorContext(ctx, "scheduled refresh failed", "event_id", ev.ID, "err", err)
		return RefreshResponse{}, fmt.Errorf("registrysync: %w", err)
	}
	h.log.InfoContext(ctx, "scheduled refresh enqueued", "event_id", ev.ID, "due", n, "older_than", h.refreshAfter.String())
	return RefreshResponse{Enqueued: n}, nil
}

package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/sqsq"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

// ErrRefreshUnsupported reports a scheduled registry refresh, which needs a
// benchsync operation that lists the ready harbor benchmarks older than the
// schedule and re-syncs them; pkg/benchsync has none yet.
var ErrRefreshUnsupported = errors.New("scheduled registry refresh is not supported: pkg/benchsync has no operation that re-syncs ready benchmarks")

// SyncHandler is the registrysync function's handler. It serves two event
// sources: SQS batches of benchsync.SyncMessage bodies (benchmarks added or
// retried through the API) and the hourly EventBridge Scheduler event.
type SyncHandler struct {
	batch *sqsq.BatchHandler
	log   *slog.Logger
}

// NewRegistrySync returns the handler on the service.
func NewSyncHandler(svc *benchsync.Service, log *slog.Logger) *SyncHandler {
	sync := func(ctx context.Context, m queue.Message) error {
		msg, err := benchsync.DecodeSyncMessage(m.Body)
		if err != nil {
			return err
		}
		return svc.Sync(ctx, msg)
	}
	return &SyncHandler{batch: sqsq.NewBatchHandler(sync, log), log: log}
}

// Handle is the Lambda entry point; it answers an SQS batch with its
// partial batch response.
func (h *SyncHandler) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	if ev, ok := IsScheduled(raw); ok {
		h.log.ErrorContext(ctx, "scheduled refresh skipped", "event_id", ev.ID, "resources", ev.Resources, "err", ErrRefreshUnsupported)
		return nil, ErrRefreshUnsupported
	}
	var batch events.SQSEvent
	if err := json.Unmarshal(raw, &batch); err != nil || len(batch.Records) == 0 || batch.Records[0].EventSource != "aws:sqs" {
		return nil, fmt.Errorf("registrysync: the event is neither an SQS batch nor a scheduled event")
	}
	return h.batch.Handle(ctx, batch)
}

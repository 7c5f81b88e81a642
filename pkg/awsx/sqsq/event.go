package sqsq

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

// HandlerFunc processes one message of a batch. An error leaves the message
// on the queue to be delivered again (and dead-lettered after the queue's
// maximum receive count).
type HandlerFunc func(ctx context.Context, msg queue.Message) error

// BatchHandler adapts a per-message handler to the SQS event source: each
// record is handled independently and only the failed ones are reported
// (ReportBatchItemFailures must be enabled on the event source mapping).
type BatchHandler struct {
	handle HandlerFunc
	log    *slog.Logger
}

// NewBatchHandler returns a batch handler calling handle for each record.
func NewBatchHandler(handle HandlerFunc, log *slog.Logger) *BatchHandler {
	return &BatchHandler{handle: handle, log: log}
}

// Handle is the Lambda entry point.
func (h *BatchHandler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		msg := queue.Message{
			ID:           r.MessageId,
			Body:         []byte(r.Body),
			Receipt:      r.ReceiptHandle,
			ReceiveCount: atoi(r.Attributes["ApproximateReceiveCount"]),
			SentAt:       millis(r.Attributes["SentTimestamp"]),
		}
		if err := h.handle(ctx, msg); err != nil {
			h.log.ErrorContext(ctx, "message failed", "message_id", r.MessageId, "receive_count", msg.ReceiveCount, "err", err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < time.Second {
			// Out of time: report every unprocessed record so none is lost.
			for _, rest := range ev.Records[indexOf(ev.Records, r.MessageId)+1:] {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rest.MessageId})
			}
			break
		}
	}
	return resp, nil
}

func indexOf(records []events.SQSMessage, id string) int {
	for i, r := range records {
		if r.MessageId == id {
			return i
		}
	}
	return len(records)
}

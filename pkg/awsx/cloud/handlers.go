package cloud

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/dynamo"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/sqsq"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Body adapts a message-body handler (pipeline.Planner.HandlePlan and its
// siblings) to the SQS batch handler. Its error — also for an undecodable
// body or an unknown schema_version — leaves the message on the queue, and
// the queue's redrive policy moves it to the dead-letter queue after
// maxReceiveCount deliveries.
func Body(handle func(ctx context.Context, body []byte) error) sqsq.HandlerFunc {
	return func(ctx context.Context, m queue.Message) error { return handle(ctx, m.Body) }
}

// Completions returns the grader's message handler. A completions message
// is either an EventBridge "ECS Task State Change" event (the rule on the
// sandbox cluster targets the queue) or a JSON sandbox.Completion (sent by
// the dispatcher for a sandbox that failed to start, and by the watchdog
// for a lost one). An ECS event that is not about a stopped gauntlet
// sandbox is acknowledged and ignored.
func Completions(grade func(context.Context, sandbox.Completion) error, log *slog.Logger) sqsq.HandlerFunc {
	return func(ctx context.Context, m queue.Message) error {
		c, err := DecodeCompletion(m.Body)
		if errors.Is(err, ecssandbox.ErrNotSandbox) {
			log.DebugContext(ctx, "event ignored: not a stopped gauntlet sandbox", "message_id", m.ID, "reason", err.Error())
			return nil
		}
		if err != nil {
			return err
		}
		return grade(ctx, c)
	}
}

// DecodeCompletion decodes a completions-queue body: an EventBridge ECS
// event (recognised by its "detail-type") or a sandbox.Completion.
func DecodeCompletion(body []byte) (sandbox.Completion, error) {
	var probe struct {
		DetailType *string `json:"detail-type"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return sandbox.Completion{}, fmt.Errorf("decode completion: %v: %w", err, pipeline.ErrPoison)
	}
	if probe.DetailType == nil {
		return pipeline.DecodeCompletion(body)
	}
	var ev events.CloudWatchEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return sandbox.Completion{}, fmt.Errorf("decode eventbridge event: %v: %w", err, pipeline.ErrPoison)
	}
	return ecssandbox.CompletionFromEvent(ev)
}

// StreamHandler adapts Recompute to the DynamoDB stream event source.
type StreamHandler struct {
	recompute func(context.Context, []store.Change) error
	log       *slog.Logger
}

// NewStreamHandler returns the leaderboard function's handler.
func NewStreamHandler(recompute func(context.Context, []store.Change) error, log *slog.Logger) *StreamHandler {
	return &StreamHandler{recompute: recompute, log: log}
}

// Handle decodes the batch's records and recomputes from them. Recompute
// derives everything from stored state, so the batch is all-or-nothing: on
// an error the first record's sequence number is reported (the event
// source retries the whole batch, bisecting it when configured to). A
// record that does not decode is reported as the first failure, after the
// records before it were recomputed.
func (h *StreamHandler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var resp events.DynamoDBEventResponse
	changes := make([]store.Change, 0, len(ev.Records))
	failedAt := -1
	for i, r := range ev.Records {
		c, err := dynamo.ChangeFromEvent(r)
		if err != nil {
			h.log.ErrorContext(ctx, "stream record undecodable", "event_id", r.EventID, "sequence_number", r.Change.SequenceNumber, "err", err)
			failedAt = i
			break
		}
		changes = append(changes, c)
	}
	if len(changes) > 0 {
		if err := h.recompute(ctx, changes); err != nil {
			h.log.ErrorContext(ctx, "recompute failed", "records", len(changes), "err", err)
			failedAt = 0
		}
	}
	if failedAt >= 0 {
		resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[failedAt].Change.SequenceNumber}}
	}
	return resp, nil
}

// Scheduled adapts a periodic job (pipeline.Watchdog.Watch) to an
// EventBridge Scheduler (or scheduled rule) invocation.
func Scheduled(job func(context.Context) error, log *slog.Logger) func(context.Context, events.EventBridgeEvent) error {
	return func(ctx context.Context, ev events.EventBridgeEvent) error {
		if err := job(ctx); err != nil {
			log.ErrorContext(ctx, "scheduled job failed", "event_id", ev.ID, "resources", ev.Resources, "err", err)
			return err
		}
		return nil
	}
}

// IsScheduled reports whether a raw Lambda event is an EventBridge
// Scheduler notification or a scheduled-rule event, as opposed to, for
// example, an SQS batch delivered to the same function.
func IsScheduled(raw json.RawMessage) (events.EventBridgeEvent, bool) {
	var ev events.EventBridgeEvent
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&ev); err != nil {
		return ev, false
	}
	return ev, ev.DetailType == "Scheduled Event" && (ev.Source == "aws.scheduler" || ev.Source == "aws.events")
}

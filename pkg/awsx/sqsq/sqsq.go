// Package sqsq is the SQS adapter of the queue port.
//
// It is the SQS adapter of the queue port, and the SQS-event-source
// side of it: a batch handler that reports partial batch failures.
package sqsq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

// API is the part of the SQS client the queue uses.
type API interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Queue implements queue.Queue on one SQS queue. Dead-lettering is the
// queue's redrive policy (set by the CDK stack, or CreateQueue in tests).
type Queue struct {
	api API
	url string
}

var _ queue.Queue = (*Queue)(nil)

// New returns the adapter for the queue at url.
func New(api API, url string) *Queue { return &Queue{api: api, url: url} }

// SQS limits.
const (
	maxDelay      = 15 * time.Minute
	maxWait       = 20 * time.Second
	maxVisibility = 12 * time.Hour
	maxBody       = 256 * 1024
)

// seconds rounds a duration up to SQS's whole seconds.
func seconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32(math.Ceil(d.Seconds()))
}

// Send enqueues the messages in batches of ten.
func (q *Queue) Send(ctx context.Context, msgs ...queue.Outgoing) error {
	for start := 0; start < len(msgs); start += queue.MaxBatch {
		batch := msgs[start:min(start+queue.MaxBatch, len(msgs))]
		entries := make([]types.SendMessageBatchRequestEntry, len(batch))
		for i, m := range batch {
			switch {
			case !utf8.Valid(m.Body):
				return fmt.Errorf("send to %s: message %d is not UTF-8 text", q.url, start+i)
			case len(m.Body) > maxBody:
				return fmt.Errorf("send to %s: message %d is %d bytes, over SQS's %d", q.url, start+i, len(m.Body), maxBody)
			case m.Delay > maxDelay:
				return fmt.Errorf("send to %s: message %d delay %s is over 15 minutes", q.url, start+i, m.Delay)
			}
			entries[i] = types.SendMessageBatchRequestEntry{
				Id:           aws.String(strconv.Itoa(i)),
				MessageBody:  aws.String(string(m.Body)),
				DelaySeconds: seconds(m.Delay),
			}
		}
		out, err := q.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &q.url, Entries: entries})
		if err != nil {
			return fmt.Errorf("send %d messages to %s: %w", len(batch), q.url, err)
		}
		if len(out.Failed) > 0 {
			f := out.Failed[0]
			return fmt.Errorf("send to %s: %d of %d messages failed, first %s: %s", q.url, len(out.Failed), len(batch), aws.ToString(f.Code), aws.ToString(f.Message))
		}
	}
	return nil
}

// Receive long-polls for up to max messages (SQS returns at most ten per call).
func (q *Queue) Receive(ctx context.Context, max int, visibility, wait time.Duration) ([]queue.Message, error) {
	if max <= 0 {
		return nil, errors.New("receive: max must be at least 1")
	}
	out, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    &q.url,
		MaxNumberOfMessages:         int32(min(max, queue.MaxBatch)),
		VisibilityTimeout:           seconds(min(visibility, maxVisibility)),
		WaitTimeSeconds:             seconds(min(wait, maxWait)),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount, types.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.url, err)
	}
	msgs := make([]queue.Message, len(out.Messages))
	for i, m := range out.Messages {
		msgs[i] = queue.Message{
			ID:           aws.ToString(m.MessageId),
			Body:         []byte(aws.ToString(m.Body)),
			Receipt:      aws.ToString(m.ReceiptHandle),
			ReceiveCount: atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]),
			SentAt:       millis(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)]),
		}
	}
	return msgs, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func millis(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Delete acknowledges a delivery.
func (q *Queue) Delete(ctx context.Context, receipt string) error {
	if _, err := q.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &q.url, ReceiptHandle: &receipt}); err != nil {
		return fmt.Errorf("delete from %s: %w", q.url, err)
	}
	return nil
}

// ChangeVisibility hides a delivery for d from now.
func (q *Queue) ChangeVisibility(ctx context.Context, receipt string, d time.Duration) error {
	_, err := q.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: &q.url, ReceiptHandle: &receipt, VisibilityTimeout: seconds(min(d, maxVisibility)),
	})
	var notInflight *types.MessageNotInflight
	if errors.As(err, &notInflight) {
		// The delivery is stale (its visibility already ran out); as for
		// Delete, acting on a stale receipt changes nothing.
		return nil
	}
	if err != nil {
		return fmt.Errorf("change visibility on %s: %w", q.url, err)
	}
	return nil
}

// AdminAPI is the part of the SQS client CreateQueue uses.
type AdminAPI interface {
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, opts ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// CreateQueue creates name and, when maxReceives > 0, its dead-letter queue
// name-dlq with a redrive policy, returning both URLs. It is for tests and
// emulators; deployments get their queues from the CDK stack.
func CreateQueue(ctx context.Context, api AdminAPI, name string, maxReceives int) (url, dlqURL string, err error) {
	attrs := map[string]string{}
	if maxReceives > 0 {
		dlq, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
		if err != nil {
			return "", "", fmt.Errorf("create queue %s-dlq: %w", name, err)
		}
		dlqURL = aws.ToString(dlq.QueueUrl)
		got, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			return "", "", fmt.Errorf("queue arn of %s-dlq: %w", name, err)
		}
		attrs[string(types.QueueAttributeNameRedrivePolicy)] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`,
			got.Attributes[string(types.QueueAttributeNameQueueArn)], maxReceives)
	}
	out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), dlqURL, nil
}

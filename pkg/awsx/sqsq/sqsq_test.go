package sqsq_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/awstest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/sqsq"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/queue/queuetest"
)

func TestQueueContract(t *testing.T) {
	e := awstest.Start(t)
	client := e.SQSClient()
	queuetest.Run(t, func(t *testing.T, maxReceives int) (queue.Queue, queue.Queue) {
		url, dlqURL, err := sqsq.CreateQueue(context.Background(), client, awstest.Name("contract"), maxReceives)
		if err != nil {
			t.Fatal(err)
		}
		var dlq queue.Queue
		if dlqURL != "" {
			dlq = sqsq.New(client, dlqURL)
		}
		return sqsq.New(client, url), dlq
	})
}

func TestBatchHandlerReportsOnlyFailures(t *testing.T) {
	seen := map[string]int{}
	h := sqsq.NewBatchHandler(func(ctx context.Context, m queue.Message) error {
		seen[string(m.Body)] = m.ReceiveCount
		if string(m.Body) == "bad" {
			return errors.New("cannot handle")
		}
		return nil
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: "good", Attributes: map[string]string{"ApproximateReceiveCount": "1"}},
		{MessageId: "m2", Body: "bad", Attributes: map[string]string{"ApproximateReceiveCount": "3"}},
		{MessageId: "m3", Body: "also good", Attributes: map[string]string{"ApproximateReceiveCount": "1"}},
	}}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := []events.SQSBatchItemFailure{{ItemIdentifier: "m2"}}
	if diff := cmp.Diff(want, resp.BatchItemFailures); diff != "" {
		t.Errorf("BatchItemFailures (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"good": 1, "bad": 3, "also good": 1}, seen); diff != "" {
		t.Errorf("handled (-want +got):\n%s", diff)
	}
}

// Package queues provisions gauntlet's SQS work queues: each with its own
// dead-letter queue, a visibility timeout derived from its consumer's
// timeout, SQS-managed encryption, TLS-only access and an alarm on the
// dead-letter queue's depth.
package queues

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// VisibilityFactor is how many consumer timeouts a message stays invisible
// for; AWS recommends at least six for Lambda event sources.
const VisibilityFactor = 6

// Props configures one work queue.
type Props struct {
	// ConsumerTimeout is the timeout of the Lambda function that consumes the queue.
	ConsumerTimeout time.Duration
	// MaxReceiveCount is how many receives a message gets before it moves to
	// the dead-letter queue (default 5).
	MaxReceiveCount int
	// Retain keeps the queues when the stack is deleted.
	Retain bool
}

// Queue is a work queue with its dead-letter queue and the alarm on it.
type Queue struct {
	constructs.Construct
	Queue      awssqs.Queue
	DeadLetter *DeadLetter
}

// DeadLetter is a queue that collects failed messages or events, with an
// alarm that fires as soon as one arrives.
type DeadLetter struct {
	constructs.Construct
	Queue awssqs.Queue
	Alarm awscloudwatch.Alarm
}

// New creates a work queue and its dead-letter queue under scope.
func New(scope constructs.Construct, id string, props Props) (*Queue, error) {
	if props.ConsumerTimeout <= 0 {
		return nil, fmt.Errorf("queue %s: consumer timeout must be positive", id)
	}
	if props.MaxReceiveCount == 0 {
		props.MaxReceiveCount = 5
	}
	if props.MaxReceiveCount < 1 || props.MaxReceiveCount > 1000 {
		return nil, fmt.Errorf("queue %s: max receive count %d outside 1..1000", id, props.MaxReceiveCount)
	}
	visibility := VisibilityFactor * props.ConsumerTimeout
	if visibility > 12*time.Hour {
		return nil, fmt.Errorf("queue %s: visibility timeout %s exceeds SQS's 12 h", id, visibility)
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	dlq := NewDeadLetter(c, "DeadLetter", props.Retain)
	q := awssqs.NewQueue(c, jsii.String("Queue"), &awssqs.QueueProps{
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(visibility.Seconds())),
		RetentionPeriod:   awscdk.Duration_Days(jsii.Number(4)),
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           dlq.Queue,
			MaxReceiveCount: jsii.Number(float64(props.MaxReceiveCount)),
		},
		RemovalPolicy: removalPolicy(props.Retain),
	})
	return &Queue{Construct: c, Queue: q, DeadLetter: dlq}, nil
}

// NewDeadLetter creates a dead-letter queue (14-day retention) and an alarm
// on ApproximateNumberOfMessagesVisible > 0.
func NewDeadLetter(scope constructs.Construct, id string, retain bool) *DeadLetter {
	c := constructs.NewConstruct(scope, jsii.String(id))
	q := awssqs.NewQueue(c, jsii.String("Queue"), &awssqs.QueueProps{
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RemovalPolicy:   removalPolicy(retain),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(q, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SQS3"),
		Reason: jsii.String("This queue is itself a dead-letter destination (of a queue, an event source mapping, EventBridge, the Scheduler or asynchronous invocations); operators drain it after the alarm fires."),
	}}, jsii.Bool(false))
	alarm := q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
		Period:    awscdk.Duration_Minutes(jsii.Number(1)),
		Statistic: jsii.String("Maximum"),
	}).CreateAlarm(c, jsii.String("Alarm"), &awscloudwatch.CreateAlarmOptions{
		AlarmDescription:   jsii.String("Messages are waiting in a gauntlet dead-letter queue: inspect them, fix the cause, then redrive."),
		Threshold:          jsii.Number(0),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		EvaluationPeriods:  jsii.Number(1),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	return &DeadLetter{Construct: c, Queue: q, Alarm: alarm}
}

func removalPolicy(retain bool) awscdk.RemovalPolicy {
	if retain {
		return awscdk.RemovalPolicy_RETAIN
	}
	return awscdk.RemovalPolicy_DESTROY
}

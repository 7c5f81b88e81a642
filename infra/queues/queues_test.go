package queues_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/infratest"
	"github.com/gauntlet-bench/gauntlet/infra/queues"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

func TestNewRejects(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Bare"), nil)
	tests := []struct {
		name    string
		props   queues.Props
		wantErr string
	}{
		{"no consumer timeout", queues.Props{}, "consumer timeout must be positive"},
		{"visibility beyond 12 h", queues.Props{ConsumerTimeout: 3 * time.Hour}, "exceeds SQS's 12 h"},
		{"receive count too large", queues.Props{ConsumerTimeout: time.Minute, MaxReceiveCount: 5000}, "outside 1..1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := queues.New(stack, "Q", tt.props)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New(%+v) error = %v, want %q", tt.props, err, tt.wantErr)
			}
		})
	}
}

// TestQueue checks one work queue in a bare stack, cdk-nag included.
func TestQueue(t *testing.T) {
	defer infratest.Recover(t)
	app := awscdk.NewApp(nil)
	infratest.AddNag(app)
	stack := awscdk.NewStack(app, jsii.String("Bare"), nil)
	if _, err := queues.New(stack, "Work", queues.Props{ConsumerTimeout: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(2))
	dlq := assertions.NewCapture(nil)
	tmpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"VisibilityTimeout":      720, // 6 × 120 s
		"MessageRetentionPeriod": 4 * 24 * 3600,
		"SqsManagedSseEnabled":   true,
		"RedrivePolicy": map[string]any{
			"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{dlq, "Arn"}},
			"maxReceiveCount":     5,
		},
	})
	if !strings.HasPrefix(*dlq.AsString(), "WorkDeadLetter") {
		t.Errorf("dead-letter target = %s, want the WorkDeadLetter queue", *dlq.AsString())
	}
	tmpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "ApproximateNumberOfMessagesVisible",
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{*dlq.AsString(), "QueueName"}}}},
		"Threshold":  0,
	})
	for _, f := range infratest.NagFindings(stack) {
		t.Errorf("unsuppressed cdk-nag finding %s", f)
	}
}

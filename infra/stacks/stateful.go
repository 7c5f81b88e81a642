// Package stacks assembles one stage of gauntlet from the constructs in
// infra/: a stateful stack (table, queues, artifacts bucket, secrets and
// sandbox keys)
// that outlives redeployments, and a stateless stack (functions, their
// triggers and permissions, API, sandboxes, schedules, console) that
// references it.
package stacks

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/artifacts"
	"github.com/gauntlet-bench/gauntlet/infra/config"
	"github.com/gauntlet-bench/gauntlet/infra/queues"
	"github.com/gauntlet-bench/gauntlet/infra/sandboxkey"
	"github.com/gauntlet-bench/gauntlet/infra/secrets"
	"github.com/gauntlet-bench/gauntlet/infra/table"
	"github.com/gauntlet-bench/gauntlet/pkg/fnspec"
)

// Timeouts of the functions (from the function table, pkg/fnspec); the
// queues they consume derive their visibility timeouts from these.
var Timeouts = func() map[string]time.Duration {
	out := make(map[string]time.Duration, len(fnspec.Functions))
	for _, f := range fnspec.Functions {
		out[f.Name] = f.Timeout
	}
	return out
}()

// MaxReceives is how often each work queue delivers a message before it
// moves it to the queue's dead-letter queue.
var MaxReceives = map[fnspec.Port]int{
	fnspec.PlanQueue: 5,
	// The dispatcher returns a slot to the queue while its run is at its
	// concurrency limit, so slots get more receives before dead-lettering.
	fnspec.SlotsQueue:       20,
	fnspec.ResultsQueue:     5,
	fnspec.SyncQueue:        3,
	fnspec.CompletionsQueue: 5,
}

// Stateful is the stack of resources that hold data.
type Stateful struct {
	// Stack is the CloudFormation stack the constructs are in; a field, not
	// embedded, so the stack's own API is not also Stateful's.
	Stack   awscdk.Stack
	Table   *table.Table
	Plan    *queues.Queue
	Slots   *queues.Queue
	Results *queues.Queue
	Sync    *queues.Queue
	// Completions carries stopped-sandbox events (from EventBridge) and
	// launch or loss completions (from the dispatcher and the watchdog) to the grader.
	Completions *queues.Queue
	// StreamFailures receives the leaderboard's stream batches that failed every retry.
	StreamFailures *queues.DeadLetter
	Artifacts      *artifacts.Artifacts
	Secrets        *secrets.Store
	// SandboxKey wraps the per-launch data keys of sealed sandbox secrets.
	SandboxKey *sandboxkey.Key
}

// queue returns the stack's queue of port q (nil for a port that is no queue).
func (s *Stateful) queue(q fnspec.Port) *queues.Queue {
	return map[fnspec.Port]*queues.Queue{
		fnspec.PlanQueue: s.Plan, fnspec.SlotsQueue: s.Slots, fnspec.CompletionsQueue: s.Completions,
		fnspec.ResultsQueue: s.Results, fnspec.SyncQueue: s.Sync,
	}[q]
}

// StackName returns "Gauntlet-<Stage>-<kind>" with the stage's first letter capitalised.
func StackName(stage, kind string) string {
	return fmt.Sprintf("Gauntlet-%s-%s", strings.ToUpper(stage[:1])+stage[1:], kind)
}

// NewStateful creates the stateful stack of cfg's stage.
func NewStateful(scope constructs.Construct, cfg config.Config, props *awscdk.StackProps) (*Stateful, error) {
	p := *props
	p.StackName = jsii.String(StackName(cfg.Stage, "Stateful"))
	p.Description = jsii.String(fmt.Sprintf("gauntlet %s: table, queues, artifacts bucket, secrets and sandbox keys", cfg.Stage))
	p.TerminationProtection = jsii.Bool(!cfg.IsDev())
	stack := awscdk.NewStack(scope, jsii.String(StackName(cfg.Stage, "Stateful")), &p)
	retain := !cfg.IsDev()
	s := &Stateful{Stack: stack}
	s.Table = table.New(stack, "Data", table.Props{Retain: retain})
	var err error
	queue := func(id string, port fnspec.Port, maxReceives int) *queues.Queue {
		if err != nil {
			return nil
		}
		consumer, ok := fnspec.Consumer(port)
		if !ok {
			err = fmt.Errorf("queue %s: no function of the function table consumes it", port)
			return nil
		}
		var q *queues.Queue
		q, err = queues.New(stack, id, queues.Props{ConsumerTimeout: consumer.Timeout, MaxReceiveCount: maxReceives, Retain: retain})
		return q
	}
	s.Plan = queue("PlanQueue", fnspec.PlanQueue, MaxReceives[fnspec.PlanQueue])
	s.Slots = queue("SlotsQueue", fnspec.SlotsQueue, MaxReceives[fnspec.SlotsQueue])
	s.Results = queue("ResultsQueue", fnspec.ResultsQueue, MaxReceives[fnspec.ResultsQueue])
	s.Sync = queue("SyncQueue", fnspec.SyncQueue, MaxReceives[fnspec.SyncQueue])
	s.Completions = queue("CompletionsQueue", fnspec.CompletionsQueue, MaxReceives[fnspec.CompletionsQueue])
	if err != nil {
		return nil, err
	}
	allowSandboxEvents(s.Completions, StackName(cfg.Stage, "Stateless"))
	s.StreamFailures = queues.NewDeadLetter(stack, "LeaderboardStreamFailures", retain)
	s.Artifacts = artifacts.New(stack, "Artifacts", artifacts.Props{Retain: retain})
	s.Secrets = secrets.New(stack, "Secrets", secrets.Props{Stage: cfg.Stage, Retain: retain})
	s.SandboxKey = sandboxkey.New(stack, "SandboxKey", sandboxkey.Props{Stage: cfg.Stage, Retain: retain})
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{
		Value: s.Table.Table.TableName(), Description: jsii.String("GAUNTLET_TABLE"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("BucketName"), &awscdk.CfnOutputProps{
		Value: s.Artifacts.Bucket.BucketName(), Description: jsii.String("GAUNTLET_BUCKET"),
	})
	return s, nil
}

// allowSandboxEvents lets EventBridge rules of the stage's stateless stack
// deliver to q. The rule is named by prefix rather than referenced, so the
// stateful stack does not depend on the stateless one.
func allowSandboxEvents(q *queues.Queue, statelessStack string) {
	stack := awscdk.Stack_Of(q.Construct)
	q.Queue.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("SandboxStateChanges"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("events.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  &[]*string{q.Queue.QueueArn()},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
			"ArnLike": map[string]any{"aws:SourceArn": stack.FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("events"), Resource: jsii.String("rule"), ResourceName: jsii.String(statelessStack + "-*"),
			})},
		},
	}))
}

package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/gauntlet-bench/gauntlet/infra/config"
	"github.com/gauntlet-bench/gauntlet/infra/queues"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/dynamo"
	"github.com/gauntlet-bench/gauntlet/pkg/fnspec"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// grant gives each function exactly the permissions the function table
// says it uses: per port, read or write, blobs under their prefixes.
// Consuming a function's own source queue or stream comes with its event
// source.
func (s *Stateless) grant(st *Stateful) {
	for _, f := range fnspec.Functions {
		role := s.Functions[f.Name].Role
		switch f.Access(fnspec.Table) {
		case fnspec.ReadWrite, fnspec.Write:
			st.Table.GrantReadWrite(role)
		case fnspec.Read:
			st.Table.GrantRead(role)
		}
		for _, q := range fnspec.Queues {
			if f.Access(q)&fnspec.Write != 0 {
				st.queue(q).Queue.GrantSendMessages(role)
			}
		}
		if p := f.Prefixes(fnspec.Read); len(p) > 0 {
			st.Artifacts.GrantGet(role, p...)
		}
		if p := f.Prefixes(fnspec.Write); len(p) > 0 {
			st.Artifacts.GrantPut(role, p...)
		}
		if a := f.Access(fnspec.Secrets); a&fnspec.Write != 0 {
			st.Secrets.GrantManage(role)
		}
		if a := f.Access(fnspec.Secrets); a&fnspec.Read != 0 {
			st.Secrets.GrantRead(role)
		}
		switch f.Access(fnspec.Sandboxes) {
		case fnspec.ReadWrite, fnspec.Write:
			s.Sandbox.GrantLaunch(role)
		case fnspec.Read:
			s.Sandbox.GrantWatch(role)
		}
		if f.Access(fnspec.SandboxKey) != 0 {
			st.SandboxKey.GrantGenerate(role) // seals each launch's secrets
		}
		if f.Reads(fnspec.Images) {
			// Pinning task images: resolve through ECR, build in CodeBuild
			// (contexts and build logs go under builds/, a blob prefix of
			// the function's table row).
			s.Sandbox.GrantResolve(role)
			s.Sandbox.GrantBuild(role)
		}
	}
	// The sandbox task role's one permission: unwrapping its launch's data key.
	st.SandboxKey.GrantDecrypt(s.Sandbox.TaskRole)
}

// grantHostedKey lets the sandbox execution role read the secret holding
// the hosted endpoint's key: ECS reads it at task start to inject it into
// the runner's environment (container secrets). Neither the task role nor
// any function may read it.
func (s *Stateless) grantHostedKey(cfg config.Config) {
	if cfg.HostedKeySecretARN == "" {
		return
	}
	secret := awssecretsmanager.Secret_FromSecretCompleteArn(s.Stack, jsii.String("HostedKeySecret"), jsii.String(cfg.HostedKeySecretARN))
	secret.GrantRead(s.Sandbox.ExecutionRole, nil)
}

// sqsSource consumes a queue with partial batch responses and a concurrency cap.
func sqsSource(q *queues.Queue, batch, maxConcurrency int) awslambda.IEventSource {
	return awslambdaeventsources.NewSqsEventSource(q.Queue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(float64(batch)),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(float64(maxConcurrency)),
	})
}

// trigger connects each function to what invokes it.
func (s *Stateless) trigger(cfg config.Config, st *Stateful) error {
	fn := func(name string) awslambda.Function { return s.Functions[name].Function }
	fn(fnspec.Planner.Name).AddEventSource(sqsSource(st.Plan, 1, 5))
	fn(fnspec.Dispatcher.Name).AddEventSource(sqsSource(st.Slots, 10, cfg.DispatcherConcurrency))
	fn(fnspec.Ingester.Name).AddEventSource(sqsSource(st.Results, 10, 10))
	fn(fnspec.RegistrySync.Name).AddEventSource(sqsSource(st.Sync, 1, 2))
	fn(fnspec.Grader.Name).AddEventSource(sqsSource(st.Completions, 10, 10))
	fn(fnspec.Leaderboard.Name).AddEventSource(awslambdaeventsources.NewDynamoEventSource(st.Table.Table, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(100),
		MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(5)),
		BisectBatchOnError:      jsii.Bool(true),
		RetryAttempts:           jsii.Number(5),
		MaxRecordAge:            awscdk.Duration_Days(jsii.Number(1)),
		ReportBatchItemFailures: jsii.Bool(true),
		ParallelizationFactor:   jsii.Number(1),
		OnFailure:               awslambdaeventsources.NewSqsDlq(st.StreamFailures.Queue),
		Filters:                 recomputeFilters(),
	}))

	// Asynchronous invocations (EventBridge, Scheduler) retry twice and then
	// land in the event-failures queue.
	for _, f := range fnspec.Functions {
		if !f.Asynchronous() {
			continue
		}
		fn(f.Name).ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
			RetryAttempts: jsii.Number(2),
			MaxEventAge:   awscdk.Duration_Hours(jsii.Number(6)),
			OnFailure:     awslambdadestinations.NewSqsDestination(s.EventFailures.Queue),
		})
	}
	awsevents.NewRule(s.Stack, jsii.String("SandboxStopped"), &awsevents.RuleProps{
		Description: jsii.String("A gauntlet sandbox task stopped: queue it for the grader"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.ecs"),
			DetailType: jsii.Strings("ECS Task State Change"),
			Detail: &map[string]any{
				"clusterArn": []*string{s.Sandbox.Cluster.ClusterArn()},
				"lastStatus": []string{"STOPPED"},
			},
		},
		// The queue is imported by ARN so that the target adds no policy to
		// the stateful stack; that stack's queue policy admits this stack's rules.
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewSqsQueue(
			awssqs.Queue_FromQueueArn(s.Stack, jsii.String("CompletionsTarget"), st.Completions.Queue.QueueArn()),
			&awseventstargets.SqsQueueProps{
				RetryAttempts:   jsii.Number(8),
				MaxEventAge:     awscdk.Duration_Hours(jsii.Number(6)),
				DeadLetterQueue: s.EventFailures.Queue,
			})},
	})
	schedule := func(id, expression, description string, target awslambda.Function, retries int) {
		role := awsiam.NewRole(s.Stack, jsii.String(id+"Role"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), nil),
			Description: jsii.String(description + " (EventBridge Scheduler)"),
		})
		awsscheduler.NewSchedule(s.Stack, jsii.String(id), &awsscheduler.ScheduleProps{
			Description: jsii.String(description),
			Schedule:    awsscheduler.ScheduleExpression_Expression(jsii.String(expression), nil),
			Target: awsschedulertargets.NewLambdaInvoke(target, &awsschedulertargets.ScheduleTargetBaseProps{
				Role:            role,
				RetryAttempts:   jsii.Number(float64(retries)),
				MaxEventAge:     awscdk.Duration_Hours(jsii.Number(1)),
				DeadLetterQueue: s.EventFailures.Queue,
			}),
		})
		cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String("CDK's invoke grant also names the function's versions and aliases (<function ARN>:*); the role can invoke only this one function."),
			AppliesTo: &[]any{&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::<[A-Za-z0-9]+\.Arn>:\*$/`)}},
		}}, jsii.Bool(true))
	}
	schedule("RegistrySyncSchedule", cfg.SyncSchedule, "gauntlet: sync benchmark registries", fn(fnspec.RegistrySync.Name), 2)
	// A missed watchdog tick is covered by the next one a minute later.
	schedule("WatchdogSchedule", cfg.WatchdogSchedule, "gauntlet: stop overdue sandboxes, re-queue stuck slots", fn(fnspec.Watchdog.Name), 0)
	return nil
}

// recomputeFilters passes the leaderboard function only the stream records
// the recompute reads (changes to runs and attempt results); the table's
// other writes — slots, logs, counters, stored boards and metrics — would
// otherwise invoke it for nothing.
func recomputeFilters() *[]*map[string]any {
	var filters []*map[string]any
	for _, f := range dynamo.LambdaStreamFilters(records.DescribedChanges()) {
		filters = append(filters, awslambda.FilterCriteria_Filter(&f))
	}
	return &filters
}

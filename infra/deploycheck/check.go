package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	infracfg "github.com/gauntlet-bench/gauntlet/infra/config"
	"github.com/gauntlet-bench/gauntlet/infra/stacks"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/dynamo"
	"github.com/gauntlet-bench/gauntlet/pkg/fnspec"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

type options struct {
	stage, cdkOut                         string
	runnerImage, agentsImage              string
	consoleOrigin, jwtIssuer, jwtAudience string
}

// checker runs the checks and counts them; a failed check is printed and
// the run goes on, so one run reports every fault.
type checker struct {
	o             options
	cfn           *cloudformation.Client
	ddb           *dynamodb.Client
	sqs           *sqs.Client
	lambda        *lambda.Client
	ecs           *ecs.Client
	ecr           *ecr.Client
	kms           *kms.Client
	s3            *s3.Client
	total, failed int
	// notes are what the API did not show (an emulator without a model):
	// neither passed nor failed, printed for the record.
	notes int

	// resources are each stack's physical ids by logical id.
	resources map[string]map[string]string
	// env is each function's deployed environment, by function name.
	env map[string]map[string]string
	// arns are the deployed functions' names by function name.
	names map[string]string
}

func newChecker(cfg aws.Config, o options) *checker {
	return &checker{o: o,
		cfn: cloudformation.NewFromConfig(cfg), ddb: dynamodb.NewFromConfig(cfg), sqs: sqs.NewFromConfig(cfg),
		lambda: lambda.NewFromConfig(cfg), ecs: ecs.NewFromConfig(cfg), ecr: ecr.NewFromConfig(cfg), kms: kms.NewFromConfig(cfg),
		s3:        s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
		resources: map[string]map[string]string{}, env: map[string]map[string]string{}, names: map[string]string{}}
}

// check records one check: err nil passes.
func (c *checker) check(what string, err error) bool {
	c.total++
	if err != nil {
		c.failed++
		fmt.Printf("FAIL %s: %v\n", what, err)
		return false
	}
	fmt.Printf("ok   %s\n", what)
	return true
}

// note records what could not be checked and why.
func (c *checker) note(format string, args ...any) {
	c.notes++
	fmt.Printf("note %s\n", fmt.Sprintf(format, args...))
}

func (c *checker) run(ctx context.Context) {
	for _, kind := range []string{"Stateful", "Stateless"} {
		c.stack(ctx, stacks.StackName(c.o.stage, kind))
	}
	c.functions(ctx)
	stream := c.table(ctx)
	c.queues(ctx)
	c.mappings(ctx, stream)
	c.sandbox(ctx)
}

// template reads a stack's synthesized template from the cloud assembly.
func (c *checker) template(stack string) (map[string]any, error) {
	data, err := os.ReadFile(filepath.Join(c.o.cdkOut, stack+".template.json"))
	if err != nil {
		return nil, err
	}
	var t map[string]any
	return t, json.Unmarshal(data, &t)
}

// stack: the stack is complete, and so is every resource of its template.
func (c *checker) stack(ctx context.Context, name string) {
	out, err := c.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err == nil && len(out.Stacks) != 1 {
		err = fmt.Errorf("%d stacks", len(out.Stacks))
	}
	if err == nil && !strings.HasSuffix(string(out.Stacks[0].StackStatus), "_COMPLETE") || err == nil && strings.Contains(string(out.Stacks[0].StackStatus), "ROLLBACK") {
		err = fmt.Errorf("status %s", out.Stacks[0].StackStatus)
	}
	if !c.check("stack "+name+" complete", err) {
		return
	}
	physical := map[string]string{}
	var incomplete []string
	listed, unnamed := 0, 0
	p := cloudformation.NewListStackResourcesPaginator(c.cfn, &cloudformation.ListStackResourcesInput{StackName: aws.String(name)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if !c.check("list resources of "+name, err) {
			return
		}
		for _, r := range page.StackResourceSummaries {
			listed++
			if aws.ToString(r.LogicalResourceId) == "" {
				unnamed++ // moto's entry for a resource type it does not model
			}
			physical[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
			if s := string(r.ResourceStatus); s != "CREATE_COMPLETE" && s != "UPDATE_COMPLETE" {
				incomplete = append(incomplete, aws.ToString(r.LogicalResourceId)+" "+s)
			}
		}
	}
	c.resources[name] = physical
	t, err := c.template(name)
	var missing []string
	unmodeled := map[string]int{}
	if err == nil {
		resources := t["Resources"].(map[string]any)
		for id, r := range resources {
			if _, ok := physical[id]; !ok {
				missing = append(missing, id)
				unmodeled[r.(map[string]any)["Type"].(string)]++
			}
		}
		slices.Sort(missing)
		switch {
		case len(incomplete) > 0:
			err = fmt.Errorf("not complete: %v", incomplete)
		case listed != len(resources):
			err = fmt.Errorf("%d resources listed, the template has %d", listed, len(resources))
		case len(missing) != unnamed:
			err = fmt.Errorf("resources of the template not in the stack: %v", missing)
		}
	}
	if c.check(fmt.Sprintf("every resource of %s CREATE_COMPLETE (%d)", name, listed), err) && unnamed > 0 {
		c.note("%s: %d of them are listed without a logical id or type: the emulator has no model of %v", name, unnamed, unmodeled)
	}
}

// statelessTemplate returns the stateless stack's template resources.
func (c *checker) statelessResources() map[string]any {
	t, err := c.template(stacks.StackName(c.o.stage, "Stateless"))
	if err != nil {
		return nil
	}
	return t["Resources"].(map[string]any)
}

// functionID is the logical id of a function's AWS::Lambda::Function.
func functionID(resources map[string]any, name string) string {
	prefix := strings.ToUpper(name[:1]) + name[1:] + "Function"
	for id, r := range resources {
		if r.(map[string]any)["Type"] == "AWS::Lambda::Function" && strings.HasPrefix(id, prefix) && !strings.Contains(id[len(prefix):], "Function") {
			return id
		}
	}
	return ""
}

// functions: each function exists with exactly its template's variables,
// none of them empty.
func (c *checker) functions(ctx context.Context) {
	resources := c.statelessResources()
	deployed := c.resources[stacks.StackName(c.o.stage, "Stateless")]
	for _, f := range fnspec.Functions {
		id := functionID(resources, f.Name)
		name := deployed[id]
		out, err := c.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
		if !c.check(fmt.Sprintf("function %s (%s) exists", f.Name, name), err) {
			continue
		}
		c.names[f.Name] = name
		got := map[string]string{}
		if out.Environment != nil {
			got = out.Environment.Variables
		}
		c.env[f.Name] = got
		props := resources[id].(map[string]any)["Properties"].(map[string]any)
		var want []string
		if e, ok := props["Environment"].(map[string]any); ok {
			for k := range e["Variables"].(map[string]any) {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		var have, empty []string
		for k, v := range got {
			have = append(have, k)
			// moto renders a reference to a resource it does not model as "None".
			if v == "" || strings.Contains(v, "None") {
				empty = append(empty, k)
			}
		}
		slices.Sort(have)
		var err2 error
		switch {
		case !slices.Equal(have, want):
			err2 = fmt.Errorf("variables %v, want the template's %v", have, want)
		case len(empty) > 0:
			err2 = fmt.Errorf("variables without a value: %v", empty)
		case got["GAUNTLET_STAGE"] != c.o.stage:
			err2 = fmt.Errorf("GAUNTLET_STAGE = %q", got["GAUNTLET_STAGE"])
		}
		c.check(fmt.Sprintf("function %s environment (%d variables)", f.Name, len(have)), err2)
	}
	c.pointers(ctx)
}

// pointers: what the functions' variables name exists.
func (c *checker) pointers(ctx context.Context) {
	seen := map[string]bool{}
	for _, f := range fnspec.Functions {
		for k, v := range c.env[f.Name] {
			key := k + "=" + v
			if seen[key] {
				continue
			}
			seen[key] = true
			var err error
			switch {
			case strings.HasSuffix(k, "_QUEUE_URL"):
				_, err = c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(v)})
			case k == "GAUNTLET_TABLE":
				_, err = c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(v)})
			case k == "GAUNTLET_BUCKET":
				_, err = c.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(v)})
			case k == "GAUNTLET_SECRETS_KMS_KEY" || k == "GAUNTLET_SANDBOX_KMS_KEY":
				// ListKeys, not DescribeKey: moto 5.2.1 answers 500 to
				// every call that checks the policy of a key created by
				// CloudFormation (it keeps the policy as an object).
				err = c.keyListed(ctx, v)
			case k == "GAUNTLET_CLUSTER":
				var out *ecs.DescribeClustersOutput
				if out, err = c.ecs.DescribeClusters(ctx, &ecs.DescribeClustersInput{Clusters: []string{v}}); err == nil && (len(out.Clusters) != 1 || aws.ToString(out.Clusters[0].Status) != "ACTIVE") {
					err = fmt.Errorf("cluster %s not active: %+v", v, out.Failures)
				}
			case k == "GAUNTLET_TASK_IMAGES_REPOSITORY":
				_, err = c.ecr.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{v}})
			case k == "GAUNTLET_RUNNER_IMAGE" && c.o.runnerImage != "":
				err = equal(v, c.o.runnerImage)
			case k == "GAUNTLET_SANDBOX_AGENTS_IMAGE" && c.o.agentsImage != "":
				err = equal(v, c.o.agentsImage)
			case k == "GAUNTLET_CONSOLE_ORIGIN" && c.o.consoleOrigin != "":
				err = equal(v, c.o.consoleOrigin)
			case k == "GAUNTLET_JWT_ISSUER" && c.o.jwtIssuer != "":
				err = equal(v, c.o.jwtIssuer)
			case k == "GAUNTLET_JWT_AUDIENCE" && c.o.jwtAudience != "":
				err = equal(v, c.o.jwtAudience)
			default:
				continue
			}
			c.check(fmt.Sprintf("%s names what exists (%s)", k, v), err)
		}
	}
}

// keyListed reports whether the key ARN is among the account's keys.
func (c *checker) keyListed(ctx context.Context, arn string) error {
	p := kms.NewListKeysPaginator(c.kms, &kms.ListKeysInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, k := range page.Keys {
			if aws.ToString(k.KeyArn) == arn {
				return nil
			}
		}
	}
	return fmt.Errorf("no key %s", arn)
}

func equal(got, want string) error {
	if got != want {
		return fmt.Errorf("%q, want %q", got, want)
	}
	return nil
}

// table: the table the functions name, keyed pk/sk, with its stream of new
// and old images; returns the stream's ARN.
func (c *checker) table(ctx context.Context) string {
	name := c.env[fnspec.Leaderboard.Name]["GAUNTLET_TABLE"]
	out, err := c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if !c.check("table "+name, err) {
		return ""
	}
	t := out.Table
	var keys []string
	for _, k := range t.KeySchema {
		keys = append(keys, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
	}
	err = equal(strings.Join(keys, ","), "pk:HASH,sk:RANGE")
	c.check("table key schema", err)
	s := t.StreamSpecification
	switch {
	case s == nil || !aws.ToBool(s.StreamEnabled):
		err = fmt.Errorf("no stream")
	case s.StreamViewType != "NEW_AND_OLD_IMAGES":
		err = fmt.Errorf("stream view %s, want NEW_AND_OLD_IMAGES", s.StreamViewType)
	case aws.ToString(t.LatestStreamArn) == "":
		err = fmt.Errorf("no stream ARN")
	default:
		err = nil
	}
	c.check("table stream (new and old images)", err)
	return aws.ToString(t.LatestStreamArn)
}

// queueURL is a queue's URL as the functions that write to it have it.
func (c *checker) queueURL(q fnspec.Port) string {
	for _, f := range fnspec.Functions {
		if u := c.env[f.Name]["GAUNTLET_"+strings.ToUpper(string(q))+"_QUEUE_URL"]; u != "" {
			return u
		}
	}
	return ""
}

func (c *checker) queueARN(ctx context.Context, url string) (string, map[string]string, error) {
	out, err := c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		return "", nil, err
	}
	return out.Attributes["QueueArn"], out.Attributes, nil
}

// queues: each work queue redrives to a dead-letter queue that exists,
// after its number of receives.
func (c *checker) queues(ctx context.Context) {
	for _, q := range fnspec.Queues {
		url := c.queueURL(q)
		_, attrs, err := c.queueARN(ctx, url)
		if !c.check(fmt.Sprintf("queue %s (%s)", q, url), err) {
			continue
		}
		var redrive struct {
			DeadLetterTargetArn string `json:"deadLetterTargetArn"`
			MaxReceiveCount     any    `json:"maxReceiveCount"`
		}
		err = json.Unmarshal([]byte(attrs["RedrivePolicy"]), &redrive)
		if err == nil {
			err = equal(fmt.Sprint(redrive.MaxReceiveCount), fmt.Sprint(stacks.MaxReceives[q]))
		}
		if err == nil {
			dlq := redrive.DeadLetterTargetArn[strings.LastIndex(redrive.DeadLetterTargetArn, ":")+1:]
			_, err = c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(dlq)})
		}
		c.check(fmt.Sprintf("queue %s dead-letters to %s after %d receives", q, redrive.DeadLetterTargetArn, stacks.MaxReceives[q]), err)
	}
}

// mappings: each queue's consumer is mapped to it with partial batch
// failures, and the leaderboard to the table's stream with the recompute
// filter, bisection, retries and its failure queue.
func (c *checker) mappings(ctx context.Context, stream string) {
	byFunction := map[string][]lambdaMapping{}
	p := lambda.NewListEventSourceMappingsPaginator(c.lambda, &lambda.ListEventSourceMappingsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if !c.check("list event-source mappings", err) {
			return
		}
		for _, m := range page.EventSourceMappings {
			name := aws.ToString(m.FunctionArn)
			name = name[strings.LastIndex(name, ":")+1:]
			byFunction[name] = append(byFunction[name], m)
		}
	}
	for _, q := range fnspec.Queues {
		consumer, _ := fnspec.Consumer(q)
		arn, _, err := c.queueARN(ctx, c.queueURL(q))
		if err == nil {
			err = oneMapping(byFunction[c.names[consumer.Name]], arn, func(m lambdaMapping) error {
				if !slices.Contains(m.FunctionResponseTypes, "ReportBatchItemFailures") {
					return fmt.Errorf("no partial batch failures")
				}
				if q == fnspec.SlotsQueue && (m.ScalingConfig == nil || aws.ToInt32(m.ScalingConfig.MaximumConcurrency) != int32(infracfg.Defaults().DispatcherConcurrency)) {
					return fmt.Errorf("scaling %+v, want maximum concurrency %d", m.ScalingConfig, infracfg.Defaults().DispatcherConcurrency)
				}
				return nil
			})
		}
		c.check(fmt.Sprintf("%s consumes the %s queue", consumer.Name, q), err)
	}
	failures, _, failuresErr := c.queueARN(ctx, c.statefulQueueURL("LeaderboardStreamFailuresQueue"))
	err := oneMapping(byFunction[c.names[fnspec.Leaderboard.Name]], stream, func(m lambdaMapping) error {
		var got []map[string]any
		if m.FilterCriteria != nil {
			for _, f := range m.FilterCriteria.Filters {
				var pattern map[string]any
				if err := json.Unmarshal([]byte(aws.ToString(f.Pattern)), &pattern); err != nil {
					return fmt.Errorf("filter %q: %w", aws.ToString(f.Pattern), err)
				}
				got = append(got, pattern)
			}
		}
		sortKeys, prefixes := records.DescribedChanges()
		want := dynamo.LambdaStreamFilters(sortKeys, prefixes)
		var dest string
		if m.DestinationConfig != nil && m.DestinationConfig.OnFailure != nil {
			dest = aws.ToString(m.DestinationConfig.OnFailure.Destination)
		}
		switch {
		case !reflect.DeepEqual(normalize(got), normalize(want)):
			return fmt.Errorf("filters %v, want %v", got, want)
		case string(m.StartingPosition) != "TRIM_HORIZON":
			return fmt.Errorf("starting position %s", m.StartingPosition)
		case !aws.ToBool(m.BisectBatchOnFunctionError):
			return fmt.Errorf("no bisection on error")
		case aws.ToInt32(m.MaximumRetryAttempts) != 5:
			return fmt.Errorf("retries %d, want 5", aws.ToInt32(m.MaximumRetryAttempts))
		case failuresErr != nil:
			return fmt.Errorf("stream failures queue: %w", failuresErr)
		case dest != failures:
			return fmt.Errorf("failures go to %q, want %s", dest, failures)
		}
		return nil
	})
	c.check("leaderboard consumes the table's stream (recompute filter, bisection, 5 retries, failure queue)", err)
}

// statefulQueueURL is the URL of a stateful-stack queue by logical id prefix.
func (c *checker) statefulQueueURL(prefix string) string {
	for id, physical := range c.resources[stacks.StackName(c.o.stage, "Stateful")] {
		if strings.HasPrefix(id, prefix) && strings.HasPrefix(physical, "http") {
			return physical
		}
	}
	return ""
}

// normalize makes filter patterns comparable whatever their JSON numbers and orders.
func normalize(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

// sandbox: the base task definition of the sandbox family runs the runner
// image on Fargate with the roles and log group the functions name.
func (c *checker) sandbox(ctx context.Context) {
	env := c.env[fnspec.Dispatcher.Name]
	family := env["GAUNTLET_SANDBOX_TASK_FAMILY"]
	out, err := c.ecs.DescribeTaskDefinition(ctx, &ecs.DescribeTaskDefinitionInput{TaskDefinition: aws.String(family)})
	if !c.check("sandbox task definition "+family, err) {
		return
	}
	td := out.TaskDefinition
	var runner *string
	var logGroup string
	for _, ctr := range td.ContainerDefinitions {
		if aws.ToString(ctr.Name) == "runner" {
			runner = ctr.Image
			if ctr.LogConfiguration != nil {
				logGroup = ctr.LogConfiguration.Options["awslogs-group"]
			}
		}
	}
	switch {
	case runner == nil:
		err = fmt.Errorf("no runner container")
	case aws.ToString(runner) != env["GAUNTLET_RUNNER_IMAGE"]:
		err = fmt.Errorf("runner image %s, the functions name %s", aws.ToString(runner), env["GAUNTLET_RUNNER_IMAGE"])
	case logGroup != env["GAUNTLET_SANDBOX_LOG_GROUP"]:
		err = fmt.Errorf("runner logs to %q, the functions name %q", logGroup, env["GAUNTLET_SANDBOX_LOG_GROUP"])
	case aws.ToString(td.Memory) != "2048":
		err = fmt.Errorf("memory %s, want 2048", aws.ToString(td.Memory))
	}
	c.check("sandbox task definition: the runner image and log group the functions name, 2 GB", err)
	// Each of these is checked when the API returns it; moto 5.2.1 keeps
	// only the family, containers, volumes and memory of a task definition
	// CloudFormation creates.
	var compat []string
	for _, x := range td.RequiresCompatibilities {
		compat = append(compat, string(x))
	}
	var cpuArch string
	if td.RuntimePlatform != nil {
		cpuArch = string(td.RuntimePlatform.CpuArchitecture)
	}
	for _, f := range []struct{ what, got, want string }{
		{"requires compatibilities", strings.Join(compat, ","), "FARGATE"},
		{"network mode", string(td.NetworkMode), "awsvpc"},
		{"cpu", aws.ToString(td.Cpu), "1024"},
		{"cpu architecture", cpuArch, "X86_64"},
		{"task role", aws.ToString(td.TaskRoleArn), env["GAUNTLET_SANDBOX_TASK_ROLE_ARN"]},
		{"execution role", aws.ToString(td.ExecutionRoleArn), env["GAUNTLET_SANDBOX_EXECUTION_ROLE_ARN"]},
	} {
		if f.got == "" || f.what == "network mode" && f.got == "bridge" && td.Cpu == nil {
			c.note("sandbox task definition: %s not returned by the API (want %s)", f.what, f.want)
			continue
		}
		c.check("sandbox task definition "+f.what+" "+f.want, equal(f.got, f.want))
	}
}

type (
	lambdaMapping = lambdatypes.EventSourceMappingConfiguration
)

// oneMapping finds the one mapping of source among ms and applies check.
func oneMapping(ms []lambdaMapping, source string, check func(lambdaMapping) error) error {
	var found []lambdaMapping
	for _, m := range ms {
		if aws.ToString(m.EventSourceArn) == source {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		var sources []string
		for _, m := range ms {
			sources = append(sources, aws.ToString(m.EventSourceArn))
		}
		return fmt.Errorf("%d mappings of %s (the function's: %v)", len(found), source, sources)
	}
	if s := aws.ToString(found[0].State); s != "" && s != "Enabled" && s != "Creating" {
		return fmt.Errorf("mapping state %s", s)
	}
	return check(found[0])
}

// Package functions provisions gauntlet's Lambda functions the same way:
// arm64 on provided.al2023 from the bootstrap that `make lambdas` builds, a
// role of their own that starts with nothing but its log group, X-Ray active
// tracing and a log group with retention.
package functions

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/gauntlet-bench/gauntlet/pkg/fnspec"
)

// Names are the functions under functions/, one asset directory each, in
// the order of the function table (pkg/fnspec).
var Names = func() []string {
	names := make([]string, len(fnspec.Functions))
	for i, f := range fnspec.Functions {
		names[i] = f.Name
	}
	return names
}()

// Props configures one function.
type Props struct {
	// Name is the function's directory under AssetRoot (and under functions/).
	Name string
	// AssetRoot holds <Name>/bootstrap (context lambdaAssets, default build/lambda).
	AssetRoot string
	// Description says what triggers the function and what it does.
	Description string
	// Timeout is the invocation timeout.
	Timeout time.Duration
	// MemoryMB is the memory size (default 256).
	MemoryMB int
	// Environment holds the function's variables; values may be tokens.
	Environment map[string]*string
	// LogRetention applies to the function's log group.
	LogRetention awslogs.RetentionDays
	// ReservedConcurrency, when positive, reserves (and caps) concurrent executions.
	ReservedConcurrency int
}

// Function is a Lambda function with its role and log group.
type Function struct {
	constructs.Construct
	Function awslambda.Function
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
}

// ErrMissingAsset reports a function whose bootstrap has not been built.
var ErrMissingAsset = errors.New("lambda asset missing: run `make lambdas` first (or point context lambdaAssets at the built assets)")

// CheckAssets reports every function in names whose bootstrap is missing under root.
func CheckAssets(root string, names []string) error {
	var errs []error
	for _, name := range names {
		path := filepath.Join(root, name, "bootstrap")
		info, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			errs = append(errs, fmt.Errorf("%s: %w", path, ErrMissingAsset))
		case err != nil:
			errs = append(errs, fmt.Errorf("check lambda asset %s: %w", path, err))
		case info.IsDir():
			errs = append(errs, fmt.Errorf("%s is a directory, want the function binary: %w", path, ErrMissingAsset))
		}
	}
	return errors.Join(errs...)
}

// New creates the function under scope; it fails when the bootstrap is missing.
func New(scope constructs.Construct, id string, props Props) (*Function, error) {
	if err := CheckAssets(props.AssetRoot, []string{props.Name}); err != nil {
		return nil, err
	}
	if props.Timeout <= 0 || props.Timeout > 15*time.Minute {
		return nil, fmt.Errorf("function %s: timeout %s outside (0, 15m]", props.Name, props.Timeout)
	}
	if props.MemoryMB == 0 {
		props.MemoryMB = 256
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	logs := awslogs.NewLogGroup(c, jsii.String("Logs"), &awslogs.LogGroupProps{
		Retention:     props.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(c, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String(fmt.Sprintf("gauntlet %s function", props.Name)),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	fnProps := &awslambda.FunctionProps{
		Description:   jsii.String(props.Description),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(props.AssetRoot, props.Name)), nil),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(props.Timeout.Seconds())),
		MemorySize:    jsii.Number(float64(props.MemoryMB)),
		Role:          role,
		LogGroup:      logs,
		Tracing:       awslambda.Tracing_ACTIVE,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		Environment:   &props.Environment,
	}
	if props.ReservedConcurrency > 0 {
		fnProps.ReservedConcurrentExecutions = jsii.Number(float64(props.ReservedConcurrency))
	}
	fn := awslambda.NewFunction(c, jsii.String("Function"), fnProps)
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions (active tracing)."),
		AppliesTo: &[]any{"Resource::*"},
	}}, jsii.Bool(true))
	return &Function{Construct: c, Function: fn, Role: role, LogGroup: logs}, nil
}

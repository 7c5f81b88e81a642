package functions_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/infra/functions"
	"github.com/gauntlet-bench/gauntlet/infra/infratest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

func TestCheckAssets(t *testing.T) {
	root := t.TempDir()
	if err := infratest.PlaceholderAssets(root, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "planner", "bootstrap"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		names     []string
		wantErr   bool
		wantParts []string
	}{
		{name: "built", names: []string{"api"}},
		{name: "missing", names: []string{"api", "grader"}, wantErr: true, wantParts: []string{"grader/bootstrap", "make lambdas"}},
		{name: "directory instead of binary", names: []string{"planner"}, wantErr: true, wantParts: []string{"planner/bootstrap is a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := functions.CheckAssets(root, tt.names)
			if (err != nil) != tt.wantErr {
				t.Fatalf("CheckAssets(%v) error = %v, want error %v", tt.names, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, functions.ErrMissingAsset) {
				t.Errorf("CheckAssets(%v) error = %v, want ErrMissingAsset", tt.names, err)
			}
			for _, part := range tt.wantParts {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("CheckAssets(%v) error = %q, want it to mention %q", tt.names, err, part)
				}
			}
		})
	}
}

// TestFunction checks one function in a bare stack: its runtime, its role
// (nothing but its own log group and X-Ray) and cdk-nag.
func TestFunction(t *testing.T) {
	defer infratest.Recover(t)
	root := t.TempDir()
	if err := infratest.PlaceholderAssets(root, []string{"watchdog"}); err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(nil)
	infratest.AddNag(app)
	stack := awscdk.NewStack(app, jsii.String("Bare"), nil)
	_, err := functions.New(stack, "Watchdog", functions.Props{
		Name: "watchdog", AssetRoot: root, Description: "test", Timeout: 50 * time.Second,
		Environment:  map[string]*string{"GAUNTLET_STAGE": jsii.String("dev")},
		LogRetention: awslogs.RetentionDays_TWO_WEEKS, ReservedConcurrency: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := functions.New(stack, "Missing", functions.Props{Name: "grader", AssetRoot: root, Timeout: time.Second}); !errors.Is(err, functions.ErrMissingAsset) {
		t.Errorf("New(missing bootstrap) error = %v, want ErrMissingAsset", err)
	}
	if _, err := functions.New(stack, "Slow", functions.Props{Name: "watchdog", AssetRoot: root, Timeout: time.Hour}); err == nil {
		t.Error("New(timeout 1h) error = nil, want an error")
	}
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(1))
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Runtime":                      "provided.al2023",
		"Architectures":                []any{"arm64"},
		"Handler":                      "bootstrap",
		"MemorySize":                   256,
		"Timeout":                      50,
		"TracingConfig":                map[string]any{"Mode": "Active"},
		"ReservedConcurrentExecutions": 1,
		"Environment":                  map[string]any{"Variables": map[string]any{"GAUNTLET_STAGE": "dev"}},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"RetentionInDays": 14})
	tmpl.HasResourceProperties(jsii.String("AWS::IAM::Role"), map[string]any{"ManagedPolicyArns": assertions.Match_Absent()})
	got := infratest.Actions(infratest.RoleStatements(*tmpl.ToJSON(), "WatchdogRole"))
	want := []string{"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTelemetryRecords", "xray:PutTraceSegments"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("role actions (-want +got):\n%s", diff)
	}
	for _, f := range infratest.NagFindings(stack) {
		t.Errorf("unsuppressed cdk-nag finding %s", f)
	}
}

package table_test

import (
	"os"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/infratest"
	"github.com/gauntlet-bench/gauntlet/infra/table"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// TestRetainedTable: a non-dev stage keeps the table and protects it from deletion.
func TestRetainedTable(t *testing.T) {
	defer infratest.Recover(t)
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Bare"), nil)
	table.New(stack, "Data", table.Props{Retain: true})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1))
	tmpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"DeletionPolicy":      "Retain",
		"UpdateReplacePolicy": "Retain",
		"Properties": assertions.Match_ObjectLike(&map[string]any{
			"DeletionProtectionEnabled": true,
			"BillingMode":               "PAY_PER_REQUEST",
			"StreamSpecification":       map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
		}),
	})
}

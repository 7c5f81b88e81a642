// Package table provisions gauntlet's single DynamoDB table: the pk/sk key
// scheme with two overloaded global secondary indexes, a change stream for
// the leaderboard, a TTL attribute for expiring items and point-in-time recovery.
package table

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Attribute names of the key scheme; pkg/awsx/dynamo writes the same names.
const (
	PartitionKey = "pk"
	SortKey      = "sk"
	TTLAttribute = "expires_at"
)

// Index names a global secondary index and its key attributes.
type Index struct{ Name, PartitionKey, SortKey string }

// Indexes are the overloaded global secondary indexes of the data model.
var Indexes = []Index{
	{Name: "gsi1", PartitionKey: "gsi1pk", SortKey: "gsi1sk"},
	{Name: "gsi2", PartitionKey: "gsi2pk", SortKey: "gsi2sk"},
}

// Props configures the table.
type Props struct {
	// Retain keeps the table (and turns on deletion protection) when the
	// stack is deleted; every stage except dev sets it.
	Retain bool
}

// Table is the platform's DynamoDB table.
type Table struct {
	constructs.Construct
	// Table is the DynamoDB table; its stream carries NEW_AND_OLD_IMAGES.
	Table awsdynamodb.Table
}

// New creates the table under scope.
func New(scope constructs.Construct, id string, props Props) *Table {
	c := constructs.NewConstruct(scope, jsii.String(id))
	removal := awscdk.RemovalPolicy_DESTROY
	if props.Retain {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	t := awsdynamodb.NewTable(c, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(PartitionKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String(SortKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:          awsdynamodb.TableEncryption_AWS_MANAGED,
		Stream:              awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		TimeToLiveAttribute: jsii.String(TTLAttribute),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(props.Retain),
		RemovalPolicy:      removal,
	})
	for _, ix := range Indexes {
		t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(ix.Name),
			PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(ix.PartitionKey), Type: awsdynamodb.AttributeType_STRING},
			SortKey:        &awsdynamodb.Attribute{Name: jsii.String(ix.SortKey), Type: awsdynamodb.AttributeType_STRING},
			ProjectionType: awsdynamodb.ProjectionType_ALL,
		})
	}
	return &Table{Construct: c, Table: t}
}

// The DynamoDB actions of the table port (pkg/awsx/dynamo): items are read
// with GetItem and Query, written with PutItem, UpdateItem and DeleteItem,
// and transactions (TransactWriteItems) are authorized per operation, a
// condition check as ConditionCheckItem. Nothing scans, batches or
// describes the table, so CDK's GrantReadData/GrantReadWriteData (which add
// Scan, BatchGetItem, BatchWriteItem, DescribeTable and the stream reads)
// grant more than any function uses.
var (
	ReadActions  = []string{"dynamodb:GetItem", "dynamodb:Query"}
	WriteActions = []string{"dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
)

// GrantReadWrite lets role read and write items, in the table and its
// indexes: ReadActions and WriteActions.
func (t *Table) GrantReadWrite(role awsiam.IRole) {
	t.Table.Grant(role, *jsii.Strings(append(append([]string{}, ReadActions...), WriteActions...)...)...)
	suppressIndexes(role)
}

// GrantRead lets role read items, in the table and its indexes: ReadActions.
func (t *Table) GrantRead(role awsiam.IRole) {
	t.Table.Grant(role, *jsii.Strings(ReadActions...)...)
	suppressIndexes(role)
}

// suppressIndexes records why grants end in "/index/*" (cdk-nag AwsSolutions-IAM5).
func suppressIndexes(role awsiam.IRole) {
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("Queries use the table's own global secondary indexes (gsi1, gsi2); CDK's table grant names them as <table ARN>/index/*, which covers no other table."),
		AppliesTo: &[]any{&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::.*Table.*\/index\/\*$/`)}},
	}}, jsii.Bool(true))
}

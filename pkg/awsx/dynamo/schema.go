package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SchemaAPI is the part of the DynamoDB client CreateTable uses.
type SchemaAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// CreateTable creates the single table with the key schema, GSIs, stream and
// TTL that the CDK stack provisions (infra/ declares the same shape), waits
// until it is active and returns its stream ARN. It is for tests and for
// pointing gauntlet at an emulator such as LocalStack; deployments use CDK.
func CreateTable(ctx context.Context, api SchemaAPI, name string) (streamARN string, err error) {
	str := types.ScalarAttributeTypeS
	gsi := func(index, pk, sk string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{
			IndexName: aws.String(index),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}
	}
	_, err = api.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: str},
			{AttributeName: aws.String(attrSK), AttributeType: str},
			{AttributeName: aws.String(attrGSI1PK), AttributeType: str},
			{AttributeName: aws.String(attrGSI1SK), AttributeType: str},
			{AttributeName: aws.String(attrGSI2PK), AttributeType: str},
			{AttributeName: aws.String(attrGSI2SK), AttributeType: str},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{gsi("gsi1", attrGSI1PK, attrGSI1SK), gsi("gsi2", attrGSI2PK, attrGSI2SK)},
		StreamSpecification:    &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return "", fmt.Errorf("create table %s: %w", name, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return "", fmt.Errorf("describe table %s: %w", name, err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			streamARN = aws.ToString(out.Table.LatestStreamArn)
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("table %s not active after 2 minutes (status %s)", name, out.Table.TableStatus)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	_, err = api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attrExpiresAt), Enabled: aws.Bool(true)},
	})
	if err != nil && !errors.As(err, new(*types.ResourceInUseException)) {
		var ve interface{ ErrorCode() string }
		// Enabling TTL twice is a ValidationException ("already enabled"); anything else is real.
		if !errors.As(err, &ve) || ve.ErrorCode() != "ValidationException" {
			return "", fmt.Errorf("enable ttl on %s: %w", name, err)
		}
	}
	return streamARN, nil
}

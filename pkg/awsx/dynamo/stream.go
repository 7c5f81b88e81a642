package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// StreamsAPI is the part of the DynamoDB Streams client the reader uses.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// Stream reads a table's DynamoDB stream as store.Change records. In the
// cloud the Lambda event source does this job; Stream serves tests, tools
// and the cloud-shape end-to-end test. Its checkpoint is a JSON object of
// shard id → last sequence number read ("" once a closed shard is drained
// is marked with shardDone).
type Stream struct {
	api StreamsAPI
	arn string
}

// NewStream returns a reader of the stream with the given ARN.
func NewStream(api StreamsAPI, streamARN string) *Stream { return &Stream{api: api, arn: streamARN} }

const shardDone = "done"

// Read returns up to max changes after checkpoint, parents' shards before
// their children's, and the checkpoint after them.
func (s *Stream) Read(ctx context.Context, checkpoint string, max int) ([]store.Change, string, error) {
	pos := map[string]string{}
	if checkpoint != "" {
		if err := json.Unmarshal([]byte(checkpoint), &pos); err != nil {
			return nil, "", fmt.Errorf("read stream: checkpoint is not one this stream returned: %w", err)
		}
	}
	shards, err := s.shards(ctx)
	if err != nil {
		return nil, "", err
	}
	var changes []store.Change
	for _, shard := range shards {
		id := aws.ToString(shard.ShardId)
		if pos[id] == shardDone {
			continue
		}
		if parent := aws.ToString(shard.ParentShardId); parent != "" && pos[parent] != shardDone && known(shards, parent) {
			continue // children wait until their parent is drained
		}
		got, done, err := s.readShard(ctx, id, pos[id], max-len(changes))
		if err != nil {
			return nil, "", err
		}
		for _, c := range got {
			pos[id] = c.ID
		}
		if done {
			pos[id] = shardDone
		}
		changes = append(changes, got...)
		if len(changes) >= max {
			break
		}
	}
	next, err := json.Marshal(pos)
	if err != nil {
		return nil, "", fmt.Errorf("read stream: %w", err)
	}
	return changes, string(next), nil
}

func known(shards []stypes.Shard, id string) bool {
	for _, s := range shards {
		if aws.ToString(s.ShardId) == id {
			return true
		}
	}
	return false
}

func (s *Stream) shards(ctx context.Context) ([]stypes.Shard, error) {
	var shards []stypes.Shard
	var start *string
	for {
		out, err := s.api.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: &s.arn, ExclusiveStartShardId: start})
		if err != nil {
			return nil, fmt.Errorf("describe stream: %w", err)
		}
		shards = append(shards, out.StreamDescription.Shards...)
		start = out.StreamDescription.LastEvaluatedShardId
		if start == nil {
			break
		}
	}
	// Shard ids embed their creation time, so sorting by id orders parents first.
	sort.Slice(shards, func(i, j int) bool { return aws.ToString(shards[i].ShardId) < aws.ToString(shards[j].ShardId) })
	return shards, nil
}

// readShard reads up to max records of one shard after seq; done reports
// that the shard is closed and drained.
func (s *Stream) readShard(ctx context.Context, shard, after string, max int) ([]store.Change, bool, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: &s.arn, ShardId: &shard, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon}
	if after != "" {
		in.ShardIteratorType, in.SequenceNumber = stypes.ShardIteratorTypeAfterSequenceNumber, &after
	}
	it, err := s.api.GetShardIterator(ctx, in)
	if err != nil {
		return nil, false, fmt.Errorf("shard iterator %s: %w", shard, err)
	}
	iter := it.ShardIterator
	var changes []store.Change
	// An open shard may answer empty pages before its newest records; a few
	// reads settle it without spinning forever on an idle shard.
	for empty := 0; iter != nil && len(changes) < max && empty < 3; {
		out, err := s.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(int32(min(max-len(changes), 1000)))})
		if err != nil {
			return nil, false, fmt.Errorf("get records %s: %w", shard, err)
		}
		if len(out.Records) == 0 {
			empty++
		}
		for _, r := range out.Records {
			c, err := changeFromStream(r)
			if err != nil {
				return nil, false, err
			}
			changes = append(changes, c)
		}
		iter = out.NextShardIterator
	}
	return changes, iter == nil, nil
}

func changeFromStream(r stypes.Record) (store.Change, error) {
	c := store.Change{ID: aws.ToString(r.Dynamodb.SequenceNumber), Kind: store.ChangeKind(r.EventName)}
	if r.Dynamodb.ApproximateCreationDateTime != nil {
		c.At = *r.Dynamodb.ApproximateCreationDateTime
	}
	var err error
	if c.Old, err = imageFromStream(r.Dynamodb.OldImage); err != nil {
		return store.Change{}, fmt.Errorf("stream record %s old image: %w", c.ID, err)
	}
	if c.New, err = imageFromStream(r.Dynamodb.NewImage); err != nil {
		return store.Change{}, fmt.Errorf("stream record %s new image: %w", c.ID, err)
	}
	return c, nil
}

func imageFromStream(img map[string]stypes.AttributeValue) (*store.Item, error) {
	if len(img) == 0 {
		return nil, nil
	}
	av := make(map[string]types.AttributeValue, len(img))
	for name, v := range img {
		switch v := v.(type) {
		case *stypes.AttributeValueMemberS:
			av[name] = &types.AttributeValueMemberS{Value: v.Value}
		case *stypes.AttributeValueMemberN:
			av[name] = &types.AttributeValueMemberN{Value: v.Value}
		default:
			return nil, fmt.Errorf("attribute %s: unexpected type %T", name, v)
		}
	}
	item, err := decodeItem(av)
	return &item, err
}

// ChangeFromEvent decodes one record of a DynamoDB stream Lambda event.
func ChangeFromEvent(r events.DynamoDBEventRecord) (store.Change, error) {
	c := store.Change{
		ID:   r.Change.SequenceNumber,
		Kind: store.ChangeKind(r.EventName),
		At:   r.Change.ApproximateCreationDateTime.Time,
	}
	if c.ID == "" {
		return store.Change{}, errors.New("stream event record without a sequence number")
	}
	var err error
	if c.Old, err = imageFromEvent(r.Change.OldImage); err != nil {
		return store.Change{}, fmt.Errorf("stream event %s old image: %w", c.ID, err)
	}
	if c.New, err = imageFromEvent(r.Change.NewImage); err != nil {
		return store.Change{}, fmt.Errorf("stream event %s new image: %w", c.ID, err)
	}
	if c.At.IsZero() {
		c.At = time.Unix(0, 0).UTC()
	}
	return c, nil
}

func imageFromEvent(img map[string]events.DynamoDBAttributeValue) (*store.Item, error) {
	if len(img) == 0 {
		return nil, nil
	}
	av := make(map[string]types.AttributeValue, len(img))
	for name, v := range img {
		switch v.DataType() {
		case events.DataTypeString:
			av[name] = &types.AttributeValueMemberS{Value: v.String()}
		case events.DataTypeNumber:
			av[name] = &types.AttributeValueMemberN{Value: v.Number()}
		default:
			return nil, fmt.Errorf("attribute %s: unexpected type %v", name, v.DataType())
		}
	}
	item, err := decodeItem(av)
	return &item, err
}

package dynamo_test

import (
	"context"
	"sync"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/awstest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/dynamo"
	"github.com/gauntlet-bench/gauntlet/pkg/records/recordstest"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
	"github.com/gauntlet-bench/gauntlet/pkg/store/storetest"
)

var (
	shared     sync.Once
	sharedTbl  *dynamo.Table
	sharedStrm *dynamo.Stream
	sharedErr  error
)

// newTable creates one table (with its stream) in DynamoDB Local for the
// whole suite; the contract tests use unique key prefixes, so they share it.
func newTable(t *testing.T) (*dynamo.Table, *dynamo.Stream) {
	t.Helper()
	e := awstest.Start(t)
	shared.Do(func() {
		name := awstest.Name("gauntlet-contract")
		arn, err := dynamo.CreateTable(context.Background(), e.DynamoDBClient(), name)
		if err != nil {
			sharedErr = err
			return
		}
		sharedTbl = dynamo.New(e.DynamoDBClient(), name)
		sharedStrm = dynamo.NewStream(e.StreamsClient(), arn)
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedTbl, sharedStrm
}

func TestTableContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Table {
		tbl, _ := newTable(t)
		return tbl
	})
}

// TestRecordsContract runs the records repositories' contract suite
// (UpdateSync's transaction under concurrent writers) on DynamoDB Local.
func TestRecordsContract(t *testing.T) {
	recordstest.Run(t, func(t *testing.T) store.Table {
		tbl, _ := newTable(t)
		return tbl
	})
}

func TestStreamContract(t *testing.T) {
	storetest.RunStream(t, func(t *testing.T) (store.Table, store.Stream) {
		return newTable(t)
	})
}
